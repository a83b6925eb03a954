"""Arguments that arrive whole are written once, from the object they were decoded
to, and what the general path learns by reading their text again is taken from the
writing: each top-level field's place (`fields.write_object`, against
`FieldScanner`), and the parse at the finish (the written value, while nothing else
was appended). Each shortcut is checked against the general path: the same text,
fields and reports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.core.dialects.test_gemini import call, chunk, done, partial_args_streams, pieces
from tests.core.test_compact import OBJECTS, VALUES, json_compact
from tests.helpers.sse import sse
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.dialects import base as base_module
from toolstream_tui.core.dialects import gemini as gemini_module
from toolstream_tui.core.fields import FieldClock, FieldScanner, write_object
from toolstream_tui.core.pieces import TextPieces
from toolstream_tui.core.state import StreamState
from toolstream_tui.core.strict_json import loads


def scanned(text: str) -> list[tuple[str, int, int | None]]:
    scanner = FieldScanner()
    scanner.feed(text, final=True)
    return [(field.key, field.named_at, field.complete_at) for field in scanner.fields]


@settings(max_examples=300)
@given(OBJECTS)
@example({"a": 1, "b": "x", "c": [1, {"d": 2}], "e": None, "f": {}, "g": 1e-7})
@example({"\ud83d": 1, "k": "\udc00"})
def test_an_object_written_whole_has_the_fields_the_scanner_finds(value: dict[str, Any]) -> None:
    written = write_object(value)
    assert written is not None
    text, found = written
    assert text == json_compact(value)
    assert found.length == len(text)
    assert [(f.key, f.named_at, f.complete_at) for f in found.fields] == scanned(text)
    if found.exact:  # what the parse at the finish would give, types and all
        parsed = loads(text)
        assert parsed == value
        assert json_compact(parsed) == text


def test_only_a_plain_object_of_string_keys_is_written_member_by_member() -> None:
    assert write_object({str(n): n for n in range(65)}) is None
    assert write_object({1: "a"}) is None  # type: ignore[dict-item]
    assert write_object({str(n): n for n in range(64)}) is not None


def test_surrogates_and_long_integers_are_not_taken_as_their_parse() -> None:
    for value in ({"a": "\ud83d"}, {"\ud83d": 1}, {"a": ["\ud83d"]}, {"a": [2**70]}):
        written = write_object(value)
        assert written is not None
        assert not written[1].exact
    assert write_object({"a": 2**70, "b": "text", "c": 1e-7})[1].exact  # type: ignore[index]


def clock_fields(clock: FieldClock) -> list[tuple[str, int, int | None]]:
    return [(f.key, f.named_at, f.complete_at) for f in clock.scanner.fields]


@settings(max_examples=200)
@given(OBJECTS, st.lists(st.sampled_from(['{"z":', "1", "}", '"q', ',"r":2}', "{}", "]"])))
def test_text_after_a_written_object_is_read_as_the_scanner_reads_it(
    value: dict[str, Any], more: list[str]
) -> None:
    written = write_object(value)
    assert written is not None
    text, found = written
    buffer = TextPieces()
    buffer.append(text, 1, 0.5)
    for number, extra in enumerate(more):
        buffer.append(extra, 2 + number, 1.0 + number)
    taken, read = FieldClock.of_written(found), FieldClock()
    taken.follow(buffer, final=True)
    read.follow(buffer, final=True)
    assert clock_fields(taken) == clock_fields(read)
    for length in (None, *buffer.ends):
        assert taken.timings(None, length) == read.timings(None, length)
        assert taken.count_upto(length) == read.count_upto(length)


# -- reports: the shortcuts against the general path ----------------------------------


def report(body: bytes, content_type: str) -> dict[str, Any]:
    session = StreamSession("test", live=False)
    session.open(200, content_type)
    half = len(body) // 2
    session.feed(body[:half], 0.25)
    session.feed(body[half:], 0.5)
    session.close(1.0)
    return build_report(session.state)


def same_report_either_way(body: bytes, content_type: str) -> None:
    short = report(body, content_type)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base_module, "write_object", lambda value: None)
        assert report(body, content_type) == short


ARGS = OBJECTS | VALUES


def gemini_body(args: list[Any], streamed: bool, late: bool) -> bytes:
    chunks = [chunk(call(f"f{n}", value)) for n, value in enumerate(args)]
    if streamed:  # a call with args whole and partialArgs after them (Vertex AI)
        opened = call("g", {"a": 1}, willContinue=True)
        chunks += [chunk(opened), chunk(pieces({"jsonPath": "$.b", "numberValue": 2}, more=False))]
    chunks.append(done())
    if late:  # a call after the finish
        chunks.append(chunk(call("late", {"x": 1e-7})))
    return b"".join(sse(json.dumps(one)) for one in chunks)


@settings(max_examples=150)
@given(st.lists(ARGS, max_size=3), st.booleans(), st.booleans())
@example([{"a": 1e-7, "b": "x:1e-7,"}, {"\ud83d": "\udc00"}, [1, 2]], True, True)
@example([{"n": 2**70}, {}, "text", {"k": {"deep": [[1.5e-5]]}}], False, False)
def test_gemini_calls_arriving_whole_report_as_the_general_path_does(
    args: list[Any], streamed: bool, late: bool
) -> None:
    same_report_either_way(gemini_body(args, streamed, late), "text/event-stream")


def ollama_body(args: list[Any]) -> bytes:
    lines = [
        {
            "model": "m",
            "created_at": "t",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"index": n, "name": f"f{n}", "arguments": value}}],
            },
            "done": False,
        }
        for n, value in enumerate(args)
    ]
    lines.append({"model": "m", "created_at": "t", "message": {}, "done": True})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


@settings(max_examples=150)
@given(st.lists(ARGS, max_size=3))
@example([{"a": 1e-7, "b": "x:1e-7,"}, {"\ud83d": "\udc00"}, [1, 2]])
def test_ollama_calls_arriving_whole_report_as_the_general_path_does(args: list[Any]) -> None:
    same_report_either_way(ollama_body(args), "application/x-ndjson")


def finished(body: bytes) -> StreamSession:
    session = StreamSession("test", live=False)
    session.open(200, "text/event-stream")
    session.feed(body, 0.5)
    session.close(1.0)
    return session


def test_the_parse_at_the_finish_takes_the_written_object_while_it_is_all_there_is() -> None:
    args = {"a": [1, 2.5e-7], "b": "text"}
    alone = finished(gemini_body([args], streamed=False, late=False)).state.calls[0]
    assert alone.written is not None and alone.written.exact
    assert alone.parsed and alone.error is None
    assert alone.arguments is alone.written.value == args
    grown = finished(gemini_body([], streamed=True, late=False)).state.calls[0]
    assert grown.written is not None and len(grown.pieces) > 1  # args, then partialArgs
    assert grown.arguments is not grown.written.value  # parsed from the text
    assert grown.arguments == {"b": 2}  # what the pieces assembled: the final word


def test_text_appended_to_a_written_object_is_parsed_with_it() -> None:
    state = StreamState("test", "gemini")
    slot = state.start_call(0, None, "f", 0.0)
    written = write_object({"a": 1})
    assert written is not None
    state.append_written(slot, *written, 1, 0.0)
    state.append_fragment(slot, '{"b": 2}', 2, 0.0)  # two objects in one buffer
    state.finish("STOP", "finishReason")
    assert slot.parsed and slot.arguments is None
    assert slot.error is not None and slot.error.startswith("invalid JSON arguments: Extra data")


# -- the final word: Vertex AI's arguments, assembled from their pieces ---------------


def vertex_report(body: bytes) -> dict[str, Any]:
    session = StreamSession("test", live=False)
    session.open(200, "text/event-stream")
    session.feed(body, 0.5)
    session.close(1.0)
    return build_report(session.state)


@settings(max_examples=100, deadline=None)
@given(partial_args_streams(), st.booleans())
def test_a_final_word_written_from_its_object_reports_as_when_parsed(
    case: tuple[bytes, dict[str, Any], list[str]], late: bool
) -> None:
    """The parse at the finish takes the object the final word was written from; a
    fragment after the finish (parsed again at the end) changes nothing to that."""
    body = case[0]
    if late:
        body += sse(json.dumps(chunk(call("late", {"x": 1}))))
    short = vertex_report(body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gemini_module.ArgumentTree, "written", text_without_object)
        assert vertex_report(body) == short


def text_without_object(tree: gemini_module.ArgumentTree) -> tuple[str, None]:
    """The final word alone: parsed at the finish, the general way."""
    return gemini_module.compact_json(gemini_module._plain(tree.root)), None


def test_a_final_word_restated_otherwise_is_parsed() -> None:
    state = StreamState("test", "gemini")
    slot = state.start_call(0, None, "f", 0.0)
    state.append_fragment(slot, "$.a = 1\n", 1, 0.0)
    slot.restate('{"a":1}', {"a": 1})
    assert slot.final_written is not None
    slot.final_raw = '{"a":2}'  # a final word set without its object
    state.finish("STOP", "finishReason")
    assert slot.arguments == {"a": 2}
