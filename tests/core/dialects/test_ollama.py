"""The Ollama /api/chat dialect driven through StreamSession on NDJSON bodies: one
rule or anomaly kind per focused test, the framing's edges (CRLF, no final
newline, a line cut across reads), a non-streaming body, then a hypothesis
round-trip (any arguments, any text, any byte-level writes)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.streaming import OBJECTS, TEXT, Run, run, writes
from toolstream_tui.core import SSEEvent, StreamSession, build_report, exit_code
from toolstream_tui.core.dialects.detect import dialect_of_completion, dialect_of_payload
from toolstream_tui.core.dialects.ollama import OllamaDialect
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

NDJSON = "application/x-ndjson"

# -- line builders ----------------------------------------------------------------


def line(done: bool = False, reason: str | None = None, **message: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "llama3.2",
        "created_at": "2025-07-07T20:22:19.184789Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
    }
    if reason is not None:
        body["done_reason"] = reason
    return body


def done(reason: str | None = "stop") -> dict[str, Any]:
    return line(done=True, reason=reason)


def tool_call(
    name: str = "get_weather",
    args: Any = None,
    index: int | None = None,
    call_id: str | None = None,
) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "arguments": {} if args is None else args}
    if index is not None:
        function["index"] = index
    call: dict[str, Any] = {"function": function}
    if call_id is not None:
        call["id"] = call_id
    return call


def calls(*items: dict[str, Any]) -> dict[str, Any]:
    return line(tool_calls=list(items))


def ndjson(*lines: dict[str, Any] | str, eol: str = "\n", final_eol: bool = True) -> bytes:
    texts = [
        item if isinstance(item, str) else json.dumps(item, ensure_ascii=False) for item in lines
    ]
    return (eol.join(texts) + (eol if final_eol else "")).encode()


def run_lines(*lines: dict[str, Any] | str, **options: Any) -> Run:
    eol, final_eol = options.pop("eol", "\n"), options.pop("final_eol", True)
    options.setdefault("content_type", NDJSON)
    return run(ndjson(*lines, eol=eol, final_eol=final_eol), **options)


TEXTBOOK = [
    line(thinking="The user wants"),
    line(thinking=" the weather."),
    line(content="Let me "),
    line(content="check."),
    calls(tool_call("get_weather", {"city": "Tokyo"}, 0, "call_a")),
    calls(tool_call("get_time", {"tz": "Asia/Tokyo"}, 1, "call_b")),
    done(),
]


# -- the textbook stream ----------------------------------------------------------


@pytest.mark.parametrize("pieces", [None, 1, 9])
@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("final_eol", [True, False], ids=["final-newline", "no-final-newline"])
def test_textbook_stream_finishes_clean(pieces: int | None, eol: str, final_eol: bool) -> None:
    r = run_lines(*TEXTBOOK, pieces=pieces, eol=eol, final_eol=final_eol)
    assert r.report["dialect"] == "ollama"
    assert (r.report["status"], r.report["finish_reason"], r.code) == ("finished", "stop", 0)
    assert r.report["text"] == "Let me check."
    assert r.report["reasoning"] == "The user wants the weather."
    assert r.report["anomalies"] == []
    assert r.report["trailing"] == ""
    assert [
        (c["index"], c["id"], c["name"], c["arguments_raw"], c["fragments"]) for c in r.calls
    ] == [
        (0, "call_a", "get_weather", '{"city":"Tokyo"}', 1),
        (1, "call_b", "get_time", '{"tz":"Asia/Tokyo"}', 1),
    ]
    assert r.args() == [{"city": "Tokyo"}, {"tz": "Asia/Tokyo"}]


def test_a_line_cut_across_reads_is_one_event() -> None:
    body = ndjson(*TEXTBOOK)
    cut_at = body.index(b'"Tokyo"') + 3
    session = StreamSession("test")
    session.open(200, NDJSON)
    session.feed(body[:cut_at], 0.0)
    assert session.state.calls == {}, "half a line is not an event yet"
    session.feed(body[cut_at:], 1.0)
    session.close(2.0)
    assert build_report(session.state)["tool_calls"][0]["arguments"] == {"city": "Tokyo"}
    assert session.state.events == len(TEXTBOOK)


def test_a_body_without_content_type_is_sniffed_as_ndjson() -> None:
    r = run_lines(*TEXTBOOK, content_type="")
    assert (r.report["dialect"], r.report["status"]) == ("ollama", "finished")
    assert r.args() == [{"city": "Tokyo"}, {"tz": "Asia/Tokyo"}]


def test_blank_lines_between_objects_are_skipped() -> None:
    r = run(ndjson(*TEXTBOOK, eol="\n\n"), content_type=NDJSON)
    assert r.report["status"] == "finished"
    assert r.kinds == []


def test_calls_without_an_index_take_lanes_in_order_of_arrival() -> None:
    r = run_lines(
        calls(tool_call("a", {"n": 1}), tool_call("b", {"n": 2})), calls(tool_call("c")), done()
    )
    assert [(c["index"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "a", {"n": 1}),
        (1, "b", {"n": 2}),
        (2, "c", {}),
    ]


def test_empty_arguments_are_an_empty_object() -> None:
    r = run_lines(calls(tool_call("current_time", {})), done())
    assert (r.calls[0]["arguments_raw"], r.calls[0]["arguments"]) == ("{}", {})
    assert r.code == 0


def test_missing_arguments_are_an_empty_object_too() -> None:
    r = run_lines(calls({"function": {"name": "current_time"}}), done())
    assert (r.calls[0]["arguments_raw"], r.calls[0]["arguments"]) == ("", {})


def test_arguments_are_parsed_at_the_done_line_not_before() -> None:
    session = StreamSession("test")
    session.open(200, NDJSON)
    session.feed(ndjson(calls(tool_call(args={"a": 1}))), 0.0)
    assert not session.state.calls[0].parsed
    session.feed(ndjson(done()), 1.0)
    assert session.state.calls[0].parsed


@pytest.mark.parametrize("reason", ["length", "load", None])
def test_the_done_line_is_the_finish_whatever_its_reason(reason: str | None) -> None:
    r = run_lines(line(content="Hi"), done(reason))
    assert (r.report["status"], r.report["finish_reason"]) == ("finished", reason)
    assert r.kinds == []


def test_stop_after_tool_calls_is_no_anomaly() -> None:
    assert run_lines(calls(tool_call()), done("stop")).kinds == []


# -- truncation and errors ------------------------------------------------------------


def test_a_stream_without_a_done_line_is_truncated_and_keeps_its_calls() -> None:
    r = run_lines(line(content="Hi"), calls(tool_call(args={"q": "x"})))
    assert (r.report["status"], r.report["finish_reason"], r.code) == (
        "truncated",
        None,
        EXIT_INCOMPLETE,
    )
    assert r.report["text"] == "Hi"
    assert r.calls[0]["arguments_raw"] == '{"q":"x"}'
    assert (r.calls[0]["arguments"], r.calls[0]["error"]) == ({"q": "x"}, None), "came whole"


def test_a_line_cut_at_the_end_is_kept_and_noted() -> None:
    cut = '{"model":"llama3.2","message":{"role":"assis'
    r = run(ndjson(line(content="Hi")) + cut.encode(), content_type=NDJSON)
    assert (r.report["status"], r.report["events"]) == ("truncated", 1)
    assert r.report["text"] == "Hi"
    assert r.report["trailing"] == cut
    assert r.anomaly("unterminated-event")["event"] == 1


def test_a_last_line_without_its_newline_that_is_not_json_is_an_event() -> None:
    r = run_lines(line(content="Hi"), "not json", final_eol=False)
    assert (r.report["events"], r.report["trailing"]) == (2, "")
    assert "data-not-json" in r.kinds


def test_an_error_line_fails_the_stream() -> None:
    r = run_lines(
        line(content="Yes"), {"error": "an error was encountered while running the model"}
    )
    assert r.report["status"] == "error"
    assert r.report["error"] == "error in stream: an error was encountered while running the model"
    assert r.anomaly("error-event")["detail"] == "an error was encountered while running the model"
    assert r.report["text"] == "Yes"
    assert r.code == 1


def test_a_stream_that_is_only_an_error_line_is_ollamas() -> None:
    r = run_lines({"error": "model 'x' not found"})
    assert r.report["dialect"] == "ollama"
    assert r.report["status"] == "error"


def test_lines_after_the_done_line_are_reported() -> None:
    r = run_lines(done(), line(content="late"))
    assert r.anomaly("data-after-done")["detail"] == "line 2 arrived after the done line"
    assert r.report["text"] == "late"


def test_a_reused_index_takes_the_next_free_lane() -> None:
    r = run_lines(calls(tool_call("a", {}, 0)), calls(tool_call("b", {}, 0)), done())
    assert [(c["index"], c["name"]) for c in r.calls] == [(0, "a"), (1, "b")]
    assert r.anomaly("index-reused")["index"] == 1


def test_an_index_out_of_range_is_reported() -> None:
    r = run_lines(calls(tool_call("a", {}, -1)), done())
    assert r.calls[0]["index"] == 0
    assert "index-out-of-range" in r.kinds


def test_a_call_without_a_name_is_reported() -> None:
    r = run_lines(calls({"function": {"arguments": {"a": 1}}}), done())
    assert r.anomaly("name-missing")["index"] == 0
    assert r.args() == [{"a": 1}]


def test_arguments_sent_as_a_string_are_taken_as_their_text() -> None:
    r = run_lines(calls(tool_call(args='{"a": 1}')), done())
    assert r.calls[0]["arguments_raw"] == '{"a": 1}'
    assert r.args() == [{"a": 1}]
    assert r.anomaly("unexpected-shape")["detail"] == "arguments arrived as a string"


def test_arguments_that_are_not_an_object_are_named_once_parsed() -> None:
    r = run_lines(calls(tool_call(args=[1, 2])), done())
    assert r.calls[0]["arguments"] == [1, 2]
    assert "arguments-not-object" in r.kinds


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '{"done": false, "model": "m", "created_at": "t", "message": {"tool_calls": 5}}',
        '{"done": false, "model": "m", "created_at": "t", "message": {"tool_calls": [7]}}',
        '{"done": false, "model": "m", "created_at": "t", "message": {"content": 5}}',
        '{"done": false, "model": "m", "created_at": "t"}',
    ],
)
def test_odd_lines_never_raise(text: str) -> None:
    r = run_lines(line(content="a"), text, done())
    assert r.report["dialect"] == "ollama"
    assert r.report["status"] == "finished"
    assert r.kinds


# -- /api/generate and the non-streaming body --------------------------------------------


def test_generate_lines_are_read_as_text() -> None:
    generate = {
        "model": "m",
        "created_at": "2025-10-26T17:15:24Z",
        "response": "That",
        "done": False,
    }
    last = {**generate, "response": "!", "done": True, "done_reason": "stop"}
    r = run_lines(generate, {**generate, "thinking": "hm", "response": ""}, last)
    assert (r.report["text"], r.report["reasoning"]) == ("That!", "hm")
    assert r.report["status"] == "finished"


def test_a_non_streaming_body_is_read_whole() -> None:
    body = done("stop")
    body["message"]["content"] = "Sure."
    body["message"]["tool_calls"] = [tool_call("f", {"x": 1}, 0, "call_1")]
    assert dialect_of_completion(body) == "ollama"
    r = run(json.dumps(body).encode(), content_type="application/json; charset=utf-8")
    assert r.report["dialect"] == "ollama"
    assert (r.report["status"], r.report["finish_reason"]) == ("finished", "stop")
    assert r.report["text"] == "Sure."
    assert [(c["id"], c["name"], c["arguments"]) for c in r.calls] == [("call_1", "f", {"x": 1})]


def test_a_body_that_is_one_line_not_done_is_a_stream_cut_after_it() -> None:
    body = line(content="Hi")  # done: false: a whole response is always done
    r = run(json.dumps(body).encode(), content_type="application/json")
    assert (r.report["dialect"], r.report["status"], r.report["events"]) == (
        "ollama",
        "truncated",
        1,
    )
    assert r.report["text"] == "Hi"
    assert "content-type-not-sse" in r.kinds


# -- detection ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"error": {"message": "Rate limited", "type": "rate_limit"}},  # chat's error chunk
        {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}},  # Gemini's
        {"error": "x", "choices": []},
        {"done": True},
        {"done": "yes", "message": {}},
        {"model": "m", "created_at": "t"},
    ],
)
def test_shapes_that_are_not_ollamas_are_not_claimed(payload: dict[str, Any]) -> None:
    event = SSEEvent(1, "", json.dumps(payload), None, None)
    assert not OllamaDialect.claims_event(event, payload)


def test_every_line_of_the_textbook_stream_is_claimed() -> None:
    for payload in [*TEXTBOOK, {"error": "boom"}]:
        assert dialect_of_payload(payload) == "ollama"


# -- any inputs, any writes -----------------------------------------------------------------


@dataclass
class Scenario:
    arguments: list[dict[str, Any]]
    texts: list[str]
    pieces: list[bytes]


@st.composite
def ollama_streams(draw: st.DrawFn) -> Scenario:
    arguments = draw(st.lists(OBJECTS, max_size=3))
    texts = draw(st.lists(TEXT, max_size=4))
    lines = [line(content=text) for text in texts]
    lines += [
        calls(tool_call(f"tool_{i}", args, i, f"call_{i}")) for i, args in enumerate(arguments)
    ]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    body = ndjson(*lines, done(), eol=eol, final_eol=draw(st.booleans()))
    return Scenario(arguments, texts, draw(writes(body)))


@settings(max_examples=100, deadline=None)
@given(ollama_streams())
def test_any_inputs_any_writes_reassemble_exactly(scenario: Scenario) -> None:
    session = StreamSession("property")
    session.open(200, NDJSON)
    for i, piece in enumerate(scenario.pieces):
        session.feed(piece, float(i))
    session.close(float(len(scenario.pieces)))
    report = build_report(session.state)
    assert (report["dialect"], report["status"]) == ("ollama", "finished")
    assert report["text"] == "".join(scenario.texts)
    assert [(c["index"], c["id"], c["arguments"]) for c in report["tool_calls"]] == [
        (i, f"call_{i}", args) for i, args in enumerate(scenario.arguments)
    ]
    assert all(c["fragments"] == 1 for c in report["tool_calls"])
    assert report["anomalies"] == []
    assert exit_code(session.state) == 0
