"""The framings that are not SSE (core/framing.py): NDJSON lines and a JSON array
written element by element. Whatever the bytes and however they are cut into
reads, the same events come out, each one whole, and nothing is lost."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolstream_tui.core.framing import JSONArrayDecoder, LineDecoder
from toolstream_tui.core.session import sniffed_mode
from toolstream_tui.core.sse import SSEEvent

Decoder = LineDecoder | JSONArrayDecoder
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


# Each byte value stands for one of these, so random bytes are mostly structure.
STRUCTURE = b'"\\{}[], a\xc3\xa9\xe2\x82'
STRUCTURE_BYTES = bytes(STRUCTURE[i % len(STRUCTURE)] for i in range(256))


def run(decoder: Decoder, body: bytes, cuts: list[int]) -> tuple[list[str], str]:
    """The events' data and the trailing text, the body fed in pieces cut at `cuts`."""
    events: list[Any] = []
    start = 0
    for cut in [*sorted(cuts), len(body)]:
        events += decoder.feed(body[start:cut])
        start = max(start, cut)
    more, trailing = decoder.close()
    events += more
    assert [event.number for event in events] == list(range(1, len(events) + 1))
    return [event.data for event in events if isinstance(event, SSEEvent)], trailing


def cuts_of(body: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, len(body)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=200), data=st.data())
def test_any_bytes_frame_the_same_however_cut(body: bytes, data: st.DataObject) -> None:
    """Arbitrary bytes (unmatched brackets, stray quotes, backslashes at a read's
    end) end in finite events, the same for any cuts as for one read."""
    cuts = data.draw(cuts_of(body))
    for make in (LineDecoder, JSONArrayDecoder):
        assert run(make(), body, cuts) == run(make(), body, [])


@settings(max_examples=200, deadline=None)
@given(
    elements=st.lists(JSON_VALUES, max_size=6),
    separator=st.sampled_from([",", ",\r\n", "\n,\r\n", " , "]),
    data=st.data(),
)
def test_each_array_element_is_one_event(
    elements: list[Any], separator: str, data: st.DataObject
) -> None:
    body = "[" + separator.join(json.dumps(e, ensure_ascii=False) for e in elements) + "]"
    raw = body.encode()
    events, trailing = run(JSONArrayDecoder(), raw, data.draw(cuts_of(raw)))
    assert [json.loads(event) for event in events] == elements
    assert trailing == ""


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.dictionaries(st.text(), JSON_VALUES, max_size=3), max_size=6),
    newline=st.sampled_from(["\n", "\r\n"]),
    final_newline=st.booleans(),
    data=st.data(),
)
def test_each_ndjson_line_is_one_event(
    lines: list[dict[str, Any]], newline: str, final_newline: bool, data: st.DataObject
) -> None:
    body = newline.join(json.dumps(line, ensure_ascii=False) for line in lines)
    raw = (body + (newline if final_newline and lines else "")).encode()
    events, trailing = run(LineDecoder(), raw, data.draw(cuts_of(raw)))
    assert [json.loads(event) for event in events] == lines
    assert trailing == ""


BOM = b"\xef\xbb\xbf"


def test_an_array_after_a_byte_order_mark_frames_as_without_it_however_cut() -> None:
    """A BOM (a Windows editor's, or one saved from a browser) goes, even cut across
    reads; it was an element of its own: data-not-json, '\\ufeff'."""
    raw = b'[{"a": 1}, {"b": [2]}]'
    for cut in range(len(BOM) + len(raw) + 1):
        assert run(JSONArrayDecoder(), BOM + raw, [cut]) == run(JSONArrayDecoder(), raw, [])


# Text that is all the scanner looks at: quotes, backslashes, brackets, and
# characters of 2 to 4 UTF-8 bytes, so a cut falls mid-escape and mid-character.
TRICKY_TEXT = st.text(alphabet='"\\{}[],: \n\té€😀\u2028ab', max_size=12)
TRICKY_VALUES = st.recursive(
    st.none() | st.integers() | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY_TEXT, inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(
    elements=st.lists(TRICKY_VALUES, max_size=5),
    indent=st.sampled_from([None, 2]),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_elements_full_of_quotes_escapes_and_brackets_frame_however_cut(
    elements: list[Any], indent: int | None, ascii_only: bool, data: st.DataObject
) -> None:
    """The scanner skips whole strings at once: each element is still one event,
    read back as json.loads reads the whole array, for any cuts."""
    dumped = (json.dumps(e, ensure_ascii=ascii_only, indent=indent) for e in elements)
    raw = ("[" + "\r\n,".join(dumped) + "]").encode()
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=12) | st.just([*range(len(raw))]))
    events, trailing = run(JSONArrayDecoder(), raw, cuts)
    assert [json.loads(event) for event in events] == json.loads(raw) == elements
    assert trailing == ""


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=60).map(lambda b: b.translate(STRUCTURE_BYTES)), data=st.data())
def test_stray_quotes_brackets_and_backslashes_frame_the_same_however_cut(
    body: bytes, data: st.DataObject
) -> None:
    """Bytes made mostly of what the scanner looks at (unclosed strings, a backslash
    at a read's end, unmatched brackets) give the same events for any cuts."""
    cuts = data.draw(cuts_of(body) | st.just([*range(len(body))]))
    assert run(JSONArrayDecoder(), body, cuts) == run(JSONArrayDecoder(), body, [])


def test_an_element_cut_short_is_the_trailing_text() -> None:
    events, trailing = run(JSONArrayDecoder(), b'[{"a": 1},\r\n{"b": "cut', [5])
    assert (events, trailing) == (['{"a": 1}'], '{"b": "cut')


@pytest.mark.parametrize(
    "last", [b'{"b": "cut', b'{"b": [1, ', b"[1, 2", b'"a string', b'{"b": {"c": 1}\r']
)
def test_a_last_line_cut_inside_its_value_is_the_trailing_text(last: bytes) -> None:
    """As an SSE event without its blank line, or an array element never ended."""
    body = b'{"a": 1}\n' + last
    cuts = list(range(len(body)))
    assert run(LineDecoder(), body, cuts) == (['{"a": 1}'], last.decode())


@pytest.mark.parametrize(
    ("last", "event"),
    [
        (b'{"b": 2}', '{"b": 2}'),
        (b'{"b": 2}\r', '{"b": 2}'),
        (b'{"b": "]}"}', '{"b": "]}"}'),
        (b"not json", "not json"),
        (b'{"b": 2}}', '{"b": 2}}'),
    ],
)
def test_a_last_line_without_its_newline_that_ended_its_value_is_an_event(
    last: bytes, event: str
) -> None:
    assert run(LineDecoder(), b'{"a": 1}\n' + last, []) == (['{"a": 1}', event], "")


def test_an_oversized_line_stops_the_framing_and_keeps_the_rest() -> None:
    decoder = LineDecoder(max_event_bytes=10)
    events = decoder.feed(b'{"a":1}\n{"b":"0123456789"}\n{"c":3}\n')
    assert [event.data for event in events] == ['{"a":1}']
    assert decoder.oversized
    assert decoder.close() == ([], '{"b":"0123456789"}\n{"c":3}\n')


def test_an_oversized_element_stops_the_framing() -> None:
    decoder = JSONArrayDecoder(max_event_bytes=10)
    events = decoder.feed(b'[{"a":1},{"b":"0123456789"')
    assert [event.data for event in events] == ['{"a":1}']
    assert decoder.oversized


def test_an_element_past_the_limit_is_cut_however_it_arrives() -> None:
    """An element of N + 1 bytes is over a limit of N, whole in one read or byte by byte;
    one of N bytes is not."""
    body = b'[{"a":"xyz"},{}]'  # the first element is 11 bytes
    for limit, cut in ((10, True), (11, False)):
        for cuts in ([], list(range(len(body)))):
            decoder = JSONArrayDecoder(max_event_bytes=limit)
            events, trailing = run(decoder, body, cuts)
            assert decoder.oversized == cut
            assert events == ([] if cut else ['{"a":"xyz"}', "{}"])
            assert trailing == ('{"a":"xyz"},{}]' if cut else "")


def test_untyped_bodies_are_told_by_their_first_bytes() -> None:
    assert sniffed_mode(b'{"a":1}\n{"b":2}\n', final=False) == "ndjson"
    assert sniffed_mode(b'{\n  "a": 1\n}', final=True) == "json"
    assert sniffed_mode(b'{"a":1}', final=False) is None  # a second line may still come
    assert sniffed_mode(b'{"a":1}', final=True) == "json"
    assert sniffed_mode(b"  [{", final=False) == "json-array"
    assert sniffed_mode(b"data: {}\n\n", final=False) == "sse"
