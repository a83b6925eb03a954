"""The indented report is written in pieces, and the pieces are exactly what
json.dumps would print, made inert, whatever the value and wherever it is cut."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import SCALARS, TEXT
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core import report as report_module
from toolstream_tui.core.report import printable_json, printable_pieces, report_json, report_pieces
from toolstream_tui.core.visible import json_inert

ODD_SCALARS = SCALARS | st.sampled_from(
    [float("nan"), float("-inf"), "\ud83d lone", "\x1b[31m\u202e", "x" * 40, (), []]
)
KEYS = TEXT | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
VALUES = st.recursive(
    ODD_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


def dumped(value: Any) -> str:
    return json_inert(json.dumps(value, ensure_ascii=False, indent=2)) + "\n"


@given(VALUES, st.integers(min_value=1, max_value=9))
def test_the_pieces_print_what_json_dumps_prints(value: Any, piece_chars: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_module, "PIECE_CHARS", piece_chars)  # long strings get sliced
        assert "".join(printable_pieces(value)) == dumped(value)
        assert printable_json(value) == dumped(value)


@given(VALUES)
@example({"t": 1e-05, "n": 2**70, "k": [1.5, {"é": "\u202e"}], "s": "\ud83d", 3: ()})
@example([[2.5e-07], {"a": float("nan")}, [0.0001, 1e16]])
def test_whole_containers_print_what_json_dumps_prints(value: Any) -> None:
    """At the usual piece size, small containers are printed whole by orjson where
    its text is json's: floats it writes otherwise (1e-05), ints past 64 bits, lone
    surrogates and keys that are not strings keep them on the member-by-member path."""
    assert "".join(printable_pieces(value)) == dumped(value)


def test_a_deep_small_value_is_printed_past_orjsons_nesting_limit() -> None:
    value: list[Any] = [1.5]
    for _ in range(report_module.ORJSON_DEPTH * 2):
        value = [value, {"k": "v"}]
    assert "".join(printable_pieces(value)) == dumped(value)


def test_nesting_deeper_than_the_recursion_limit_is_printed() -> None:
    depth = sys.getrecursionlimit() + 100
    value: list[Any] = []
    innermost = value
    for _ in range(depth):
        innermost.append({"a": []})
        innermost = innermost[0]["a"]
    printed = printable_json(value)  # at the usual limit
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 4 * depth)  # json.dumps recurses: give it room
    try:
        assert printed == dumped(value)
    finally:
        sys.setrecursionlimit(limit)


def test_a_long_argument_buffer_is_never_one_piece() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    long_text = "é🚀a" * 100_000
    arguments = json.dumps({"text": long_text}, ensure_ascii=False)
    chunk = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "c", "function": {"name": "f", "arguments": arguments}}
                    ]
                },
            }
        ]
    }
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    session.feed(sse(chunk, finish), 0.1)
    session.close(0.2)
    pieces = list(report_pieces(session.state))
    assert "".join(pieces) == dumped(build_report(session.state)) == report_json(session.state)
    assert max(map(len, pieces)) <= 2 * report_module.PIECE_CHARS
    assert len(pieces) > 4  # the buffer, twice (raw and parsed), in slices


FLOATS_JSON_WRITES_AS_REPR = st.floats(allow_nan=False, allow_infinity=False)
PLAIN = st.recursive(
    FLOATS_JSON_WRITES_AS_REPR
    | st.integers(-(2**63), 2**64 - 1)
    | TEXT
    | st.booleans()
    | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=30,
)


@given(st.lists(PLAIN, max_size=4) | st.dictionaries(TEXT, PLAIN, max_size=4))
@example([1e-05, -1e-05, 2.5e-07, -9.9e-09, 1.234e-05, 10.00001, 1e16, 1e-300, 0.0001])
@example({"0.00001": "0.00001", "e-7": ["x e-7", "1e-7\n"], "k": 5e-324})
def test_orjsons_whole_text_is_what_json_dumps_prints(value: Any) -> None:
    """The one-call path writes floats as repr does (orjson writes 1e-7 and 0.00001),
    and leaves text that only looks like a float alone; the walk over the value finds
    every float below 1e-4 that needs it."""
    assert report_module.printable_utf8(value) == dumped(value).encode()
    assert report_module.printable_utf8(value, (), tiny_in_finite=False) == dumped(value).encode()


@pytest.mark.parametrize(
    "value",
    [
        {"nan": float("nan")},
        [float("-inf")],
        {"big": 2**64},
        {1: "key not a string"},
        ["\ud83d lone"],
        [("tuple",)],
    ],
)
def test_what_orjson_would_write_otherwise_goes_the_long_way(value: Any) -> None:
    assert report_module.printable_utf8(value) is None
    assert "".join(printable_pieces(value)) == dumped(value)


def test_a_reports_utf8_pieces_are_its_text() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    arguments = json.dumps({"tiny": 2.5e-07, "text": "é🚀\u200d\x7f" * 30_000}, ensure_ascii=False)
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": arguments}}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    session.feed(sse(chunk, finish), 0.1)
    session.close(0.2)
    pieces = [bytes(piece) for piece in report_module.report_utf8_pieces(session.state)]
    assert b"".join(pieces).decode() == dumped(build_report(session.state))
    assert len(pieces) > 4


def test_a_report_past_the_whole_size_is_written_member_by_member() -> None:
    """Past WHOLE_REPORT_CHARS the report is never one text (memory), and reads the same."""
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    arguments = json.dumps({"text": "é🚀" * 50}, ensure_ascii=False)
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": arguments}}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
    session.feed(sse(chunk), 0.1)
    session.close(0.2)
    report = build_report(session.state)
    whole = b"".join(map(bytes, report_module.report_utf8_pieces(session.state)))
    limit = report_module._long_text_in(report)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_module, "WHOLE_REPORT_CHARS", limit)  # at the limit: whole
        assert report_module._report_utf8(report) is not None
        patch.setattr(report_module, "WHOLE_REPORT_CHARS", limit - 1)  # past it: by member
        assert report_module._report_utf8(report) is None
        by_member = b"".join(map(bytes, report_module.report_utf8_pieces(session.state)))
    assert by_member == whole == dumped(report).encode()


NUMBERS = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=-2e-4, max_value=2e-4)
    | st.sampled_from([1e-7, 1.5e-5, 0.0001, 10.00001, -2.5e-9, 0.0, 1e-10])
)
NUMBER_TEXTS = st.sampled_from(["{}", "1e-7", "1E-5", "0.00001", "-0.000015", "2.5e-09", "7"])


@given(
    st.dictionaries(TEXT, NUMBERS | st.lists(NUMBERS, max_size=3), max_size=4),
    st.lists(NUMBER_TEXTS, max_size=3),
    st.sampled_from([None, 1e-7, 0.5]),
)
def test_a_reports_whole_text_rewrites_floats_wherever_one_can_be_tiny(
    arguments: dict[str, Any], more: list[str], schema_bound: float | None
) -> None:
    """Floats are rewritten only where a call's text, or a value outside the parsed
    arguments (a declared schema), can hold one below 1e-4: the text is json's."""
    session = StreamSession("test")
    if schema_bound is not None:
        tool = {"name": "f", "parameters": {"type": "object", "minimum": schema_bound}}
        session.requested(json.dumps({"tools": [{"type": "function", "function": tool}]}))
    session.open(200, "text/event-stream")
    texts = [json.dumps(arguments), *(f'{{"n": {text}}}' for text in more)]
    calls = [
        {"index": n, "id": f"c{n}", "function": {"name": "f", "arguments": text}}
        for n, text in enumerate(texts)
    ]
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    session.feed(sse(chunk, finish), 0.1)
    session.close(0.2)
    whole = b"".join(map(bytes, report_module.report_utf8_pieces(session.state)))
    assert whole.decode() == dumped(build_report(session.state))
