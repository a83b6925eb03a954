"""Unit tests of the incremental SSE decoder: one framing rule per test."""

from __future__ import annotations

import itertools
import sys
import tracemalloc
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolstream_tui.core import sse
from toolstream_tui.core.sse import BOM, SSEComment, SSEDecoder, SSEEvent


def decode(*pieces: bytes) -> tuple[list[SSEEvent | SSEComment], str]:
    """Feed the pieces in order, then close; return every item and the tail."""
    decoder = SSEDecoder()
    items: list[SSEEvent | SSEComment] = []
    for piece in pieces:
        items.extend(decoder.feed(piece))
    rest, tail = decoder.close()
    items.extend(rest)
    return items, tail


def events(*pieces: bytes) -> list[SSEEvent]:
    items, _ = decode(*pieces)
    return [item for item in items if isinstance(item, SSEEvent)]


def datas(*pieces: bytes) -> list[str]:
    return [event.data for event in events(*pieces)]


# -- line ends ----------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_each_line_end_frames_events(eol: bytes) -> None:
    body = b"data: one" + eol + eol + b"data: two" + eol + eol
    assert decode(body) == (
        [
            SSEEvent(number=1, event="", data="one", id=None, retry=None),
            SSEEvent(number=2, event="", data="two", id=None, retry=None),
        ],
        "",
    )


def test_mixed_line_ends_in_one_stream() -> None:
    body = b"data: a\r\ndata: b\rdata: c\n\r\n" + b"data: d\r\r" + b"data: e\n\n"
    assert datas(body) == ["a\nb\nc", "d", "e"]


def test_crlf_split_across_reads_is_one_line_end() -> None:
    # If the LF after a read-final CR counted as a second line end, the blank
    # line would dispatch "a" alone before "b" arrived.
    assert datas(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == ["a\nb"]


def test_crlf_split_survives_an_empty_read_between_cr_and_lf() -> None:
    assert datas(b"data: a\r", b"", b"\ndata: b\r\n\r\n") == ["a\nb"]


def test_cr_at_end_of_read_followed_by_cr_is_a_blank_line() -> None:
    assert datas(b"data: a\r", b"\rdata: b\r\r") == ["a", "b"]


def test_lf_after_cr_is_only_swallowed_once() -> None:
    # "\r" + "\n" is one line end; the next "\n" is a real blank line.
    assert datas(b"data: a\r", b"\n", b"\n") == ["a"]


# -- comments -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (b": keep-alive", " keep-alive"),
        (b": OPENROUTER PROCESSING", " OPENROUTER PROCESSING"),
        (b":ping", "ping"),
        (b":", ""),
    ],
)
def test_comment_lines_come_out_as_comments(line: bytes, text: str) -> None:
    assert decode(line + b"\n\n") == ([SSEComment(text)], "")


def test_comment_inside_an_event_does_not_split_it() -> None:
    items, tail = decode(b"data: a\n: keep-alive\ndata: b\n\n")
    assert items == [
        SSEComment(" keep-alive"),
        SSEEvent(number=1, event="", data="a\nb", id=None, retry=None),
    ]
    assert tail == ""


def test_comment_does_not_count_as_a_dispatched_event() -> None:
    decoder = SSEDecoder()
    decoder.feed(b": hi\n\n: there\n\ndata: x\n\n")
    assert decoder.dispatched == 1


# -- fields -------------------------------------------------------------------


def test_event_field_sets_the_type_for_one_event_only() -> None:
    got = events(b"event: message_delta\ndata: {}\n\ndata: {}\n\n")
    assert [event.event for event in got] == ["message_delta", ""]


def test_id_field_is_kept_as_the_last_event_id() -> None:
    got = events(b"id: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\n")
    assert [event.id for event in got] == ["7", "7", "8"]


def test_id_containing_nul_is_ignored() -> None:
    got = events(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert [event.id for event in got] == ["1", "1"]


def test_retry_field_with_digits_is_parsed() -> None:
    got = events(b"retry: 3000\ndata: a\n\ndata: b\n\n")
    assert [event.retry for event in got] == [3000, None]


@pytest.mark.parametrize("value", ["soon", "12s", "-5", "1.5", ""])
def test_retry_field_that_is_not_ascii_digits_is_ignored(value: str) -> None:
    got = events(f"retry: {value}\ndata: a\n\n".encode())
    assert [(event.data, event.retry) for event in got] == [("a", None)]


def test_retry_with_unicode_superscript_digit_is_ignored_not_a_crash() -> None:
    # "²".isdigit() is True but int("²") raises; a stray byte sequence from the
    # server must not crash the decoder.
    got = events("retry: \u00b2\ndata: a\n\n".encode())
    assert [(event.data, event.retry) for event in got] == [("a", None)]


def test_unknown_field_is_ignored() -> None:
    assert datas(b"foo: bar\ndata: a\n\n") == ["a"]


# -- data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "data"),
    [
        (b"data: x", "x"),
        (b"data:x", "x"),
        (b"data:  x", " x"),  # only one space is removed
        (b"data: ", ""),
        (b"data:", ""),
        (b"data", ""),  # a field name with no colon has an empty value
        (b"data: a: b", "a: b"),
    ],
)
def test_data_with_or_without_the_space(line: bytes, data: str) -> None:
    assert datas(line + b"\n\n") == [data]


def test_multi_line_data_is_joined_with_lf() -> None:
    assert datas(b'data: {\ndata:   "a": 1\ndata: }\n\n') == ['{\n  "a": 1\n}']


def test_empty_data_lines_keep_their_line_breaks() -> None:
    assert datas(b"data:\ndata:\ndata: x\n\n") == ["\n\nx"]


def test_blank_lines_without_fields_dispatch_nothing() -> None:
    assert decode(b"\n\n\r\n\r\r") == ([], "")


def test_event_numbers_count_dispatched_events_from_one() -> None:
    got = events(b"data: a\n\n\n\n: c\n\ndata: b\n\ndata: c\n\n")
    assert [event.number for event in got] == [1, 2, 3]


# -- UTF-8 and BOM ------------------------------------------------------------


def test_utf8_characters_split_across_reads() -> None:
    body = "data: é€😀 ünï\n\n".encode()
    assert datas(*(body[i : i + 1] for i in range(len(body)))) == ["é€😀 ünï"]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert datas(b"data: a\xffb\n\n") == ["a\ufffdb"]


def test_bom_at_start_is_dropped() -> None:
    assert datas(b"\xef\xbb\xbfdata: a\n\n") == ["a"]


def test_bom_split_byte_by_byte_is_dropped() -> None:
    assert datas(b"\xef", b"\xbb", b"\xbf", b"data: a\n\n") == ["a"]


def test_bom_before_a_comment_is_dropped() -> None:
    items, _ = decode(b"\xef\xbb\xbf: hello\n\ndata: a\n\n")
    assert items[0] == SSEComment(" hello")


def test_bom_later_in_the_stream_is_data() -> None:
    assert datas("data: a\n\ndata: \ufeffb\n\n".encode()) == ["a", "\ufeffb"]


# -- end of stream ------------------------------------------------------------


def test_unterminated_last_event_is_not_dispatched_and_returned_as_tail() -> None:
    items, tail = decode(b"data: a\n\ndata: b")
    assert [item.data for item in items if isinstance(item, SSEEvent)] == ["a"]
    assert tail == "data: b"


def test_event_missing_only_its_blank_line_is_returned_as_tail() -> None:
    items, tail = decode(b'event: x\ndata: {"a":\ndata: 1}\n')
    assert items == []
    assert tail == 'event: x\ndata: {"a":\ndata: 1}'


def test_tail_keeps_partial_utf8_as_replacement() -> None:
    _, tail = decode(b"data: \xe2\x82")
    assert tail.startswith("data: ")
    assert tail != "data: "


def test_close_after_complete_stream_has_no_tail() -> None:
    assert decode(b"data: a\n\n") == (
        [SSEEvent(number=1, event="", data="a", id=None, retry=None)],
        "",
    )


def test_close_after_trailing_cr_dispatches_nothing_more() -> None:
    items, tail = decode(b"data: a\r\r")
    assert [item.data for item in items if isinstance(item, SSEEvent)] == ["a"]
    assert tail == ""


# -- split invariance ---------------------------------------------------------

SAMPLE = (
    "\ufeff: OPENROUTER PROCESSING\r\n\r\n"
    'retry: 1500\r\nid: ev-1\r\nevent: delta\r\ndata: {"a":\r\ndata: "é€😀"}\r\n\r\n'
    ": keep-alive\r\r"
    "data:no-space\rdata: ünï\r\r"
    "id: ev-2\ndata: [DONE]\n\n"
    "data: tail 😀"
).encode()


def test_sample_decodes_as_expected() -> None:
    items, tail = decode(SAMPLE)
    assert items == [
        SSEComment(" OPENROUTER PROCESSING"),
        SSEEvent(number=1, event="delta", data='{"a":\n"é€😀"}', id="ev-1", retry=1500),
        SSEComment(" keep-alive"),
        SSEEvent(number=2, event="", data="no-space\nünï", id="ev-1", retry=None),
        SSEEvent(number=3, event="", data="[DONE]", id="ev-2", retry=None),
    ]
    assert tail == "data: tail 😀"


def test_one_byte_at_a_time_equals_one_read() -> None:
    whole = decode(SAMPLE)
    assert decode(*(SAMPLE[i : i + 1] for i in range(len(SAMPLE)))) == whole


def test_every_two_piece_split_equals_one_read() -> None:
    whole = decode(SAMPLE)
    for cut in range(len(SAMPLE) + 1):
        assert decode(SAMPLE[:cut], SAMPLE[cut:]) == whole, f"split at byte {cut}"


# -- the event size limit ---------------------------------------------------------


def limited(limit: int, *pieces: bytes) -> tuple[list[SSEEvent | SSEComment], bool, str]:
    """Feed the pieces to a decoder with `max_event_bytes=limit`: the items, whether it
    stopped at an oversized event, and what close() handed back."""
    items, oversized, tail, _ = framed(limit, list(pieces))
    return items, oversized, tail


def test_an_oversized_event_arriving_whole_is_held_back_with_what_follows() -> None:
    body = b"data: one\n\n" + b"data: " + b"x" * 20 + b"\n\ndata: three\n\n"
    items, oversized, tail = limited(20, body)
    assert oversized
    assert items == [SSEEvent(number=1, event="", data="one", id=None, retry=None)]
    assert tail == "data: " + "x" * 20 + "\n\ndata: three\n\n"  # the rest as it came


def test_an_event_exactly_at_the_limit_passes() -> None:
    event = b"data: " + b"x" * 14  # 20 bytes
    items, oversized, tail = limited(20, event + b"\n\n")
    assert not oversized
    assert [item.data for item in items if isinstance(item, SSEEvent)] == ["x" * 14]
    assert tail == ""


def test_an_event_exactly_at_the_limit_arriving_a_byte_at_a_time_passes() -> None:
    body = b"data: " + b"x" * 14 + b"\n\n"  # an event of 20 bytes
    for limit, passes in [(20, True), (19, False)]:
        _, oversized, tail = limited(limit, *(body[i : i + 1] for i in range(len(body))))
        assert (oversized, tail) == (
            (False, "") if passes else (True, "data: " + "x" * 14 + "\n\n")
        )


def test_a_stray_blank_line_is_not_part_of_the_next_event_however_the_reads_are_cut() -> None:
    # Three LFs are an event's end and a blank line of their own, wherever a read
    # ends; the next event is its own 10 bytes.
    body = b"data: aaaa\n\n\ndata: bbbb\n\n"
    whole = limited(10, body)
    assert whole == (
        [
            SSEEvent(number=1, event="", data="aaaa", id=None, retry=None),
            SSEEvent(number=2, event="", data="bbbb", id=None, retry=None),
        ],
        False,
        "",
    )
    for cut in range(len(body) + 1):
        assert limited(10, body[:cut], body[cut:]) == whole, f"split at byte {cut}"


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=6),
    limit=st.integers(min_value=1, max_value=50),
    eol=st.sampled_from([b"\n", b"\r", b"\r\n"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_the_event_limit_does_not_depend_on_where_reads_are_cut(
    sizes: list[int], limit: int, eol: bytes, cuts: list[int]
) -> None:
    body = b"".join(b"data: " + b"y" * size + eol + eol for size in sizes)
    bounds = sorted({min(cut, len(body)) for cut in cuts} | {0, len(body)})
    pieces = [body[start:end] for start, end in itertools.pairwise(bounds)]
    assert limited(limit, *pieces) == limited(limit, body)
    _, oversized, _ = limited(limit, body)
    assert oversized == any(len(b"data: ") + size > limit for size in sizes)


# -- the fast paths ---------------------------------------------------------------------

LINE_BYTES = st.binary(max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b)


@given(LINE_BYTES, LINE_BYTES)
def test_an_event_line_then_a_data_line_decodes_as_the_general_rules_do(
    kind: bytes, data: bytes
) -> None:
    """`event: X` then `data: Y` takes a shortcut; an ignored field between them
    sends the same event through the line-by-line rules."""
    shortcut = events(b"event: " + kind + b"\ndata: " + data + b"\n\n")
    general = events(b"event: " + kind + b"\nignored\ndata: " + data + b"\n\n")
    assert shortcut == general


def test_a_read_says_whether_its_events_hold_a_run_of_19_digits() -> None:
    decoder = SSEDecoder()
    decoder.feed(b'data: {"n": 123456789012345678}\n\n')  # 18 digits
    assert decoder.long_digit_runs is False
    decoder.feed(b'data: {"n": 1234567890')  # the run arrives in two reads,
    assert decoder.feed(b'123456789}\n\ndata: {"m": 1}\n\n')  # dispatched with the second
    assert decoder.long_digit_runs is True
    decoder.feed(b'data: {"m": 2}\n\n')
    assert decoder.long_digit_runs is False
    decoder.close()
    assert decoder.long_digit_runs is True  # not looked at


# -- against the rules applied line by line ------------------------------------------


def reference(body: bytes, limit: int) -> tuple[list[SSEEvent | SSEComment], bool, str, bool]:
    """The event-stream rules applied to a whole body line by line, written apart
    from `SSEDecoder` (which works on bytes, a read at a time, and on long events a
    piece at a time): the items, whether an event was longer than `limit` (its
    lines, comment lines too, and the LFs between them), the text of the lines not
    dispatched, and whether those were not UTF-8."""
    text = body.removeprefix(BOM).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    *lines, partial = text.split(b"\n")
    items: list[SSEEvent | SSEComment] = []
    number, last_id = 0, None
    run: list[bytes] = []
    for position, line in enumerate(lines):
        if line:
            run.append(line)
        elif run and len(b"\n".join(run)) > limit:  # the rest is kept as it came
            text, invalid = _undispatched(run, items)
            rest, rest_valid = _text(b"\n" + b"\n".join([*lines[position:], partial]))
            return (items, True, text + rest, invalid or not rest_valid)
        elif run:
            number, last_id = _dispatch_run(run, number, last_id, items)
            run = []
    run += [partial] if partial else []
    oversized = len(b"\n".join(run)) > limit
    return (items, oversized, *_undispatched(run, items))


def _text(line: bytes) -> tuple[str, bool]:
    try:
        return line.decode(), True
    except UnicodeDecodeError:
        return line.decode(errors="replace"), False


def _dispatch_run(
    run: list[bytes], number: int, last_id: str | None, items: list[SSEEvent | SSEComment]
) -> tuple[int, str | None]:
    kind, retry, valid = "", None, True
    datas: list[str] = []
    for line in run:
        text, line_valid = _text(line)
        valid = valid and line_valid
        if text.startswith(":"):
            items.append(SSEComment(text[1:]))
            continue
        name, colon, value = text.partition(":")
        value = value[1:] if colon and value.startswith(" ") else value
        if name == "data":
            datas.append(value)
        elif name == "event":
            kind = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    if datas:
        number += 1
        items.append(SSEEvent(number, kind, "\n".join(datas), last_id, retry, valid))
    return number, last_id


def _undispatched(lines: list[bytes], items: list[SSEEvent | SSEComment]) -> tuple[str, bool]:
    kept: list[str] = []
    valid = True
    for line in lines:
        text, line_valid = _text(line)
        valid = valid and line_valid
        if text.startswith(":"):
            items.append(SSEComment(text[1:]))
        elif text:
            kept.append(text)
    return "\n".join(kept), not valid


def framed(limit: int, pieces: list[bytes]) -> tuple[list[SSEEvent | SSEComment], bool, str, bool]:
    """As `reference` says it, from `SSEDecoder` fed `pieces`."""
    decoder = SSEDecoder(max_event_bytes=limit)
    items: list[SSEEvent | SSEComment] = []
    for piece in pieces:
        items.extend(decoder.feed(piece))
    oversized = decoder.oversized
    rest, tail = decoder.close()
    return items + rest, oversized, tail, decoder.invalid_tail


FIELD_LINES = [b"data: ", b"data:", b"data", b"event: ", b"id: ", b"retry: ", b": ", b":", b"x: "]
VALUES = [
    b"",
    b"a",
    b"42",
    b"a: b",
    b" x",
    b"\x00",
    b"\xff",
    b"\xe2\x82",
    "é😀".encode(),
    b"y" * 30,
]
SSE_LINE = st.one_of(
    st.just(b""),
    st.builds(bytes.__add__, st.sampled_from(FIELD_LINES), st.sampled_from(VALUES)),
)
SSE_BODY = st.builds(
    lambda start, lines, tail: start + b"".join(lines) + tail,
    st.sampled_from([b"", BOM]),
    st.lists(
        st.builds(bytes.__add__, SSE_LINE, st.sampled_from([b"\n", b"\r", b"\r\n"])),
        max_size=40,
    ),
    st.sampled_from([b"", b"data: z", b": c", b"\r", b"\xe2"]),
)


@settings(max_examples=400, deadline=None)
@given(
    body=SSE_BODY,
    cuts=st.lists(st.integers(min_value=0, max_value=800), max_size=10),
    limit=st.one_of(st.just(sys.maxsize), st.integers(min_value=3, max_value=120)),
    piece_bytes=st.sampled_from([1, 5, 32, sse.PIECE_BYTES]),
)
def test_any_body_in_any_reads_frames_as_the_rules_line_by_line_say(
    body: bytes, cuts: list[int], limit: int, piece_bytes: int
) -> None:
    """Small pieces send short events down the paths long ones take (held a piece at
    a time, their comment lines handed on early, long lines decoded alone)."""
    bounds = sorted({min(cut, len(body)) for cut in cuts} | {0, len(body)})
    pieces = [body[start:end] for start, end in itertools.pairwise(bounds)]
    with mock.patch.object(sse, "PIECE_BYTES", piece_bytes):
        assert framed(limit, pieces) == reference(body, limit)


def test_a_long_event_of_long_and_short_lines_frames_as_the_rules_line_by_line_say() -> None:
    long_line = b"data: " + "é".encode() * sse.PIECE_BYTES
    event = b"id: 7\n" + long_line + b"\n" + b"data:\n: c\nx\n" * 3000 + b":" + long_line
    body = event + b"\n\n" + event + b"\n"
    for read in (len(body), 4096, 1000):
        pieces = [body[start : start + read] for start in range(0, len(body), read)]
        assert framed(sys.maxsize, pieces) == reference(body, sys.maxsize), f"reads of {read}"


def test_comment_lines_handed_on_before_their_event_ends_still_say_if_it_was_utf8() -> None:
    with mock.patch.object(sse, "PIECE_BYTES", 4):  # so this event is a long one
        decoder = SSEDecoder()
        assert decoder.feed(b"data: a\n:\xff\ndata: b\n") == [SSEComment("\ufffd")]
        assert decoder.feed(b"\n") == [SSEEvent(1, "", "a\nb", None, None, valid_utf8=False)]


# -- memory while reading an event --------------------------------------------------

READ_BYTES = 64 * 1024  # as a replay reads
LINE_SHAPES = {
    "comment": b":\n",
    "keep-alive": b": keep-alive\n",
    "empty data": b"data:\n",
    "data with no colon": b"data\n",
    "short data": b"data: a\n",
    "unknown field": b"x\n",
    "id": b"id: 1\n",
    "event": b"event: e\n",
    "retry": b"retry: 1\n",
}


def peak_framing(line: bytes, event_bytes: int, limit: int) -> int:
    """The most bytes allocated while framing an event of `event_bytes` made of
    `line` repeated (after a data line, so that it is dispatched), read as a replay
    reads it, up to the end or to the read it passes `limit` in (a session stops
    there), then closing."""
    body = b"data: x\n" + line * (event_bytes // len(line)) + b"\n"
    reads = [body[start : start + READ_BYTES] for start in range(0, len(body), READ_BYTES)]
    del body
    decoder = SSEDecoder(max_event_bytes=limit)
    tracemalloc.start()
    try:
        for read in reads:
            decoder.feed(read)  # the items are handed on, and let go, read by read
            if decoder.oversized:
                break
        decoder.close()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("line", LINE_SHAPES.values(), ids=LINE_SHAPES.keys())
@pytest.mark.parametrize("passes_the_limit", [False, True], ids=["within", "past the limit"])
def test_each_byte_more_of_an_event_costs_at_most_three_bytes_more_however_short_its_lines(
    line: bytes, passes_the_limit: bool
) -> None:
    """What costs the same whatever the event's size (the comment lines a read hands
    on, one piece of the event decoded) cancels out. One object per line, as it was,
    cost some 50 bytes for a line of 2."""
    small = 128 * 1024  # past READ_BYTES and PIECE_BYTES: their costs cancel too
    peaks = []
    for held in (small, 2 * small):
        event_bytes, limit = (2 * held, held) if passes_the_limit else (held, sys.maxsize)
        peaks.append(peak_framing(line, event_bytes, limit))
    assert peaks[1] - peaks[0] <= 3 * small, f"peaks {peaks} framing {small} and {2 * small}"
