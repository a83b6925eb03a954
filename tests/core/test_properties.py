"""Property tests: any JSON arguments, cut into any fragments, for 1-6 calls
interleaved in any order, framed as OpenAI chat chunks in SSE and cut into any
byte-level writes, come out exactly as sent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.streaming import CHARS, OBJECTS, TEXT, cut, writes
from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.events import CallParsed, FinishSeen, StreamEvent
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

# -- JSON arguments -------------------------------------------------------------

# How a provider serialises arguments: escaped (surrogate pairs for emoji),
# raw UTF-8, compact, pretty-printed, or sends the empty string or only whitespace
# (both mean no arguments: `{}`).
ARG_STYLES = ["ascii", "unicode", "compact", "indent", "empty", "blank"]


@st.composite
def arguments(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    style = draw(st.sampled_from(ARG_STYLES))
    if style == "empty":
        return {}, ""
    if style == "blank":
        return {}, draw(st.text(" \t\r\n", min_size=1, max_size=4))
    obj = draw(OBJECTS)
    if style == "ascii":
        return obj, json.dumps(obj, ensure_ascii=True)
    if style == "unicode":
        return obj, json.dumps(obj, ensure_ascii=False)
    if style == "compact":
        return obj, json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return obj, json.dumps(obj, ensure_ascii=False, indent=1)


# -- the stream ----------------------------------------------------------------


@dataclass
class Call:
    index: int
    call_id: str
    name: str
    obj: dict[str, Any]
    raw: str
    wire: list[str]  # the argument fragments as sent, in order (may contain "")


@dataclass
class Scenario:
    calls: list[Call]
    text: str
    pieces: list[bytes]


def fragment(call: Call, k: int, mode: str) -> dict[str, Any]:
    index = 0 if mode == "index0" else call.index
    if k == 0 or mode == "repeat":
        return {
            "index": index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.wire[k]},
        }
    return {"index": index, "function": {"arguments": call.wire[k]}}


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-p",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@st.composite
def scenarios(draw: st.DrawFn, mode: str = "plain", finish: bool = True) -> Scenario:
    """mode: "plain" (id/name on the first fragment only), "repeat" (on every
    fragment) or "index0" (every call sent as index 0, calls contiguous)."""
    n = draw(st.integers(1, 6))
    args = [draw(arguments()) for _ in range(n)]
    wires = [draw(cut(raw)) for _, raw in args]
    labels = [c for c in range(n) for _ in wires[c]]
    order = labels if mode == "index0" else draw(st.permutations(labels))
    # Calls are numbered by first appearance, so an interleaving never makes an
    # index gap; the fragments of each call stay in order.
    first_seen = list(dict.fromkeys(order))
    ids = draw(
        st.lists(st.text(CHARS, min_size=1, max_size=8), min_size=n, max_size=n, unique=True)
    )
    names = draw(st.lists(st.text(CHARS, min_size=1, max_size=8), min_size=n, max_size=n))
    calls = [
        Call(i, ids[i], names[i], args[label][0], args[label][1], wires[label])
        for i, label in enumerate(first_seen)
    ]
    call_of_label = {label: calls[i] for i, label in enumerate(first_seen)}

    # Pack consecutive fragments into chunks (a chunk may carry several).
    chunks: list[list[dict[str, Any]]] = []
    seen: dict[int, int] = {}
    for label in order:
        call = call_of_label[label]
        k = seen.get(call.index, 0)
        seen[call.index] = k + 1
        if chunks and draw(st.booleans()):
            chunks[-1].append(fragment(call, k, mode))
        else:
            chunks.append([fragment(call, k, mode)])

    text = draw(TEXT)
    payloads: list[dict[str, Any] | str] = [chat_chunk({"role": "assistant", "content": text})]
    payloads += [chat_chunk({"tool_calls": group}) for group in chunks]
    if finish:
        if draw(st.booleans()):
            payloads[-1]["choices"][0]["finish_reason"] = "tool_calls"  # type: ignore[index]
        else:
            payloads.append(chat_chunk({}, "tool_calls"))
        if draw(st.booleans()):
            payloads.append({"id": "chatcmpl-p", "choices": [], "usage": {"total_tokens": 9}})
        payloads.append("[DONE]")

    body = draw(sse_body(payloads))
    return Scenario(calls, text, draw(writes(body)))


@st.composite
def sse_body(draw: st.DrawFn, payloads: list[dict[str, Any] | str]) -> bytes:
    eol = draw(st.sampled_from(["\n", "\r", "\r\n"]))
    prefix = draw(st.sampled_from(["data: ", "data:"]))
    ascii_only = draw(st.booleans())
    pretty = draw(st.booleans())  # multi-line data: one `data:` line per JSON line
    out = ["\ufeff"] if draw(st.booleans()) else []
    for payload in payloads:
        if draw(st.integers(0, 4)) == 0:
            comment = draw(st.sampled_from([": keep-alive", ": OPENROUTER PROCESSING"]))
            out.append(comment + eol + eol)
        if isinstance(payload, str):
            data = payload
        else:
            data = json.dumps(payload, ensure_ascii=ascii_only, indent=1 if pretty else None)
        out.append("".join(prefix + line + eol for line in data.split("\n")) + eol)
    return "".join(out).encode()


def play(scenario: Scenario) -> tuple[StreamSession, list[StreamEvent]]:
    session = StreamSession("property")
    events = session.open(200, "text/event-stream")
    for i, piece in enumerate(scenario.pieces):
        events += session.feed(piece, float(i))
    events += session.close(float(len(scenario.pieces)))
    return session, events


def check_fragments_recorded(session: StreamSession, scenario: Scenario) -> None:
    """Checkpoint (a): the state's fragments are the wire fragments, in order,
    empty ones excluded, and concatenate to arguments_raw."""
    assert sorted(session.state.calls) == [call.index for call in scenario.calls]
    for call in scenario.calls:
        slot = session.state.calls[call.index]
        assert slot.fragments() == [text for text in call.wire if text]
        assert "".join(slot.fragments()) == slot.arguments_raw == call.raw


def check_parsed_after_finish(events: list[StreamEvent], n_calls: int) -> None:
    """Checkpoint (c): one FinishSeen, every CallParsed after it, each call once."""
    finishes = [i for i, e in enumerate(events) if isinstance(e, FinishSeen)]
    parsed = [i for i, e in enumerate(events) if isinstance(e, CallParsed)]
    assert len(finishes) == 1
    assert len(parsed) == n_calls
    assert all(i > finishes[0] for i in parsed)


def expected_calls(scenario: Scenario) -> list[dict[str, Any]]:
    return [
        {
            "index": call.index,
            "id": call.call_id,
            "item_id": None,
            "name": call.name,
            "arguments_raw": call.raw,
            "arguments": call.obj,
            "error": None,
            "error_position": None,
            "fragments": sum(1 for text in call.wire if text),
            "schema_errors": [],
        }
        for call in scenario.calls
    ]


# -- properties ---------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(scenarios())
def test_any_arguments_any_fragments_any_writes_reassemble_exactly(scenario: Scenario) -> None:
    session, events = play(scenario)
    report = build_report(session.state)
    assert report["tool_calls"] == expected_calls(scenario)
    assert report["status"] == "finished"
    assert report["finish_reason"] == "tool_calls"
    assert report["text"] == scenario.text
    assert report["anomalies"] == []  # checkpoint (b): id and name only on the first fragment
    assert report["trailing"] == ""
    assert exit_code(session.state) == 0
    check_fragments_recorded(session, scenario)
    check_parsed_after_finish(events, len(scenario.calls))


@settings(max_examples=100, deadline=None)
@given(scenarios(mode="repeat"))
def test_id_and_name_on_every_fragment_are_counted_repeats(scenario: Scenario) -> None:
    session, events = play(scenario)
    report = build_report(session.state)
    assert report["tool_calls"] == expected_calls(scenario)
    assert report["status"] == "finished"
    expected = sorted(
        (kind, call.index, len(call.wire) - 1)
        for call in scenario.calls
        if len(call.wire) > 1
        for kind in ("id-repeated", "name-repeated")
    )
    got = sorted((a["kind"], a["index"], a["count"]) for a in report["anomalies"])
    assert got == expected
    assert exit_code(session.state) == 0
    check_fragments_recorded(session, scenario)
    check_parsed_after_finish(events, len(scenario.calls))


@settings(max_examples=100, deadline=None)
@given(scenarios(mode="index0"))
def test_all_calls_on_index_zero_land_in_successive_lanes(scenario: Scenario) -> None:
    session, events = play(scenario)
    report = build_report(session.state)
    assert [call["index"] for call in report["tool_calls"]] == list(range(len(scenario.calls)))
    assert report["tool_calls"] == expected_calls(scenario)
    got = [(a["kind"], a["index"], a["count"]) for a in report["anomalies"]]
    assert got == [("index-reused", lane, 1) for lane in range(1, len(scenario.calls))]
    assert report["status"] == "finished"
    assert exit_code(session.state) == 0
    check_fragments_recorded(session, scenario)
    check_parsed_after_finish(events, len(scenario.calls))


@settings(max_examples=100, deadline=None)
@given(scenarios(finish=False))
def test_without_finish_or_done_the_stream_is_truncated_with_raw_kept(
    scenario: Scenario,
) -> None:
    session, events = play(scenario)
    report = build_report(session.state)
    assert report["status"] == "truncated"
    assert report["finish_reason"] is None
    assert [
        (c["index"], c["id"], c["name"], c["arguments_raw"], c["arguments"])
        for c in report["tool_calls"]
    ] == [(c.index, c.call_id, c.name, c.raw, None) for c in scenario.calls]
    assert all(c["error"] for c in report["tool_calls"])
    assert report["anomalies"] == []
    assert not any(isinstance(e, CallParsed | FinishSeen) for e in events)
    assert exit_code(session.state) == EXIT_INCOMPLETE
    check_fragments_recorded(session, scenario)
