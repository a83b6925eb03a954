"""The Gemini / Vertex AI dialect driven through StreamSession: one rule or anomaly
kind per focused test on small hand-built streams (SSE with `\\r\\n\\r\\n`, as
Gemini writes it, and the JSON array written without `alt=sse`), then hypothesis
round-trips: whole calls in any chunks, and Vertex partialArgs pieces of any
arguments, cut into any reads; and any JSON values in a response's places never
make the dialect raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import CHARS, OBJECTS, SCALARS, TEXT, Run, cut, run, writes
from toolstream_tui.core import SSEEvent, StreamSession, build_report
from toolstream_tui.core.dialects import gemini as gemini_module
from toolstream_tui.core.dialects.detect import dialect_of_completion, dialect_of_event
from toolstream_tui.core.dialects.gemini import (
    ArgumentTree,
    GeminiDialect,
    assembled_from_lines,
    parse_path,
    piece_of_line,
)
from toolstream_tui.core.dialects.gemini import piece_text as original_piece_text
from toolstream_tui.core.events import Channel, TextAppended
from toolstream_tui.core.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from toolstream_tui.core.state import TRUNCATED_CALL_ERROR
from toolstream_tui.views.lanes import lane_view

SIGNATURE = "c2lnbmF0dXJl"
ABSENT = object()

# -- payload builders -----------------------------------------------------------------


def text(said: str) -> dict[str, Any]:
    return {"text": said}


def thought(said: str) -> dict[str, Any]:
    return {"text": said, "thought": True}


def call(name: str, args: Any = ABSENT, **extra: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, **extra}
    if args is not ABSENT:
        function["args"] = args
    return {"functionCall": function}


def signed(part: dict[str, Any]) -> dict[str, Any]:
    return {**part, "thoughtSignature": SIGNATURE}


def chunk(*parts: dict[str, Any], finish: str | None = None, **candidate: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, **candidate}
    if finish is not None:
        body["finishReason"] = finish
    return {
        "candidates": [body],
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
        "modelVersion": "gemini-test",
    }


def done(finish: str = "STOP") -> dict[str, Any]:
    return chunk(text(""), finish=finish)


# Vertex AI's streamed calls (streamFunctionCallArguments).
def opened(name: str) -> dict[str, Any]:
    return signed({"functionCall": {"name": name, "willContinue": True}})


def pieces(*items: dict[str, Any], more: bool = True) -> dict[str, Any]:
    function: dict[str, Any] = {"partialArgs": list(items)}
    if more:
        function["willContinue"] = True
    return {"functionCall": function}


def piece(path: str, more: bool = False, **value: Any) -> dict[str, Any]:
    return {"jsonPath": path, **value, **({"willContinue": True} if more else {})}


def string(path: str, said: str, more: bool = False) -> dict[str, Any]:
    return piece(path, more, stringValue=said)


CLOSED = {"functionCall": {}}


# -- bodies --------------------------------------------------------------------------------


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def array(*payloads: dict[str, Any]) -> bytes:
    """The JSON array Gemini writes without alt=sse, one element at a time."""
    return ("[" + "\r\n,".join(json.dumps(p, indent=2) for p in payloads) + "]").encode()


def run_sse(*payloads: dict[str, Any], **options: Any) -> Run:
    return run(sse(*payloads, eol="\r\n"), **options)


def run_array(*payloads: dict[str, Any], **options: Any) -> Run:
    return run(array(*payloads), content_type="application/json; charset=UTF-8", **options)


TEXT_TOOLS = [
    chunk(text("Checking ")),
    chunk(text("both.")),
    chunk(
        signed(call("get_weather", {"city": "Paris"})),
        call("get_time", {"tz": "Europe/Paris"}),
    ),
    done(),
]


# -- calls that arrive whole --------------------------------------------------------------


@pytest.mark.parametrize("reads", [None, 1, 7])
def test_text_then_parallel_calls_in_one_chunk(reads: int | None) -> None:
    r = run_sse(*TEXT_TOOLS, pieces=reads)
    assert (r.report["dialect"], r.report["status"], r.report["finish_reason"]) == (
        "gemini",
        "finished",
        "STOP",
    )
    assert r.report["text"] == "Checking both."
    assert [(c["index"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "get_weather", {"city": "Paris"}),
        (1, "get_time", {"tz": "Europe/Paris"}),
    ]
    assert r.kinds == [], "STOP ends Gemini's turns with calls too"
    assert r.code == 0


def test_calls_spread_over_chunks_take_lanes_in_order() -> None:
    r = run_sse(
        chunk(signed(call("a", {"n": 1}))),
        chunk(call("b", {"n": 2}, id="call-b")),
        chunk(text("and "), call("c", {"n": 3})),
        done(),
    )
    assert [(c["index"], c["name"], c["id"], c["arguments"]) for c in r.calls] == [
        (0, "a", None, {"n": 1}),
        (1, "b", "call-b", {"n": 2}),
        (2, "c", None, {"n": 3}),
    ]
    assert r.report["text"] == "and "
    assert r.kinds == []


def test_whole_args_are_one_fragment_of_compact_json() -> None:
    args = {"city": "Zürich", "days": [1, 2], "hourly": False, "note": None}
    r = run_sse(chunk(call("f", args)), done())
    assert r.session.state.calls[0].fragments() == [compact(args)]
    assert r.call(0)["arguments_raw"] == compact(args)
    assert "arguments_streamed" not in r.call(0)


def test_empty_and_absent_args_both_mean_an_empty_object() -> None:
    r = run_sse(chunk(call("with_empty", {}), call("without")), done())
    assert [(c["arguments_raw"], c["arguments"], c["fragments"]) for c in r.calls] == [
        ("{}", {}, 1),
        ("", {}, 0),
    ]
    assert r.kinds == []


def test_the_lane_shows_the_text_until_the_finish_then_the_tree() -> None:
    r = run_sse(chunk(call("f", {"a": 1})), done())
    state, slot = r.session.state, r.session.state.calls[0]
    before, after = lane_view(state, slot, upto=1), lane_view(state, slot, upto=2)
    assert (before.mode, before.fragments) == ("raw", 1)
    assert before.counter.startswith("1 fragment · 7 chars")
    assert (after.mode, after.fragments) == ("tree", 1)


def test_args_that_are_a_string_are_read_as_json_text() -> None:
    r = run_sse(chunk(call("f", '{"a": 1}')), done())
    assert r.call(0)["arguments"] == {"a": 1}
    assert r.anomaly("unexpected-shape")["index"] == 0


def test_a_call_with_args_but_no_name_is_kept_and_named_missing() -> None:
    r = run_sse(chunk({"functionCall": {"args": {"a": 1}}}), done())
    assert (r.call(0)["name"], r.call(0)["arguments"]) == (None, {"a": 1})
    assert r.kinds == ["name-missing"]


# -- text and reasoning ----------------------------------------------------------------------


def test_thought_parts_are_reasoning() -> None:
    r = run_sse(
        chunk(thought("Plan: "), thought("call f.")),
        chunk(text("Calling f."), signed(call("f", {}))),
        done(),
    )
    assert (r.report["reasoning"], r.report["text"]) == ("Plan: call f.", "Calling f.")
    channels = [(e.channel, e.text) for e in r.events if isinstance(e, TextAppended)]
    assert channels == [
        (Channel.REASONING, "Plan: "),
        (Channel.REASONING, "call f."),
        (Channel.CONTENT, "Calling f."),
    ]


def test_a_signature_alone_adds_nothing() -> None:
    r = run_sse(chunk(signed(text("")), text("hi")), done())
    assert (r.report["text"], r.calls, r.kinds) == ("hi", [], [])


# -- endings -----------------------------------------------------------------------------------


def test_a_stream_without_a_finish_reason_is_truncated_and_keeps_what_arrived() -> None:
    r = run_sse(chunk(text("So far")), chunk(call("f", {"a": 1})))
    assert (r.report["status"], r.report["finish_reason"]) == ("truncated", None)
    assert r.report["text"] == "So far"
    assert (r.call(0)["arguments_raw"], r.call(0)["error"]) == ('{"a":1}', None)
    assert r.call(0)["arguments"] == {"a": 1}, "a call that came whole is complete"
    assert r.code != 0


def test_a_malformed_function_call_is_named_with_its_message() -> None:
    malformed = {
        "candidates": [
            {
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": "Malformed function call: print(f(x=))",
                "index": 0,
            }
        ]
    }
    r = run_sse(chunk(text("Sure.")), malformed)
    assert (r.report["status"], r.report["finish_reason"]) == (
        "finished",
        "MALFORMED_FUNCTION_CALL",
    )
    assert r.anomaly("finish-malformed-call")["detail"] == (
        "finishReason MALFORMED_FUNCTION_CALL: Malformed function call: print(f(x=))"
    )
    assert r.code == EXIT_INCOMPLETE, "the model's call failed: not a clean run for CI"


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_a_blocked_answer_is_named(reason: str) -> None:
    r = run_sse(chunk(text("Well")), done(reason))
    assert (r.report["status"], r.report["finish_reason"], r.kinds) == (
        "finished",
        reason,
        ["blocked"],
    )


@pytest.mark.parametrize("reason", ["STOP", "MAX_TOKENS", "OTHER"])
def test_other_finish_reasons_are_not_anomalies(reason: str) -> None:
    assert run_sse(chunk(call("f", {})), done(reason)).kinds == []


def test_a_blocked_prompt_fails_the_stream_saying_why() -> None:
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {}}
    r = run_sse(blocked)
    assert (r.report["dialect"], r.report["status"]) == ("gemini", "error")
    assert r.report["error"] == "the prompt was blocked (PROHIBITED_CONTENT)"
    assert r.kinds == ["blocked"]


def test_an_error_object_mid_stream_fails_it() -> None:
    error = {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}
    r = run_sse(chunk(text("Hel")), error)
    assert (r.report["status"], r.report["text"]) == ("error", "Hel")
    assert r.report["error"] == "error in stream: INTERNAL (500): Internal error"
    assert r.kinds == ["error-event"]


def test_an_error_object_as_the_first_event_is_read_as_gemini() -> None:
    error = {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}
    r = run_sse(error)
    assert (r.report["dialect"], r.report["status"], r.kinds) == (
        "gemini",
        "error",
        ["error-event"],
    )


def test_an_http_error_with_google_s_error_object_is_told_as_gemini() -> None:
    quota = {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}
    r = run(json.dumps(quota).encode(), status=429, content_type="application/json")
    assert (r.report["dialect"], r.report["status"]) == ("gemini", "error")
    assert r.report["error"] == "HTTP 429: Quota exceeded."


def test_other_candidates_are_named_and_left_out() -> None:
    two = chunk(text("zero"))
    two["candidates"].append({"content": {"parts": [text("one")]}, "index": 1})
    r = run_sse(two, done())
    assert r.report["text"] == "zero"
    assert r.anomaly("extra-choice")["detail"] == "candidate 1 ignored"


def test_a_chunk_that_is_no_response_is_named() -> None:
    r = run_sse(chunk(text("a")), {"modelVersion": "gemini-test"}, done())
    assert (r.report["text"], r.kinds) == ("a", ["unexpected-shape"])
    assert run_sse(chunk(text("a")), {"usageMetadata": {}}, done()).kinds == []


DEEP = "[" * 1005 + "]" * 1005  # deeper than Python writes, shallow enough to be read


@pytest.mark.parametrize(
    "template",
    [
        '{"candidates":[{"index":%s}]}',
        '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":%s}}]}}]}',
        '{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[%s]}}]}}]}',
        '{"candidates":[{"finishReason":%s}]}',
        '{"error":{"code":1,"status":"X","message":%s}}',
        '{"promptFeedback":{"blockReason":%s}}',
    ],
)
def test_values_nested_past_python_s_limit_never_raise(template: str) -> None:
    r = run(sse(template % DEEP))
    assert r.report["dialect"] == "gemini"


# -- framing and detection ----------------------------------------------------------------


def comparable(r: Run) -> dict[str, Any]:
    return {k: v for k, v in r.report.items() if k not in ("bytes", "timing")}


@pytest.mark.parametrize("reads", [None, 1, 13])
def test_the_json_array_gives_the_report_sse_gives(reads: int | None) -> None:
    via_array = run_array(*TEXT_TOOLS, pieces=reads)
    assert via_array.report["status"] == "finished"
    assert comparable(via_array) == comparable(run_sse(*TEXT_TOOLS))


def test_a_json_array_cut_short_is_truncated() -> None:
    body = array(*TEXT_TOOLS)
    r = run(body[: body.index(b"get_time")], content_type="application/json")
    assert (r.report["status"], r.report["text"]) == ("truncated", "Checking both.")
    assert r.calls == []


@pytest.mark.parametrize("end", [b"", b"\r\n", b"\r\n,"])
def test_a_json_array_never_closed_says_so(end: bytes) -> None:
    """Every element whole, the finish among them, and no `]`: the body was cut
    after its last element (or the server never wrote the end)."""
    body = array(*TEXT_TOOLS).removesuffix(b"]") + end
    r = run(body, content_type="application/json")
    assert r.report["status"] == "finished"
    assert r.kinds == ["unterminated-event"]
    assert "closing ] never came" in r.report["anomalies"][0]["detail"]
    assert run_array(*TEXT_TOOLS).kinds == [], "a closed array says nothing"


def test_detection_from_the_first_event() -> None:
    def event(payload: dict[str, Any]) -> SSEEvent:
        return SSEEvent(1, "", json.dumps(payload), None, None)

    assert dialect_of_event(event(chunk(text("x")))) == "gemini"
    assert dialect_of_event(event({"promptFeedback": {"blockReason": "SAFETY"}})) == "gemini"
    chat_error = {"error": {"message": "bad", "type": "invalid_request_error", "code": None}}
    assert not GeminiDialect.claims_event(event(chat_error), chat_error)
    assert not GeminiDialect.claims_event(event({"choices": []}), {"choices": [], "candidates": []})


def test_a_non_streaming_body_is_read_whole() -> None:
    body = json.dumps(chunk(text("Done."), call("f", {"a": 1}), finish="STOP")).encode()
    r = run(body, content_type="application/json")
    assert dialect_of_completion(json.loads(body)) == "gemini"
    assert (r.report["dialect"], r.report["status"], r.report["finish_reason"]) == (
        "gemini",
        "finished",
        "STOP",
    )
    assert (r.report["text"], r.call(0)["arguments"]) == ("Done.", {"a": 1})


# -- Vertex AI: partialArgs ----------------------------------------------------------------

NESTED = [
    chunk(opened("plan")),
    chunk(pieces(string("$.place.city", "San ", more=True))),
    chunk(pieces(string("$.place.city", "Fran", more=True))),
    chunk(pieces(string("$.place.city", "cisco"))),
    chunk(pieces(piece("$.place.nights", numberValue=3))),
    chunk(pieces(string("$.stops[0].name", "Pier 39"), piece("$.stops[0].open", boolValue=True))),
    chunk({"functionCall": {"willContinue": True}}),
    chunk(pieces(string("$.stops[1].name", "Alcatraz", more=True), string("$.stops[1].name", ""))),
    chunk(pieces(piece("$['odd.key']", nullValue="NULL_VALUE"))),
    chunk(CLOSED),
    done(),
]
NESTED_ARGS = {
    "place": {"city": "San Francisco", "nights": 3},
    "stops": [{"name": "Pier 39", "open": True}, {"name": "Alcatraz"}],
    "odd.key": None,
}


def shown(item: dict[str, Any]) -> str:
    """A well-formed piece as its lane shows it: `$.path = value`, `…` if it continues."""
    key = next(
        key for key in ("stringValue", "numberValue", "boolValue", "nullValue") if key in item
    )
    value = None if key == "nullValue" else item[key]
    more = " …" if item.get("willContinue") else ""
    return f"{item['jsonPath']} = {compact(value)}{more}\n"


def sent_pieces(*chunks: dict[str, Any]) -> list[str]:
    return [
        shown(item)
        for body in chunks
        for part in body["candidates"][0]["content"]["parts"]
        for item in part.get("functionCall", {}).get("partialArgs", [])
    ]


@pytest.mark.parametrize("reads", [None, 3])
def test_pieces_assemble_nested_objects_arrays_and_continued_strings(reads: int | None) -> None:
    r = run_sse(*NESTED, pieces=reads)
    assert (r.report["status"], r.kinds) == ("finished", [])
    assert r.call(0)["name"] == "plan"
    assert r.call(0)["arguments"] == NESTED_ARGS
    assert r.call(0)["arguments_raw"] == compact(NESTED_ARGS)
    assert r.session.state.calls[0].fragments() == sent_pieces(*NESTED)
    assert r.call(0)["arguments_streamed"].splitlines()[:4] == [
        '$.place.city = "San " …',
        '$.place.city = "Fran" …',
        '$.place.city = "cisco"',
        "$.place.nights = 3",
    ]


def test_a_streamed_lane_shows_each_piece_then_the_assembled_tree() -> None:
    r = run_sse(*NESTED)
    state, slot = r.session.state, r.session.state.calls[0]
    midway = lane_view(state, slot, upto=4)
    assert (midway.mode, midway.fragments) == ("raw", 3)
    assert lane_view(state, slot, upto=len(NESTED)).mode == "tree"


def test_a_part_without_will_continue_ends_the_call() -> None:
    r = run_sse(
        chunk(opened("first")),
        chunk(pieces(piece("$.n", numberValue=0.5), more=False)),
        chunk(opened("second")),
        chunk(pieces(string("$.id", "B", more=True))),
        chunk(pieces(string("$.id", ""))),
        chunk(CLOSED),
        done(),
    )
    assert [(c["index"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "first", {"n": 0.5}),
        (1, "second", {"id": "B"}),
    ]
    assert r.kinds == []


def test_a_streamed_call_with_no_pieces_has_empty_arguments() -> None:
    r = run_sse(chunk(opened("ping")), chunk(CLOSED), done())
    assert (r.call(0)["arguments_raw"], r.call(0)["arguments"], r.kinds) == ("", {}, [])


@pytest.mark.parametrize(
    ("later", "detail"),
    [
        (piece("$.a", numberValue=7), '$.a was "x", then 7'),
        (string("$.a", "y"), "$.a got more text after it ended; appended"),
        (string("$.a.b", "y"), "$.a.b goes inside $.a, which holds a value"),
        (string("$[0]", "y"), "$[0] treats the arguments as an array, but it is an object"),
        (string("$.list.k", "y"), "$.list.k treats $.list as an object, but it is an array"),
        (
            piece("$.c", stringValue="s", numberValue=1),
            "one piece carries stringValue, numberValue; stringValue used",
        ),
    ],
)
def test_contradicting_pieces_are_named(later: dict[str, Any], detail: str) -> None:
    r = run_sse(
        chunk(opened("f")),
        chunk(pieces(string("$.a", "x"), string("$.list[0]", "v"))),
        chunk(pieces(later)),
        chunk(CLOSED),
        done(),
    )
    conflict = r.anomaly("partial-args-conflict")
    assert (conflict["index"], conflict["detail"]) == (0, detail)
    assert r.report["status"] == "finished" and isinstance(r.call(0)["arguments"], dict)


def test_a_string_whose_end_never_comes_is_named_and_kept() -> None:
    r = run_sse(
        chunk(opened("f")),
        chunk(pieces(string("$.note", "Bring an umb", more=True))),
        chunk(CLOSED),
        done(),
    )
    assert r.anomaly("partial-args-unended")["detail"] == (
        "$.note was to continue; its end never came"
    )
    assert r.call(0)["arguments"] == {"note": "Bring an umb"}


@pytest.mark.parametrize(
    ("cut_by", "detail"),
    [
        (chunk(opened("g")), "the call was to continue, but another call started"),
        (done(), "the call was to continue, but the finish (STOP) came first"),
    ],
)
def test_a_call_cut_off_while_it_was_to_continue_is_named(
    cut_by: dict[str, Any], detail: str
) -> None:
    r = run_sse(chunk(opened("f")), chunk(pieces(string("$.a", "x"))), cut_by, done())
    first = r.report["anomalies"][0]
    assert (first["kind"], first["index"], first["detail"]) == ("partial-args-unended", 0, detail)
    assert r.call(0)["arguments"] == {"a": "x"}


def test_pieces_with_no_call_open_get_a_lane_of_their_own() -> None:
    r = run_sse(chunk(pieces(string("$.a", "x"), more=False)), done())
    assert (r.call(0)["name"], r.call(0)["arguments"]) == (None, {"a": "x"})
    assert r.anomaly("partial-args-without-call")["index"] == 0


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        (piece("city", stringValue="x"), 'city = "x"'),
        (piece("$", stringValue="x"), '$ = "x"'),
        (piece("$.a[", stringValue="x"), '$.a[ = "x"'),
        (piece("$.a"), "$.a = ?"),
        (piece("$.a", numberValue="3"), '$.a = "3"'),
        ({"stringValue": "x"}, 'null = "x"'),
        ({"jsonPath": ["$"], "boolValue": False}, '["$"] = false'),
    ],
)
def test_a_piece_that_cannot_be_placed_is_kept_as_a_fragment(
    bad: dict[str, Any], line: str
) -> None:
    r = run_sse(chunk(opened("f")), chunk(pieces(bad, string("$.b", "y"))), chunk(CLOSED), done())
    assert r.kinds == ["unexpected-shape"]
    assert r.session.state.calls[0].fragments()[0] == line + "\n"
    assert r.call(0)["arguments"] == {"b": "y"}


def test_an_array_that_skips_an_index_lists_its_elements_in_order() -> None:
    r = run_sse(
        chunk(opened("f")),
        chunk(pieces(string("$.a[2]", "c"), string("$.a[0]", "a"))),
        chunk(CLOSED),
        done(),
    )
    assert r.call(0)["arguments"] == {"a": ["a", "c"]}
    assert r.anomaly("unexpected-shape")["detail"] == (
        "$.a skips an index; its elements are listed in order"
    )


def test_a_stream_cut_mid_call_keeps_the_pieces_and_what_they_assembled() -> None:
    r = run_sse(
        chunk(opened("f")), chunk(pieces(string("$.a", "x"), string("$.b", "pa", more=True)))
    )
    assert (r.report["status"], r.kinds) == ("truncated", [])
    assert r.call(0)["error"] == TRUNCATED_CALL_ERROR
    assert r.call(0)["arguments_raw"] == '{"a":"x","b":"pa"}'
    assert r.session.state.calls[0].fragments() == ['$.a = "x"\n', '$.b = "pa" …\n']


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$.a.b[0].c", ["a", "b", 0, "c"]),
        ("$['a.b'][12]", ["a.b", 12]),
        ('$["q\\"uote"].x', ['q"uote', "x"]),
        ("$", None),
        ("a.b", None),
        ("$.a[x]", None),
        ('$["bad \\q"]', None),
    ],
)
def test_paths(path: str, segments: list[str | int] | None) -> None:
    assert parse_path(path) == segments


PATH_PARTS = st.sampled_from(
    [".", "[", "]", "'", '"', "\\", "$", "0", "7", "\u0663", "a", "é", " "]
)


@settings(max_examples=400)
@given(st.lists(PATH_PARTS, max_size=14).map("".join))
@example(".a]b[1]")
@example("[1234567890123456789]")
@example(".a[\u0663].b")
def test_a_plain_path_is_cut_as_segment_by_segment(rest: str) -> None:
    """`.key` and `[0]` paths, read in two calls, give what reading segment by segment
    gives, for any text after the `$`."""
    path = "$" + rest
    assert parse_path(path) == gemini_module._parsed_segments(path)


# -- hypothesis ---------------------------------------------------------------------------


@st.composite
def whole_call_streams(draw: st.DrawFn) -> tuple[list[bytes], list[tuple[str, Any]], bool]:
    """Whole calls of any args spread over chunks, as SSE or a JSON array, cut anywhere."""
    calls = draw(st.lists(st.tuples(st.text(CHARS, min_size=1, max_size=6), OBJECTS), max_size=4))
    parts = [call(name, args) for name, args in calls]
    chunks, start = [], 0
    while start < len(parts):
        size = draw(st.integers(1, 3))
        chunks.append(chunk(*parts[start : start + size]))
        start += size
    as_array = draw(st.booleans())
    body = array(*chunks, done()) if as_array else sse(*chunks, done(), eol="\r\n")
    return draw(writes(body)), calls, as_array


@settings(max_examples=80, deadline=None)
@given(whole_call_streams())
def test_any_whole_calls_in_any_chunks_and_reads(
    case: tuple[list[bytes], list[tuple[str, Any]], bool],
) -> None:
    reads, calls, as_array = case
    body = b"".join(reads)
    r = run(body, content_type="application/json" if as_array else "text/event-stream")
    assert r.report["status"] == "finished"
    assert [(c["name"], c["arguments"], c["fragments"]) for c in r.calls] == [
        (name, args, 1) for name, args in calls
    ]
    assert r.kinds == []


FILLED = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(TEXT, inner, min_size=1, max_size=3)
    ),
    max_leaves=8,
)


def leaves(value: Any, path: str = "$") -> list[tuple[str, Any]]:
    """(JSON path, scalar) for every scalar in a value with no empty containers."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, f"{path}[{json.dumps(k)}]")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in leaves(v, f"{path}[{i}]")]
    return [(path, value)]


VALUE_KEY = {bool: "boolValue", int: "numberValue", float: "numberValue"}


@st.composite
def partial_args_streams(draw: st.DrawFn) -> tuple[bytes, dict[str, Any], list[str]]:
    args = draw(st.dictionaries(TEXT, FILLED, max_size=4))
    items: list[dict[str, Any]] = []
    for path, value in leaves(args):
        if isinstance(value, str):
            cuts = draw(cut(value))
            items += [string(path, said, more=True) for said in cuts[:-1]]
            items.append(string(path, cuts[-1]))
        elif value is None:
            items.append(piece(path, nullValue="NULL_VALUE"))
        else:
            items.append(piece(path, **{VALUE_KEY[type(value)]: value}))
    parts, start = [], 0
    while start < len(items):
        size = draw(st.integers(1, 3))
        parts.append(pieces(*items[start : start + size]))
        start += size
    body = sse(
        chunk(opened("f")), *(chunk(part) for part in parts), chunk(CLOSED), done(), eol="\r\n"
    )
    return b"".join(draw(writes(body))), args, [shown(item) for item in items]


@settings(max_examples=120, deadline=None)
@given(partial_args_streams())
def test_any_arguments_sent_as_pieces_assemble_exactly(
    case: tuple[bytes, dict[str, Any], list[str]],
) -> None:
    body, args, sent = case
    r = run(body, pieces=max(1, len(body) // 5))
    assert (r.report["status"], r.kinds) == ("finished", [])
    assert r.call(0)["arguments"] == args
    assert r.session.state.calls[0].fragments() == sent


ANY = st.one_of(
    FILLED,
    st.sampled_from(["$", "$.a", "$.a[0]", "$.a.b", "$['a']", "$.a[1].b", "STOP", "SAFETY"]),
)


def maybe(keys: list[str], value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects holding any of `keys`, each with any value."""
    return st.dictionaries(st.sampled_from(keys), value, max_size=len(keys))


PIECES = st.lists(maybe(["jsonPath", *VALUE_KEY.values(), "stringValue", "willContinue"], ANY))
CALLS = maybe(["name", "id", "args", "willContinue"], ANY).flatmap(
    lambda call: st.one_of(st.just(call), PIECES.map(lambda items: {**call, "partialArgs": items}))
)
PARTS = st.lists(
    st.one_of(
        maybe(["text", "thought", "thoughtSignature"], ANY),
        CALLS.map(lambda call: {"functionCall": call}),
        ANY,
    ),
    max_size=3,
)
CONTENT = st.one_of(PARTS.map(lambda parts: {"parts": parts}), ANY)
CANDIDATE = st.one_of(
    st.builds(
        lambda content, extra: {"content": content, **extra},
        CONTENT,
        maybe(["index", "finishReason", "finishMessage"], ANY),
    ),
    ANY,
)
RESPONSES = st.one_of(
    st.lists(CANDIDATE, max_size=2).map(lambda candidates: {"candidates": candidates}),
    maybe(["candidates", "promptFeedback", "error", "usageMetadata"], ANY),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(RESPONSES, max_size=6), st.sampled_from([None, "gemini"]))
def test_any_values_in_gemini_s_places_never_raise(
    responses: list[dict[str, Any]], dialect: str | None
) -> None:
    r = run(sse(*responses, eol="\r\n"), dialect=dialect, pieces=11)
    assert r.report["status"] in ("finished", "truncated", "error")
    assert r.code in (EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE)


VERTEX_PATHS = st.sampled_from(["$.a", "$['a']", "$.a.b", "$.a[0]", "$.l[0]", "$.l[1].k", "$.l"])
VERTEX_PIECES = st.fixed_dictionaries(
    {"jsonPath": VERTEX_PATHS},
    optional={
        "stringValue": st.sampled_from(["x", "yz", ""]),
        "numberValue": st.integers(-2, 2),
        "willContinue": st.booleans(),
    },
)


@given(st.lists(VERTEX_PIECES, max_size=12))
def test_pieces_assemble_the_same_whether_their_paths_are_remembered_or_walked(
    pieces: list[dict[str, Any]],
) -> None:
    """The tree remembers where each path led (a container is never replaced); a tree
    that forgets before every piece gives the same problems and the same arguments."""
    remembering, walking = ArgumentTree(), ArgumentTree()
    for piece in pieces:
        walking.places.clear()
        assert remembering.add(piece) == walking.add(piece)
    assert remembering.text() == walking.text()
    assert remembering.open_paths() == walking.open_paths()
    assert remembering.gaps() == walking.gaps()


PIECE = st.fixed_dictionaries(
    {"jsonPath": VERTEX_PATHS},
    optional={
        "stringValue": st.sampled_from(["x", 'y"\n', ""]),
        "numberValue": st.integers(-2, 2),
        "willContinue": st.sampled_from([True, False, 1]),
        "extra": st.just(1),
    },
)
CALL = st.fixed_dictionaries(
    {"partialArgs": st.lists(PIECE, max_size=2)},
    optional={"willContinue": st.booleans(), "name": st.just("f"), "args": st.just({"a": 1})},
)
PART = st.fixed_dictionaries({"functionCall": CALL}, optional={"text": st.just("t")})
CANDIDATE = st.fixed_dictionaries(
    {"content": st.fixed_dictionaries({"parts": st.lists(PART, min_size=1, max_size=2)})},
    optional={"index": st.sampled_from([0, 1, False]), "finishReason": st.just("STOP")},
)
CHUNK = st.fixed_dictionaries(
    {"candidates": st.lists(CANDIDATE, min_size=1, max_size=2)},
    optional={"promptFeedback": st.just({}), "error": st.none()},
)


def vertex_report(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    from toolstream_tui.core import StreamSession, build_report

    opening = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "g"}}]}}]}
    opening["candidates"][0]["content"]["parts"][0]["functionCall"]["willContinue"] = True
    body = sse(opening, *chunks)
    session = StreamSession("test", live=False)
    session.open(200, "text/event-stream")
    session.feed(body, 0.1)
    session.close(0.2)
    return build_report(session.state)


def usual(call: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A chunk of one candidate with one part holding `call`, plus `more` where it goes."""
    part = {"functionCall": call, **more.pop("part", {})}
    candidate = {"content": {"parts": [part]}, **more.pop("candidate", {})}
    return {"candidates": [candidate], **more}


GOES_ON = {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": 1}]}


@settings(max_examples=150)
@given(st.lists(CHUNK, max_size=5))
@example([usual(GOES_ON, candidate={"finishReason": "STOP"})])
@example([usual(GOES_ON, candidate={"index": 1}), usual(GOES_ON, candidate={"index": False})])
@example([usual(GOES_ON, part={"text": "t"}), usual({**GOES_ON, "willContinue": 1})])
@example([usual({**GOES_ON, "name": "h"}), usual({**GOES_ON, "args": {"b": 2}})])
@example([usual(GOES_ON, promptFeedback={"blockReason": "SAFETY"})])
@example(  # a string continued by a chunk (willContinue 1 is not true: it and the call end)
    [
        usual({"partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": True}]}),
        usual({"partialArgs": [{"jsonPath": "$.a", "stringValue": "y", "willContinue": 1}]}),
        usual({"partialArgs": [{"jsonPath": "$.a", "stringValue": "z"}]}),
        usual({"name": "h", "args": {"b": 2}}, candidate={"finishReason": "STOP"}),
    ]
)
@example([usual(GOES_ON, error={"code": 1, "message": "m", "status": "S"})])
def test_the_usual_vertex_chunk_reads_as_the_general_path_reads_it(
    chunks: list[dict[str, Any]],
) -> None:
    """A chunk that only continues the open call takes a short path; every other shape
    goes the general way. Read both ways, any chunks give the same report."""
    short = vertex_report(chunks)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GeminiDialect, "_took_pieces", lambda self, payload: False)
        patch.setattr(gemini_module, "piece_text", general_piece_text)
        assert vertex_report(chunks) == short


def general_piece_text(piece: Any) -> str:
    """piece_text with its shortcut taken away (a second key it does not know)."""
    if isinstance(piece, dict):
        piece = {**piece, "_": None}
    return original_piece_text(piece)


VALUED_PIECES = st.fixed_dictionaries(
    {"jsonPath": st.one_of(VERTEX_PATHS, st.just("$['k = v | w']"))},
    optional={
        "stringValue": st.sampled_from(["x", "yz", "", "a = b", "c | d", 'e " f']),
        "numberValue": st.one_of(st.integers(-2, 2), st.just(0.5)),
        "boolValue": st.booleans(),
        "nullValue": st.just("NULL_VALUE"),
        "willContinue": st.booleans(),
    },
)


@given(st.lists(VALUED_PIECES, max_size=12))
def test_a_preview_of_pieces_is_what_the_pieces_shown_so_far_assemble_to(
    pieces: list[dict[str, Any]],
) -> None:
    """The preview reads the lane's lines back (`p` on a Vertex AI call): after each
    piece, what the dialect's own tree holds."""
    tree, lines = ArgumentTree(), ""
    for piece in pieces:
        tree.add(piece)
        lines += original_piece_text(piece)
        assert assembled_from_lines(lines) == gemini_module._plain(tree.root)


def test_a_piece_s_line_reads_back_whatever_its_path_and_text_hold() -> None:
    piece = {"jsonPath": "$['a = b']", "stringValue": "c = d | e", "willContinue": True}
    assert piece_of_line(original_piece_text(piece)) == piece
    assert piece_of_line("? [1, 2]\n") is None
    assert piece_of_line("$.a = ?\n") is None
    assert piece_of_line('$.a = "cut sho') is None


def fields_of(stream: list[dict[str, Any]], ended: bool = True) -> list[tuple[str, float, Any]]:
    """Each field of the first call: its key and when it was named and complete, the
    stream's k-th chunk read at k seconds (`ended`: the stream closes after them)."""
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    for number, payload in enumerate(stream, start=1):
        session.feed(sse(payload, eol="\r\n"), float(number))
    if ended:
        session.close(float(len(stream) + 1))
    timing = build_report(session.state)["timing"]["calls"][0]
    return [(field["key"], field["named"], field["complete"]) for field in timing["fields"]]


def test_a_field_sent_in_pieces_is_named_by_its_first_and_complete_when_the_next_begins() -> None:
    """Vertex AI's partialArgs: the fields line and the report's field timings
    (they were empty for such calls: the pieces are not JSON text)."""
    stream = [
        opened("plan"),
        chunk(pieces(string("$.trip.city", "San ", more=True))),  # 2
        chunk(pieces(string("$.trip.city", "Jose"))),
        chunk(pieces(piece("$.trip.nights", numberValue=3))),  # 4: still the trip
        chunk(pieces(string("$.note", "go", more=True))),  # 5: the trip is complete
        chunk(pieces(string("$.note", "!"))),  # 6: a whole value at $.note
        chunk(pieces(piece("$.tags[0]", stringValue="a"), more=False)),  # 7
    ]
    assert fields_of([*stream, done()]) == [
        ("trip", 2.0, 5.0),
        ("note", 5.0, 6.0),
        ("tags", 7.0, None),  # its end carries no text to time it by
    ]


def test_a_field_whose_last_piece_goes_on_when_the_stream_is_cut_stays_incomplete() -> None:
    stream = [opened("plan"), chunk(pieces(string("$.city", "San ", more=True)))]
    assert fields_of(stream) == [("city", 2.0, None)]


def test_a_call_s_last_field_in_pieces_is_complete_only_by_its_own_piece() -> None:
    """The call's end carries no text to time it by: cut there or not, the report as
    of any event is the stream fed that far."""
    stream = [opened("plan"), chunk(pieces(string("$.trip.city", "Rome")))]
    assert fields_of(stream) == [("trip", 2.0, None)]
    assert fields_of([*stream, chunk(CLOSED)]) == [("trip", 2.0, None)]
    whole = [opened("plan"), chunk(pieces(string("$.city", "Rome")))]
    assert fields_of(whole) == [("city", 2.0, 2.0)]


def test_a_field_s_name_may_hold_what_separates_a_piece_s_path_from_its_value() -> None:
    stream = [
        opened("plan"),
        chunk(pieces(piece("$['a = b']", stringValue="x = y"))),  # 2
        chunk(pieces(piece("$.none"))),  # 3: no value, no field
        chunk(pieces(piece("$.c", numberValue=1)), more=False),  # 4
    ]
    assert fields_of(stream) == [("a = b", 2.0, 2.0), ("c", 4.0, 4.0)]
