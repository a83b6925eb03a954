"""The Vercel AI SDK UI message stream dialect driven through StreamSession: one rule
or anomaly kind per focused test on small hand-built streams, then a hypothesis
round-trip (any inputs, any deltas, interleaved, any byte-level writes)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import OBJECTS, Run, cut, serialise, writes
from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.dialects.detect import dialect_of_event
from toolstream_tui.core.events import DialectDetected, StreamEvent
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.sse import SSEEvent
from toolstream_tui.core.state import INTERRUPTED_CALL_ERROR, TRUNCATED_CALL_ERROR

AI_SDK = "ai-sdk-ui"
HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "cache-control": "no-cache"}
DONE = "[DONE]"

# -- chunk builders ---------------------------------------------------------------------


def chunk(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def text(part_id: str, *deltas: str, kind: str = "text") -> list[dict[str, Any]]:
    """A text (or reasoning) part: its start, deltas and end."""
    return [
        chunk(f"{kind}-start", id=part_id),
        *(chunk(f"{kind}-delta", id=part_id, delta=delta) for delta in deltas),
        chunk(f"{kind}-end", id=part_id),
    ]


def input_start(call_id: str, name: str = "get_weather", **fields: Any) -> dict[str, Any]:
    return chunk("tool-input-start", toolCallId=call_id, toolName=name, **fields)


def input_delta(call_id: str, delta: Any) -> dict[str, Any]:
    return chunk("tool-input-delta", toolCallId=call_id, inputTextDelta=delta)


def input_available(call_id: str, value: Any, name: str = "get_weather") -> dict[str, Any]:
    return chunk("tool-input-available", toolCallId=call_id, toolName=name, input=value)


def finish(reason: str | None = "tool-calls") -> dict[str, Any]:
    return chunk("finish") if reason is None else chunk("finish", finishReason=reason)


def wrapped(*chunks: dict[str, Any], reason: str | None = "tool-calls") -> list[Any]:
    """start and start-step, the chunks, finish-step, finish and [DONE]."""
    return [
        chunk("start", messageId="msg_1"),
        chunk("start-step"),
        *chunks,
        chunk("finish-step"),
        finish(reason),
        DONE,
    ]


# -- running a stream ----------------------------------------------------------------------


def play(
    pieces: list[bytes], headers: dict[str, str] | None = HEADERS, dialect: str | None = None
) -> Run:
    session = StreamSession("test", dialect=dialect)
    events: list[StreamEvent] = session.open(200, "text/event-stream", headers)
    for i, piece in enumerate(pieces):
        events += session.feed(piece, float(i))
    events += session.close(float(len(pieces)))
    return Run(session, events, build_report(session.state), exit_code(session.state))


def run_chunks(*items: dict[str, Any] | str, **options: Any) -> Run:
    return play([sse(*items)], **options)


def detected(r: Run) -> list[str]:
    return [e.name for e in r.events if isinstance(e, DialectDetected)]


def fragments(r: Run, lane: int) -> list[str]:
    return r.session.state.calls[lane].fragments()


TEXTBOOK = wrapped(
    *text("txt-0", "Checking ", "both."),
    input_start("call_w", "get_weather"),
    input_delta("call_w", '{"ci'),
    input_start("call_t", "get_time"),
    input_delta("call_t", '{"tz": "Eur'),
    input_delta("call_w", 'ty": "Par'),
    input_delta("call_t", 'ope/Paris"}'),
    input_delta("call_w", 'is"}'),
    input_available("call_w", {"city": "Paris"}),
    input_available("call_t", {"tz": "Europe/Paris"}, "get_time"),
)


# -- detection -------------------------------------------------------------------------------


def test_the_header_alone_tells_the_dialect_before_any_event() -> None:
    session = StreamSession("test")
    opened = session.open(200, "text/event-stream", {"X-Vercel-AI-UI-Message-Stream": "v1"})
    assert [e.name for e in opened if isinstance(e, DialectDetected)] == [AI_SDK]


def test_with_the_header_a_stream_of_untelling_chunks_is_read_as_ui_messages() -> None:
    items = [chunk("message-metadata", messageMetadata={"a": 1}), finish("stop"), DONE]
    r = run_chunks(*items)
    assert detected(r) == [AI_SDK]
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "stop"
    assert r.report["anomalies"] == []
    without = run_chunks(*items, headers=None)
    assert without.report["dialect"] == "openai-chat", "[DONE] alone tells chat completions"


@pytest.mark.parametrize(
    "first",
    [
        chunk("start"),
        chunk("start", messageId="m"),
        chunk("start-step"),
        chunk("finish-step"),
        chunk("text-start", id="0"),
        chunk("text-delta", id="0", delta="hi"),
        chunk("reasoning-start", id="r"),
        chunk("tool-input-start", toolCallId="c", toolName="f"),
        chunk("tool-input-available", toolCallId="c", toolName="f", input={}),
        chunk("error", errorText="boom"),
    ],
    ids=lambda first: first["type"],
)
def test_the_first_chunk_tells_the_dialect_without_the_header(first: dict[str, Any]) -> None:
    assert dialect_of_event(SSEEvent(1, "", json.dumps(first), None, None)) == AI_SDK
    r = run_chunks(first, *TEXTBOOK, headers=None)
    assert detected(r) == [AI_SDK]
    textbook = [c["arguments_raw"] for c in r.calls if c["id"] in ("call_w", "call_t")]
    assert textbook == ['{"city": "Paris"}', '{"tz": "Europe/Paris"}']


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "message-start", "id": "m", "delta": {}},  # Cohere
        {"type": "content-delta", "index": 0, "delta": {}},  # Cohere
        {"type": "tool-call-start", "index": 0, "delta": {}},  # Cohere
        {"type": "text-delta", "delta": "no id"},
        {"type": "finish"},
        {"type": "error", "error": {"type": "overloaded_error"}},  # Anthropic
        {"type": "error", "code": "rate_limit", "message": "m"},  # Responses
    ],
)
def test_chunks_other_protocols_send_are_not_claimed(payload: dict[str, Any]) -> None:
    assert dialect_of_event(SSEEvent(1, "", json.dumps(payload), None, None)) != AI_SDK


# -- the textbook stream ---------------------------------------------------------------------


@pytest.mark.parametrize("size", [None, 1, 7])
def test_textbook_stream_finishes_clean(size: int | None) -> None:
    body = sse(*TEXTBOOK)
    step = size or len(body)
    r = play([body[i : i + step] for i in range(0, len(body), step)])
    assert r.report["dialect"] == AI_SDK
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "tool-calls"
    assert r.report["text"] == "Checking both."
    assert r.report["anomalies"] == []
    assert r.code == 0
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "call_w", "get_weather", {"city": "Paris"}),
        (1, "call_t", "get_time", {"tz": "Europe/Paris"}),
    ]


def test_lanes_follow_the_order_calls_start_and_deltas_are_appended() -> None:
    r = run_chunks(*TEXTBOOK)
    assert fragments(r, 0) == ['{"ci', 'ty": "Par', 'is"}']
    assert fragments(r, 1) == ['{"tz": "Eur', 'ope/Paris"}']
    assert r.call(0)["arguments_raw"] == '{"city": "Paris"}', "equal values: the deltas stand"
    assert "arguments_streamed" not in r.call(0)


def test_reasoning_parts_go_to_the_reasoning_channel() -> None:
    r = run_chunks(
        *wrapped(*text("r0", "Think ", "hard.", kind="reasoning"), *text("t0", "Hi"), reason="stop")
    )
    assert r.report["reasoning"] == "Think hard."
    assert r.report["text"] == "Hi"
    assert r.report["anomalies"] == []


# -- the final input -------------------------------------------------------------------------


def test_a_final_input_that_differs_wins_and_the_mismatch_is_named() -> None:
    r = run_chunks(
        *wrapped(
            input_start("c"),
            input_delta("c", '{"city": "Ber'),
            input_delta("c", 'lin"}'),
            input_available("c", {"city": "Berlin, DE"}),
        )
    )
    call = r.call(0)
    assert call["arguments"] == {"city": "Berlin, DE"}
    assert call["arguments_raw"] == '{"city":"Berlin, DE"}'
    assert call["arguments_streamed"] == '{"city": "Berlin"}'
    mismatch = r.anomaly("done-mismatch")
    assert mismatch["index"] == 0
    assert (
        "tool-input-available differs from the joined deltas (compacted) at char 15"
        in (mismatch["detail"])
    )
    assert r.report["status"] == "finished"


@pytest.mark.parametrize(
    ("streamed", "final", "differs"),
    [
        ('{"n": 1.0}', {"n": 1}, False),
        ('{"a": 1, "b": 2}', {"b": 2, "a": 1}, False),
        ('{"n": 1}', {"n": True}, True),
        ('{"n": [1, 2]}', {"n": [1, 2, 3]}, True),
        ('{"n": 12345678901234567890}', {"n": 12345678901234567000}, True),
        ('{"city": "Par', {"city": "Paris"}, True),
    ],
)
def test_the_deltas_and_the_final_input_are_compared_as_values(
    streamed: str, final: Any, differs: bool
) -> None:
    r = run_chunks(
        *wrapped(input_start("c"), input_delta("c", streamed), input_available("c", final))
    )
    assert ("done-mismatch" in r.kinds) is differs
    assert r.call(0)["arguments"] == (final if differs else json.loads(streamed))


def test_an_empty_input_is_one_fragment_of_an_empty_object() -> None:
    r = run_chunks(*wrapped(input_start("c", "get_time"), input_available("c", {}, "get_time")))
    assert fragments(r, 0) == ["{}"]
    assert r.call(0)["arguments"] == {}
    assert r.report["anomalies"] == []


def test_an_input_without_start_or_deltas_is_one_fragment() -> None:
    r = run_chunks(*wrapped(input_available("c", {"city": "Oslo", "days": [1, 2]})))
    assert fragments(r, 0) == ['{"city":"Oslo","days":[1,2]}']
    assert (r.call(0)["id"], r.call(0)["name"]) == ("c", "get_weather")
    assert r.report["anomalies"] == []


def test_a_text_encoded_input_parses_to_its_string() -> None:
    r = run_chunks(
        *wrapped(
            input_start("c", "apply_patch", inputEncoding="text"),
            input_delta("c", "*** Begin"),
            input_delta("c", " Patch"),
            input_available("c", "*** Begin Patch", "apply_patch"),
        )
    )
    assert r.call(0)["arguments"] == "*** Begin Patch"
    assert r.call(0)["arguments_streamed"] == "*** Begin Patch"
    assert "done-mismatch" not in r.kinds


# -- tool input errors -------------------------------------------------------------------------


def test_a_tool_input_error_is_named_and_the_streamed_input_kept() -> None:
    error_text = "Model tried to call unavailable tool 'get_wether'."
    r = run_chunks(
        *wrapped(
            input_start("c", "get_wether"),
            input_delta("c", '{"city": "Oslo"}'),
            chunk(
                "tool-input-error",
                toolCallId="c",
                toolName="get_wether",
                input={"city": "Oslo"},
                errorText=error_text,
            ),
        )
    )
    error = r.anomaly("tool-input-error")
    assert (error["index"], error["detail"]) == (0, error_text)
    assert r.call(0)["arguments_raw"] == '{"city": "Oslo"}'
    assert r.call(0)["arguments"] == {"city": "Oslo"}


def test_a_tool_input_error_alone_keeps_the_text_the_model_sent() -> None:
    r = run_chunks(
        *wrapped(
            chunk(
                "tool-input-error",
                toolCallId="c",
                toolName="f",
                input='{"city": Oslo}',
                errorText="Invalid input for tool f: JSON parsing failed",
            )
        )
    )
    assert r.call(0)["arguments_raw"] == '{"city": Oslo}'
    assert r.call(0)["error"] is not None
    assert r.kinds == ["tool-input-error"]


# -- the end -----------------------------------------------------------------------------------


def test_a_stream_cut_mid_input_is_truncated_with_the_partial_input_kept() -> None:
    items = [chunk("start"), input_start("c"), input_delta("c", '{"city": "Na')]
    r = run_chunks(*items)
    assert r.report["status"] == "truncated"
    assert r.call(0)["arguments_raw"] == '{"city": "Na'
    assert r.call(0)["error"] == TRUNCATED_CALL_ERROR
    assert r.code == EXIT_INCOMPLETE


def test_an_error_chunk_fails_the_stream() -> None:
    items = [chunk("start"), input_start("c"), input_delta("c", '{"ci')]
    r = run_chunks(*items, chunk("error", errorText="Overloaded"), DONE)
    assert r.report["status"] == "error"
    assert r.report["error"] == "error in stream: Overloaded"
    assert r.kinds == ["error-event"], "[DONE] after an error needs no finish"
    assert r.call(0)["arguments_raw"] == '{"ci'
    assert r.call(0)["error"] == INTERRUPTED_CALL_ERROR
    assert r.code == 1


def test_done_after_the_finish_is_quiet() -> None:
    r = run_chunks(*wrapped(*text("t", "hi"), reason="stop"))
    assert r.report["anomalies"] == []
    assert r.report["finish_reason"] == "stop"


def test_a_finish_without_a_reason_still_finishes() -> None:
    r = run_chunks(*wrapped(*text("t", "hi"), reason=None))
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] is None
    assert r.report["anomalies"] == []


def test_done_without_a_finish_is_truncated() -> None:
    r = run_chunks(chunk("start"), input_start("c"), input_delta("c", "{}"), DONE)
    assert r.report["status"] == "truncated"
    assert r.kinds == ["finish-missing"]


def test_a_finish_without_done() -> None:
    r = run_chunks(*wrapped(*text("t", "hi"), reason="stop")[:-1])
    assert r.report["status"] == "finished"
    assert r.kinds == ["done-missing"]


def test_chunks_after_the_finish_and_after_done_are_named() -> None:
    r = run_chunks(*wrapped(*text("t", "hi"), reason="stop"), chunk("start-step"), DONE)
    assert r.kinds == ["data-after-done", "data-after-finish"]


def test_finish_tool_calls_without_any_call() -> None:
    r = run_chunks(*wrapped(*text("t", "hi"), reason="tool-calls"))
    assert r.kinds == ["finish-tools-without-calls"]


# -- anomalies -----------------------------------------------------------------------------------


def test_a_delta_for_a_call_never_started_gets_a_lane() -> None:
    r = run_chunks(*wrapped(input_delta("ghost", '{"a": 1}')))
    assert r.anomaly("delta-without-start")["index"] == 0
    assert (r.call(0)["id"], r.call(0)["arguments"]) == ("ghost", {"a": 1})


def test_a_text_delta_for_a_part_never_started_is_kept() -> None:
    r = run_chunks(*wrapped(chunk("text-delta", id="t", delta="hi"), reason="stop"))
    assert r.report["text"] == "hi"
    assert r.kinds == ["delta-without-start"]


def test_a_call_id_started_twice_takes_a_new_lane() -> None:
    r = run_chunks(
        *wrapped(
            input_start("c"),
            input_delta("c", '{"a": 1}'),
            input_start("c"),
            input_delta("c", '{"b": 2}'),
        )
    )
    assert r.anomaly("call-id-reused")["index"] == 1
    assert [c["arguments"] for c in r.calls] == [{"a": 1}, {"b": 2}]


def test_a_delta_after_the_input_and_a_changed_name_are_named() -> None:
    r = run_chunks(
        *wrapped(
            input_start("c", "f"),
            input_available("c", {"a": 1}, "g"),
            input_delta("c", "x"),
        )
    )
    assert r.call(0)["name"] == "f"
    assert {"name-changed", "delta-after-done"} <= set(r.kinds)


def test_a_delta_that_is_not_a_string_is_serialised() -> None:
    r = run_chunks(*wrapped(input_start("c"), input_delta("c", {"a": 1})))
    assert r.kinds == ["arguments-object"]
    assert r.call(0)["arguments"] == {"a": 1}


@pytest.mark.parametrize(
    ("extra", "kind"),
    [
        (chunk("reset-step"), "step-reset"),
        (chunk("abort", reason="user stopped"), "stream-aborted"),
        (chunk("tool-output-error", toolCallId="c", errorText="tool threw"), "tool-output-error"),
        (chunk("brand-new-thing"), "unknown-event"),
    ],
)
def test_other_chunks_that_are_named(extra: dict[str, Any], kind: str) -> None:
    r = run_chunks(*wrapped(input_start("c"), input_available("c", {}), extra))
    assert r.kinds == [kind]


def test_quiet_chunks_change_nothing() -> None:
    quiet = [
        chunk("data-weather", id="d", data={"t": 1}),
        chunk("source-url", sourceId="s", url="https://example.com"),
        chunk("message-metadata", messageMetadata={}),
        chunk("tool-output-available", toolCallId="c", output={"ok": True}),
        chunk("file", url="data:,", mediaType="text/plain"),
    ]
    r = run_chunks(*wrapped(input_start("c"), input_available("c", {}), *quiet))
    assert r.report["anomalies"] == []


def test_a_chunk_as_a_complete_json_body_is_read_as_a_stream_of_that_chunk() -> None:
    body = json.dumps(chunk("error", errorText="nope")).encode()
    session = StreamSession("test", dialect=AI_SDK)
    session.open(200, "application/json")
    session.feed(body, 0.0)
    session.close(1.0)
    report = build_report(session.state)
    assert (report["status"], report["events"]) == ("error", 1)
    assert [a["kind"] for a in report["anomalies"]] == ["content-type-not-sse", "error-event"]


# -- hypothesis: any inputs, any deltas, interleaved, any writes ---------------------------------


@st.composite
def ui_streams(draw: st.DrawFn) -> tuple[list[bytes], list[tuple[str, Any]]]:
    inputs = draw(st.lists(OBJECTS, min_size=1, max_size=3))
    pending: list[list[dict[str, Any]]] = []
    for number, value in enumerate(inputs):
        raw = serialise(value, draw(st.sampled_from(["ascii", "unicode", "compact", "indent"])))
        call_id = f"call_{number}"
        deltas = [input_delta(call_id, piece) for piece in draw(cut(raw)) if piece]
        pending.append([input_start(call_id), *deltas, input_available(call_id, value)])
    ordered: list[dict[str, Any]] = []
    while any(pending):  # interleave: any started call may go next, each in its own order
        choices = [queue for queue in pending if queue]
        ordered.append(draw(st.sampled_from(choices)).pop(0))
    body = sse(*wrapped(*ordered))
    starts = [item["toolCallId"] for item in ordered if item["type"] == "tool-input-start"]
    return draw(writes(body)), [(call_id, inputs[int(call_id[5:])]) for call_id in starts]


@settings(max_examples=150, deadline=None)
@given(ui_streams())
def test_any_inputs_any_deltas_any_writes_reassemble_exactly(
    stream: tuple[list[bytes], list[tuple[str, Any]]],
) -> None:
    pieces, calls = stream
    r = play(pieces)
    assert r.report["status"] == "finished"
    assert r.report["anomalies"] == []
    assert [(c["id"], c["arguments"]) for c in r.calls] == calls, "lanes in the order of start"
