"""Valid JSON numbers are read exactly, however long (up to a documented bound),
and every output prints them; an index that is an integer but cannot be a lane
number is flagged, and the call still gets a lane."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.sse import sse
from tests.helpers.streaming import chunk, run, tc
from toolstream_tui.app.screenshot import render_screenshot
from toolstream_tui.app.widgets.arguments_tree import value_label
from toolstream_tui.commands.diff import diff_recordings
from toolstream_tui.core import StreamSession, build_report, strict_json
from toolstream_tui.core.dialects.base import compact_json
from toolstream_tui.core.report import printable_json
from toolstream_tui.core.strict_json import MAX_INTEGER_DIGITS, loads, loads_envelope
from toolstream_tui.sources.base import BodyChunk, ResponseHead
from toolstream_tui.sources.recording import Tape, TapeSource
from toolstream_tui.watching.bundle import REPORT, write_bundle

NINES = "9" * 5000  # past Python's 4,300-digit guard
BIG = 10**5000 - 1  # the same number
DONE = "[DONE]"


def big_int_call(arguments: Any) -> bytes:
    """One call with these arguments (a string, or an object sent as JSON)."""
    return sse(chunk(tc(0, "call_1", "f", arguments)), chunk(finish="tool_calls"), DONE)


# -- the decoder ------------------------------------------------------------------------


@pytest.mark.parametrize("text", [NINES, f"-{NINES}", f'{{"a": [1, {NINES}]}}'])
def test_an_integer_of_5000_digits_is_read_exactly(text: str) -> None:
    expected = json.loads(text)  # this process allows it: importing the core raised the guard
    assert loads(text) == expected
    assert loads(text.encode()) == expected
    assert loads_envelope(text) == expected


def test_integers_up_to_the_bound_are_read_and_longer_ones_refused_clearly() -> None:
    longest = "7" * MAX_INTEGER_DIGITS
    assert loads(f"[-{longest}]") == [-int(longest)]
    with pytest.raises(ValueError, match=f"{MAX_INTEGER_DIGITS + 1} digits is longer than"):
        loads(longest + "7")


@pytest.mark.parametrize("digits", [18, 19, 20, 40])
@pytest.mark.parametrize("window_at", [0, 1, 9, 18, 19, 30])
def test_a_long_integer_is_read_exactly_wherever_it_crosses_a_window(
    digits: int, window_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integer past 64 bits must not reach orjson, which keeps only a float of
    it; the search for long digit runs reads the text a window at a time."""
    monkeypatch.setattr(strict_json, "_WINDOW", 32)
    number = "18446744073709551617123456789012345678"[:digits]  # 2**64 + 1, and on
    text = f'{{"é": "{"x" * window_at}", "n": {number}}}'
    for given in (text, text.encode()):
        assert strict_json.has_long_digit_run(given) == (digits >= 19)
        assert loads(given) == {"é": "x" * window_at, "n": int(number)}
    assert not strict_json.has_long_digit_run("١٢٣٤٥٦٧٨٩٠١٢٣٤٥٦٧٨٩٠")  # not JSON digits


def test_a_huge_float_literal_is_still_refused_and_a_long_mantissa_read() -> None:
    with pytest.raises(ValueError, match="out of range"):
        loads("1e400")
    assert loads("0." + "3" * 5000) == pytest.approx(1 / 3)


# -- through the core and every output ---------------------------------------------------


def test_a_5000_digit_integer_in_the_arguments_text_parses() -> None:
    r = run(big_int_call(f'{{"n": {NINES}}}'))
    assert r.code == 0
    assert r.calls[0]["arguments"] == {"n": BIG}
    assert r.calls[0]["arguments_raw"] == f'{{"n": {NINES}}}'
    assert json.loads(printable_json(r.report))["tool_calls"][0]["arguments"]["n"] == BIG


def test_a_5000_digit_integer_in_an_arguments_object_keeps_the_call() -> None:
    r = run(big_int_call({"n": BIG}))
    assert r.kinds == ["arguments-object"]  # not data-not-json: the chunk is valid JSON
    assert r.code == 0
    assert r.calls[0]["arguments"] == {"n": BIG}
    assert r.calls[0]["arguments_raw"] == compact_json({"n": BIG})


def test_every_output_prints_a_5000_digit_integer(cli: Any, tmp_path: Path) -> None:
    body = big_int_call({"n": BIG})
    recording = tmp_path / "big.sse"
    recording.write_bytes(body)
    result = cli("--headless", "--replay", str(recording), "--speed", "0")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tool_calls"][0]["arguments"] == {"n": BIG}
    # diff (against the same call with the number one larger)
    other = tmp_path / "other.sse"
    other.write_bytes(body.replace(str(BIG).encode(), str(BIG + 1).encode()))
    diff = json.loads(printable_json(diff_recordings(recording, other)))
    assert diff["lanes"][0]["arguments"] == [
        {"path": "$.n", "change": "changed", "a": BIG, "b": BIG + 1}
    ]
    # the bundle, its screen and the tree's label
    tape = Tape("big")
    tape.keep(ResponseHead(200, "text/event-stream", t=0.0))
    tape.keep(BodyChunk(body, 0.0))
    r = run(body)
    screen = render_screenshot(TapeSource(tape))
    write_bundle(tmp_path / "bundle", tape, r.session.state, screen)
    written = json.loads((tmp_path / "bundle" / REPORT).read_text(encoding="utf-8"))
    assert written["tool_calls"][0]["arguments"] == {"n": BIG}
    assert str(BIG)[:20] in value_label("n", BIG).plain


# -- indexes ------------------------------------------------------------------------------


def test_index_2_to_the_64_is_an_integer_out_of_range_and_keeps_its_lane() -> None:
    r = run(
        sse(
            chunk(tc(2**64, "call_a", "f", '{"a": ')),
            chunk(tc(2**64 + 1, "call_b", "g", "{}")),
            chunk(tc(2**64, args="1}")),  # a continuation finds its call by the exact index
            chunk(finish="tool_calls"),
            DONE,
        )
    )
    assert [(c["index"], c["id"], c["arguments"]) for c in r.calls] == [
        (0, "call_a", {"a": 1}),
        (1, "call_b", {}),
    ]
    out_of_range = [a for a in r.report["anomalies"] if a["kind"] == "index-out-of-range"]
    assert [(a["index"], a["count"]) for a in out_of_range] == [(0, 1), (1, 1)]
    assert f"index {2**64} is out of range" in out_of_range[0]["detail"]
    assert f"index {2**64 + 1} is out of range" in out_of_range[1]["detail"]
    assert r.kinds == ["index-out-of-range", "index-out-of-range"]
    assert r.code == 0


def test_index_minus_one_is_out_of_range_and_takes_the_next_free_lane() -> None:
    r = run(
        sse(
            chunk(tc(0, "call_a", "f", "{}")),
            chunk(tc(-1, "call_b", "g", '{"b": ')),
            chunk(tc(-1, args="2}")),
            chunk(tc(1, "call_c", "h", "{}")),
            chunk(finish="tool_calls"),
            DONE,
        )
    )
    assert [(c["index"], c["id"], c["arguments"]) for c in r.calls] == [
        (0, "call_a", {}),
        (1, "call_b", {"b": 2}),
        (2, "call_c", {}),
    ]
    assert r.kinds == ["index-out-of-range"]
    assert r.anomaly("index-out-of-range")["index"] == 1


def test_a_fractional_index_is_still_not_an_integer() -> None:
    r = run(sse(chunk(tc(0, "a", "f", "{}")), chunk(tc(1.5, "b", "g", "{}")), DONE))
    assert "index 1.5 is not an integer" in r.anomaly("index-missing")["detail"]


def test_anthropic_and_responses_indexes_out_of_range_take_a_free_lane() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    anthropic = [
        {"type": "message_start", "message": {"type": "message", "content": []}},
        {"type": "content_block_start", "index": -1, "content_block": block},
        {"type": "content_block_stop", "index": -1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    responses = [
        {"type": "response.output_item.added", "output_index": 2**64, "item": item},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{}"},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    for events, field in ((anthropic, "content block index -1"), (responses, "output_index")):
        r = run(sse(*events, named=True))
        assert [c["index"] for c in r.calls] == [0]
        assert r.anomaly("index-out-of-range")["index"] == 0
        assert field in r.anomaly("index-out-of-range")["detail"]


DEPTH_BOTH_READ = "[" * 500 + "]" * 500
DEPTH_ONLY_ORJSON_READS = "[" * 1010 + "]" * 1010
DEPTH_NONE_READS = "[" * 1100 + "]" * 1100


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, "é🚀", {"b": null}]}',
        '{"a": 1,}',
        '{"a": "\\ud83d"}',
        '{"a": NaN}',
        "[1e400]",
        DEPTH_BOTH_READ,
        DEPTH_ONLY_ORJSON_READS,
        DEPTH_NONE_READS,
    ],
    ids=["plain", "invalid", "lone-surrogate", "nan", "huge-float", "deep", "deeper", "too-deep"],
)
def test_a_text_too_long_for_orjson_reads_the_same(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read() -> Any:
        try:
            return printable_json(loads(text))  # nested lists compare by recursion: text does not
        except ValueError as exc:
            return type(exc), str(exc)

    expected = read()
    monkeypatch.setattr(strict_json, "ORJSON_MOST", 0)  # every text is "too long"
    assert read() == expected


@pytest.mark.parametrize("cut", [None, 40, 1])
def test_a_cohere_index_past_64_bits_is_exact_however_the_reads_are_cut(cut: int | None) -> None:
    """The framer looks for runs of 19 digits once per read (not per event): an index
    of 2**64 still finds its call, whichever read brings its digits."""
    big = 2**64
    start = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    delta = {"function": {"arguments": '{"a": 1}'}}
    events = [
        {"type": "tool-call-start", "index": big, "delta": {"message": {"tool_calls": start}}},
        {"type": "tool-call-delta", "index": big, "delta": {"message": {"tool_calls": delta}}},
        {"type": "tool-call-end", "index": big},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ]
    body = sse(*events, named=True)
    reads = [body] if cut is None else [body[at : at + cut] for at in range(0, len(body), cut)]
    session = StreamSession("test", live=False)
    session.open(200, "text/event-stream")
    for read in reads:
        session.feed(read, 0.1)
    session.close(0.2)
    report = build_report(session.state)
    assert [(c["name"], c["arguments"]) for c in report["tool_calls"]] == [("f", {"a": 1})]
    assert [a["kind"] for a in report["anomalies"]] == ["index-out-of-range"]
