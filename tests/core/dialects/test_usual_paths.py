"""The shortcuts a headless report takes give the report the general way gives:
Bedrock's usual delta (a string of tool input for an open tool block), and a
session that keeps no wire events handing each event straight to its dialect."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.core.dialects.test_bedrock import (
    EVENTSTREAM,
    ev,
    message_stop,
    metadata,
    start,
    stop,
    text,
    tool,
    tool_input,
)
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.dialects.bedrock import BedrockDialect

INDEX = st.integers(min_value=0, max_value=2)
INPUT = st.one_of(st.text(max_size=4), st.integers(), st.none(), st.just({"a": 1}))


def two_members(index: int, value: str) -> bytes:
    """A delta with tool input and text at once: not the usual one."""
    delta = {"toolUse": {"input": value}, "text": "x"}
    return ev("contentBlockDelta", contentBlockIndex=index, delta=delta)


def odd_index(index: Any) -> bytes:
    return ev("contentBlockDelta", contentBlockIndex=index, delta={"toolUse": {"input": "x"}})


FRAMES = st.lists(
    st.one_of(
        st.builds(tool, INDEX, st.sampled_from(["t1", None]), st.just("f")),
        st.builds(tool_input, INDEX, INPUT),
        st.builds(tool_input, INDEX, st.text(max_size=4)),
        st.builds(text, INDEX, st.text(max_size=4)),
        st.builds(stop, INDEX),
        st.builds(two_members, INDEX, st.text(max_size=3)),
        st.builds(odd_index, st.sampled_from(["0", 1.0, True, None, -1])),
        st.just(message_stop()),
        st.just(metadata()),
    ),
    max_size=12,
)


def report(frames: list[bytes], *, live: bool, content_type: str = EVENTSTREAM) -> dict[str, Any]:
    session = StreamSession("test", live=live)
    session.open(200, content_type)
    for number, frame in enumerate(frames):
        session.feed(frame, float(number))
    session.close(99.0)
    return build_report(session.state)


@settings(max_examples=150)
@given(FRAMES)
@example([start(), tool(0), tool_input(0, '{"a"'), stop(0), tool_input(0, ": 1}")])
@example([start(), tool(1), two_members(1, "{}"), tool_input(1, "{}"), message_stop()])
@example([start(), tool(0), odd_index(True), odd_index(0.0), tool_input(0, 5), stop(0)])
def test_the_usual_bedrock_delta_reads_as_the_general_path_reads_it(frames: list[bytes]) -> None:
    frames = [start(), *frames]
    short = report(frames, live=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BedrockDialect, "_took_tool_input", lambda self, payload: False)
        assert report(frames, live=False) == short


@settings(max_examples=100)
@given(FRAMES)
def test_a_report_without_wire_events_is_the_report_with_them(frames: list[bytes]) -> None:
    frames = [start(), *frames]
    assert report(frames, live=False) == report(frames, live=True)


SSE_EVENTS = st.lists(
    st.one_of(
        st.builds(
            lambda text: {
                "type": "content-delta",
                "delta": {"message": {"content": {"text": text}}},
            },
            st.text(max_size=4),
        ),
        st.just(
            {
                "type": "tool-call-start",
                "index": 0,
                "delta": {
                    "message": {
                        "tool_calls": {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": ""},
                        }
                    }
                },
            }
        ),
        st.builds(
            lambda part: {
                "type": "tool-call-delta",
                "index": 0,
                "delta": {"message": {"tool_calls": {"function": {"arguments": part}}}},
            },
            st.text(max_size=4),
        ),
        st.just({"type": "tool-call-end", "index": 0}),
        st.just({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}),
        st.just("not json"),
    ),
    max_size=10,
)


@settings(max_examples=100)
@given(SSE_EVENTS, st.booleans())
def test_an_sse_report_without_wire_events_is_the_report_with_them(
    events: list[Any], typed: bool
) -> None:
    frames = [
        (f"event: {event['type']}\n" if typed and isinstance(event, dict) else "").encode()
        + f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
        for event in [{"type": "message-start", "id": "m"}, *events]
    ]
    content_type = "text/event-stream"
    assert report(frames, live=False, content_type=content_type) == report(
        frames, live=True, content_type=content_type
    )
