"""When things arrived: the field scanner (when each top-level argument field
became known) and the report's `timing` section."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.cli import CliRunner
from tests.helpers.docs_pages import docs_page, section
from tests.helpers.sse import sse
from tests.helpers.streaming import OBJECTS, STYLES, chunk, cut, serialise, tc
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core import fields as fields_module
from toolstream_tui.core.fields import FieldClock, FieldScanner, FieldTiming
from toolstream_tui.core.pieces import TextPieces
from toolstream_tui.core.strict_json import MAX_INTEGER_DIGITS, value_end
from toolstream_tui.core.timing import MAX_GAPS, gaps, stream_timing


def scanned(pieces: list[str]) -> list[tuple[str, int, int | None]]:
    """The fields once every piece has arrived (the last is fed as final)."""
    scanner = FieldScanner()
    for number, piece in enumerate(pieces, start=1):
        scanner.feed(piece, final=number == len(pieces))
    return [(field.key, field.named_at, field.complete_at) for field in scanner.fields]


def value_text(raw: str, named_at: int, complete_at: int, value: Any) -> str:
    """The value's text, from the colon after the key to the completing character:
    inclusive for strings and containers (their closing character), exclusive for
    numbers and literals (the comma or brace after them)."""
    colon = raw.index(":", named_at + 1)
    closes = isinstance(value, str | list | dict)
    return raw[colon + 1 : complete_at + 1 if closes else complete_at]


@given(obj=OBJECTS, style=st.sampled_from(STYLES), data=st.data())
def test_every_top_level_field_is_found_where_it_is_complete(
    obj: dict[str, Any], style: str, data: st.DataObject
) -> None:
    raw = serialise(obj, style)
    pieces = data.draw(cut(raw))
    fields = scanned(pieces)
    assert fields == scanned([raw]), "the result depends on how the text was cut"
    assert [key for key, _, _ in fields] == list(obj)
    for key, named_at, complete_at in fields:
        assert raw[named_at] == '"'
        assert complete_at is not None
        assert json.loads(value_text(raw, named_at, complete_at, obj[key])) == obj[key]


@given(obj=OBJECTS.filter(bool), data=st.data())
def test_a_field_is_not_complete_before_its_end_has_arrived(
    obj: dict[str, Any], data: st.DataObject
) -> None:
    raw = json.dumps(obj)
    whole = scanned([raw])
    # Anywhere, or right after a key's closing quote: the field is known from there.
    just_named = st.sampled_from([named_at + 1 for _, named_at, _ in whole])
    cut_at = data.draw(st.integers(0, len(raw)) | just_named)
    # A field is known once its key's closing quote (`named_at`) has arrived.
    arrived = [field for field in whole if field[1] < cut_at]
    for (key, named_at, complete_at), partial in zip(arrived, scanned([raw[:cut_at]]), strict=True):
        assert partial[0] == key
        assert partial[1] == named_at
        assert partial[2] == (
            complete_at if complete_at is not None and complete_at < cut_at else None
        )


def test_a_long_unfinished_value_is_tried_again_only_as_it_grows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Following a value of n characters cut into single characters costs a
    constant times n, not n tries of the decoder over it."""
    tries = []

    def counting(text: str, start: int) -> int:
        """What the decoder read: to the value's end, or to the text's if it failed."""
        try:
            stop = value_end(text, start)
        except ValueError:
            tries.append(len(text) - start)
            raise
        tries.append(stop - start)
        return stop

    monkeypatch.setattr(fields_module, "value_end", counting)
    raw = '{"rows": [' + ",".join(str(n) for n in range(20_000)) + '], "next": 1}'
    scanner = FieldScanner()
    for char in raw:
        scanner.feed(char)
    assert sum(tries) < 10 * len(raw), "the decoder read the value far more than a few times"
    scanner.feed("", final=True)  # the call is over: what waited is settled now
    assert [field.key for field in scanner.fields] == ["rows", "next"]
    assert scanner.fields[0].complete_at == raw.index("]")


@given(obj=OBJECTS, style=st.sampled_from(STYLES), long_value=st.integers(0, 3), data=st.data())
def test_a_long_value_read_element_by_element_gives_the_same_fields(
    obj: dict[str, Any], style: str, long_value: int, data: st.DataObject
) -> None:
    """Past `LONG_VALUE` characters, an unfinished value is read one element at a
    time (here, nearly every value): the fields are those of the whole text."""
    raw = serialise(obj, style)
    pieces = data.draw(cut(raw))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fields_module, "LONG_VALUE", long_value)
        assert scanned(pieces) == scanned([raw])


def test_a_long_value_is_not_kept_while_it_streams() -> None:
    record = '{"id": 12345, "tags": ["a", "b"], "text": "' + "x\\n" * 40 + '"}'
    raw = '{"records": [' + ",".join([record] * 5_000) + '], "next": 1}'
    piece = 100
    scanner = FieldScanner()
    kept = []
    for start in range(0, len(raw), piece):
        scanner.feed(raw[start : start + piece])
        kept.append(scanner.kept_chars)
    scanner.feed("", final=True)
    # A value is tried again once it has grown by half: held to 1.5 LONG_VALUE.
    assert max(kept) <= 2 * fields_module.LONG_VALUE < len(raw) // 4
    assert [(field.key, field.complete_at) for field in scanner.fields] == [
        ("records", raw.rindex("], ")),
        ("next", len(raw) - 1),
    ]


def test_not_an_object_and_garbage_give_no_fields() -> None:
    assert scanned(['[{"a": 1}, ', '{"b": 2}]']) == []
    assert scanned(["garbage } ] , : \\", '"x']) == []


def test_an_escape_cut_in_half_waits_for_its_second_character() -> None:
    assert scanned(['{"a\\', '"b": 1}']) == [('a"b', 6, 10)]


def pieces_of(*fragments: tuple[str, float]) -> TextPieces:
    pieces = TextPieces()
    for number, (text, t) in enumerate(fragments, start=1):
        pieces.append(text, number, t)
    return pieces


def test_field_clock_turns_offsets_into_arrival_times() -> None:
    pieces = pieces_of(('{"ci', 0.1), ('ty": "B', 0.2))
    clock = FieldClock()
    clock.follow(pieces)
    pieces.append('eijing"', 3, 0.3)
    pieces.append(', "days": 3', 4, 0.4)
    clock.follow(pieces)
    assert [(f.key, f.named, f.complete) for f in clock.timings()] == [
        ("city", 0.2, 0.3),
        ("days", 0.4, None),  # a number is complete only when what follows it arrives
    ]
    pieces.append("}", 5, 0.5)
    clock.follow(pieces)
    assert clock.timings()[1].complete == 0.5


def test_field_clock_tells_what_was_known_after_the_first_characters() -> None:
    """A display stepping through a stream asks what was known at an earlier moment."""
    pieces = pieces_of(('{"city": "B', 0.1), ('eijing", "da', 0.2), ('ys": 3}', 0.3))
    clock = FieldClock()
    clock.follow(pieces)
    first = pieces.length_upto(1)
    second = pieces.length_upto(2)
    assert [(f.key, f.complete) for f in clock.timings(length=first)] == [("city", None)]
    assert [(f.key, f.complete) for f in clock.timings(length=second)] == [("city", 0.2)]
    assert clock.count_upto(second) == 1 and clock.count_upto(2) == 0
    assert [(f.key, f.complete) for f in clock.timings()] == [("city", 0.2), ("days", 0.3)]


@given(st.lists(st.sampled_from(['$.a = "x" …\n', " [1, ", '"b": 2', "{", "}", ', "c"', ": 3"])))
def test_field_clock_reads_nothing_before_a_brace_and_finds_what_a_whole_read_finds(
    texts: list[str],
) -> None:
    """Text with no `{` cannot open an object: the clock waits for one, then reads
    everything, and finds what one read of all of it finds."""
    pieces = pieces_of(*((text, number / 10) for number, text in enumerate(texts, start=1)))
    followed = FieldClock()
    partial = TextPieces()
    for number, text in enumerate(texts, start=1):
        partial.append(text, number, number / 10)
        followed.follow(partial)
    whole = FieldClock()
    whole.follow(pieces, final=True)
    followed.follow(partial, final=True)
    assert followed.timings() == whole.timings()
    if not any("{" in text for text in texts):
        assert followed.scanner.kept_chars == 0  # nothing was read


def test_gaps_are_silences_over_the_threshold() -> None:
    found = gaps([0.2, 0.3, 1.8, 1.9, 3.5], threshold=1.0, start=0.1)
    assert [(gap.after, gap.start, round(gap.seconds, 6)) for gap in found] == [
        (2, 0.3, 1.5),
        (4, 1.9, 1.6),
    ]


READS = [
    (0.2, sse(chunk(role="assistant", content="Let"))),
    (0.3, sse(chunk(content=" me check."))),
    (1.8, sse(chunk(tc(0, "call_1", "get_weather", "")))),
    (1.9, sse(chunk(tc(0, args='{"city"')))),
    (3.5, sse(chunk(tc(0, args=': "Oslo", "days": 3}')))),
    (3.6, sse(chunk(finish="tool_calls"), "[DONE]")),
]


def test_the_report_times_every_milestone_of_a_stream() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream", t=0.1)
    for t, body in READS:
        session.feed(body, t)
    session.close(3.6)
    timing = build_report(session.state)["timing"]
    assert {key: timing[key] for key in list(timing)[:8]} == {
        "response": 0.1,
        "first_byte": 0.2,
        "first_text": 0.2,
        "first_tool_name": 1.8,
        "first_argument_byte": 1.9,
        "first_usable_field": 3.5,
        "finish": 3.6,
        "last_byte": 3.6,
    }
    assert timing["text"] == {"deltas": 2, "chars": 13, "seconds": 0.1, "deltas_per_second": 10.0}
    assert timing["stalls"] == [
        {"after": 2, "start": 0.3, "seconds": 1.5},
        {"after": 4, "start": 1.9, "seconds": 1.6},
    ]
    (call,) = timing["calls"]
    assert call["started"] == call["named"] == 1.8
    assert (call["first_fragment"], call["last_fragment"], call["fragments"]) == (1.9, 3.5, 2)
    assert call["gaps"] == [{"after": 1, "start": 1.9, "seconds": 1.6}]
    assert call["fields"] == [
        {"key": "city", "named": 1.9, "complete": 3.5},
        {"key": "days", "named": 3.5, "complete": 3.5},
    ]
    assert call["first_usable_field"] == 3.5


def test_a_name_that_arrives_late_is_timed_when_it_arrives() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream", t=0.0)
    session.feed(sse(chunk(tc(0, "call_1", None, '{"a":'))), 0.5)
    session.feed(sse(chunk(tc(0, None, "late_name", " 1}"))), 2.0)
    session.feed(sse(chunk(finish="tool_calls"), "[DONE]"), 2.1)
    session.close(2.1)
    (call,) = build_report(session.state)["timing"]["calls"]
    assert (call["started"], call["named"]) == (0.5, 2.0)


def test_the_stall_threshold_is_the_sessions() -> None:
    session = StreamSession("test", stall_threshold=0.05)
    session.open(200, "text/event-stream", t=0.1)
    for t, body in READS:
        session.feed(body, t)
    session.close(3.6)
    timing = build_report(session.state)["timing"]
    assert timing["stall_threshold"] == 0.05
    assert [stall["after"] for stall in timing["stalls"]] == [0, 1, 2, 3, 4, 5]


def test_the_timing_values_are_typed_and_to_the_millisecond() -> None:
    """The screen reads these values and the report prints them: both say 0.123."""
    session = StreamSession("test")
    session.open(200, "text/event-stream", t=0.10004)
    session.feed(sse(chunk(tc(0, "call_1", "get_weather", '{"city": "Oslo"'))), 0.12345)
    session.feed(sse(chunk(tc(0, args="}")), chunk(finish="tool_calls"), "[DONE]"), 0.2006)
    session.close(0.2006)
    timing = stream_timing(session.state)
    assert (timing.response, timing.first_byte, timing.last_byte) == (0.1, 0.123, 0.201)
    (call,) = timing.calls
    assert (call.started, call.named, call.first_fragment, call.last_fragment) == (
        0.123,
        0.123,
        0.123,
        0.201,
    )
    assert call.fields == (FieldTiming("city", 0.123, 0.123),)
    assert (call.first_usable_field, timing.first_usable_field) == (0.123, 0.123)
    (reported,) = build_report(session.state)["timing"]["calls"]
    assert reported["fields"] == [{"key": "city", "named": 0.123, "complete": 0.123}]


def test_a_limping_stream_lists_the_first_silences_and_counts_them_all() -> None:
    session = StreamSession("test", stall_threshold=0.01)
    session.open(200, "text/event-stream", t=0.0)
    session.feed(sse(chunk(tc(0, "call_1", "get_weather", "["))), 0.0)
    limps = MAX_GAPS + 20
    for number in range(1, limps + 1):
        session.feed(sse(chunk(tc(0, args="1,"))), number * 0.1)
    timing = stream_timing(session.state)
    (call,) = timing.calls
    assert (timing.stalls_total, call.gaps_total) == (limps, limps)
    assert [stall.after for stall in timing.stalls] == list(range(1, MAX_GAPS + 1))
    assert [gap.after for gap in call.gaps] == list(range(1, MAX_GAPS + 1))
    reported = build_report(session.state)["timing"]
    assert len(reported["stalls"]) == len(reported["calls"][0]["gaps"]) == MAX_GAPS
    assert reported["stalls"][-1] == {"after": MAX_GAPS, "start": 9.9, "seconds": 0.1}


def test_the_documented_report_example_has_the_timing_sections_keys_in_order() -> None:
    documented = section(docs_page("headless.md"), "## The headless report")
    example = json.loads(documented.split("```json\n", 1)[1].split("```", 1)[0])["timing"]
    session = StreamSession("test")
    session.open(200, "text/event-stream", t=0.1)
    for t, body in READS:
        session.feed(body, t)
    session.close(3.6)
    timing = build_report(session.state)["timing"]
    assert list(example) == list(timing)
    assert list(example["text"]) == list(timing["text"])
    assert list(example["calls"][0]) == list(timing["calls"][0])
    assert list(example["calls"][0]["fields"][0]) == list(timing["calls"][0]["fields"][0])
    assert list(timing["stalls"][0]) == ["after", "start", "seconds"]


def test_headless_reports_timing_with_the_threshold_asked_for(cli: CliRunner) -> None:
    """weather paces its events 80 ms apart: every pause is a stall over 50 ms."""
    result = cli("--headless", "--scenario", "weather", "--stall-threshold", "0.05")
    timing = json.loads(result.stdout)["timing"]
    assert timing["stall_threshold"] == 0.05
    assert timing["stalls_total"] >= 3  # reads may coalesce on a busy machine, never split
    (call,) = timing["calls"]
    assert call["gaps_total"] >= 2
    assert [field["key"] for field in call["fields"]] == ["location"]
    assert timing["first_byte"] <= timing["first_argument_byte"] <= timing["finish"]


def end_or_error(decode: Any, text: str) -> int | tuple[str, int]:
    try:
        return decode(text)
    except json.JSONDecodeError as exc:
        return exc.msg, exc.pos


@given(OBJECTS, st.sampled_from(STYLES), st.data())
def test_a_value_is_passed_over_where_json_finds_its_end(
    obj: dict[str, Any], style: str, data: st.DataObject
) -> None:
    text = serialise(obj, style)
    cut_at = data.draw(st.integers(min_value=1, max_value=len(text)))
    text = text[:cut_at] + data.draw(st.sampled_from(["", " ", ",", "}{", "x"]))
    expected = end_or_error(lambda t: json.JSONDecoder().raw_decode(t)[1], text)
    assert end_or_error(value_end, text) == expected


def test_a_field_holding_a_long_integer_is_passed_over() -> None:
    digits = "9" * (MAX_INTEGER_DIGITS + 1)  # past what the core lets Python print
    fields = scanned(['{"n": [', digits, '], "b": 1}'])
    assert [key for key, _, _ in fields] == ["n", "b"]
    assert fields[0][2] == len('{"n": [') + len(digits)
