"""The timeline screen (`w`): the bins and sparklines it draws, opening and
closing it in the app, and pictures of a replay whose arrival times are known."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text

from tests.helpers.apps import frozen_clock, make_app, settled_then, wait_settled
from tests.helpers.sse import sse
from tests.helpers.streaming import chunk, tc
from tests.helpers.waiting import until
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.screens.timeline import (
    ArrivalStrip,
    Chart,
    TimelineFigures,
    TimelineScreen,
    axis_end,
    axis_rows,
    bin_counts,
    bin_index,
    call_label,
    columns,
    draw_strip,
    field_time,
    flow,
    silent_bins,
    sparkline,
    tick_step,
)
from toolstream_tui.core.fields import FieldTiming
from toolstream_tui.core.state import CallSlot, StreamState
from toolstream_tui.core.timing import Gap, StreamTiming, call_timing, stream_timing
from toolstream_tui.sources.base import BodyChunk, ResponseHead
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.sources.recording import Recorder
from toolstream_tui.sources.replay import ReplaySource
from toolstream_tui.watching.options import WatchOptions

Snap = Callable[..., bool]

# -- bins and sparklines ------------------------------------------------------------


def test_times_at_the_edges_fall_in_the_first_and_last_bins() -> None:
    assert bin_counts([0.0, 0.5, 0.74, 0.99, 1.0], 0.0, 1.0, 4) == [1, 0, 2, 2]
    assert bin_counts([0.25, 0.5, 0.75], 0.0, 1.0, 4) == [0, 1, 1, 1]


def test_times_outside_the_axis_are_not_counted() -> None:
    assert bin_counts([-0.1, 1.5, 0.2], 0.0, 1.0, 2) == [1, 0]


def test_no_times_or_no_width_give_empty_bins() -> None:
    assert bin_counts([], 0.0, 1.0, 3) == [0, 0, 0]
    assert bin_counts([0.5], 0.0, 1.0, 0) == []
    assert bin_counts([0.5], 1.0, 0.0, 2) == [0, 0], "an axis that ends before it starts"


def test_one_time_fills_one_bin() -> None:
    assert bin_counts([0.3], 0.0, 1.0, 10) == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]


def test_times_all_equal_on_an_axis_of_no_length_go_to_the_first_bin() -> None:
    assert bin_counts([2.0, 2.0, 2.0], 2.0, 2.0, 3) == [3, 0, 0]
    assert bin_index(2.0, 2.0, 2.0, 3) == 0


@given(
    times=st.lists(st.floats(-10, 110, allow_nan=False), max_size=200),
    start=st.floats(0, 50, allow_nan=False),
    length=st.floats(0, 60, allow_nan=False),
    width=st.integers(1, 300),
)
def test_the_bins_count_every_time_inside_the_axis_once(
    times: list[float], start: float, length: float, width: int
) -> None:
    end = start + length
    counts = bin_counts(times, start, end, width)
    assert len(counts) == width
    assert sum(counts) == sum(1 for t in times if start <= t <= end)


def test_a_sparkline_is_scaled_by_its_busiest_bin_and_blank_where_nothing_came() -> None:
    assert sparkline([0, 1, 2, 4, 8]) == " ▁▂▄█"
    assert sparkline([3, 0, 3]) == "█ █"
    assert sparkline([0, 0]) == "  "
    assert sparkline([]) == ""
    assert sparkline([1, 1000]) == "▁█", "one arrival among many still shows"


def test_a_silence_marks_every_bin_it_overlaps() -> None:
    silences = [Gap(start=1.0, seconds=2.0, after=3)]
    assert silent_bins(silences, 0.0, 4.0, 8) == [False, False, True, True, True, True, True, False]
    assert silent_bins([], 0.0, 4.0, 2) == [False, False]


def with_last_byte(timing: StreamTiming, last_byte: float) -> StreamTiming:
    fields = {name: getattr(timing, name) for name in StreamTiming.__slots__}
    return StreamTiming(**{**fields, "last_byte": last_byte})


def test_the_axis_ends_at_the_last_time_known_and_never_at_zero() -> None:
    nothing_known = stream_timing(StreamState("test", None))
    last_byte_at_3 = with_last_byte(nothing_known, 3.0)
    assert axis_end(TimelineFigures(last_byte_at_3, {0: [1.0, 3.5]}, [0.5])) == 3.5
    assert axis_end(TimelineFigures(nothing_known, {}, [])) == 1.0
    last_byte_at_0 = with_last_byte(nothing_known, 0.0)
    assert axis_end(TimelineFigures(last_byte_at_0, {0: [0.0]}, [0.0])) == 1.0


def test_ticks_are_round_and_leave_room_for_their_labels() -> None:
    assert tick_step(3.4, 60) == 1.0
    assert tick_step(3.4, 20) == 2.0
    assert tick_step(0.05, 100) == 0.005
    labels, marks = axis_rows(3.4, 40)
    assert len(labels) == len(marks) == 40
    assert labels.split() == ["0s", "1s", "2s", "3s"]
    assert marks.count("┬") == 4 and marks[0] == "┬"


def test_a_strip_draws_arrivals_silences_and_the_time_before_it_began() -> None:
    strip = ArrivalStrip(
        label=Text("#0"),
        times=[1.0, 1.0, 1.2, 3.9],
        style="green",
        begins=0.5,
        silences=[Gap(start=1.2, seconds=2.7, after=3)],
        marker=0.6,
        marker_style="yellow",
    )
    assert draw_strip(strip, 4.0, 8).plain == "─┃█····▃"


def call_named(index: int, name: str | None) -> Text:
    return call_label(call_timing(CallSlot(index, None, name, started_at=0.0), 1.0))


def test_model_text_in_labels_is_shown_literally() -> None:
    label = call_named(3, "[red]x\x1b[0m")
    assert label.plain == "#3 [red]x␛[0m"
    assert all("red" not in str(span.style) for span in label.spans)
    assert call_named(0, None).plain == "#0 ?"


def test_a_field_not_yet_complete_shows_an_ellipsis() -> None:
    assert field_time(FieldTiming("city", 1.9, 3.5)).plain == "city 1.90→3.50 s"
    assert field_time(FieldTiming("days", 3.5, None)).plain == "days 3.50→…"


def test_items_flow_onto_as_few_lines_as_fit() -> None:
    items = [Text("aaaa"), Text("bb"), Text("cccc")]
    assert [line.plain for line in flow(items, 12, indent=2, separator=" ")] == [
        "  aaaa bb",
        "  cccc",
    ]
    assert flow([], 10) == []


def test_columns_are_aligned_and_read_downwards() -> None:
    items = [Text(word) for word in ("one", "two", "three", "four", "five")]
    assert [line.plain for line in columns(items, 14, gutter=2)] == [
        "one    four",
        "two    five",
        "three",
    ]
    assert [line.plain for line in columns(items, 3)] == ["one", "two", "three", "four", "five"]


# -- the screen in the app --------------------------------------------------------------

REPLAY_SIZE = (120, 34)
WEATHER = "get_weather_forecast_for_city"


def replay_reads() -> list[tuple[float, bytes]]:
    """Text, then two interleaved calls, a 2 s stall in the middle of both."""
    words = ["I'll", " check", " the", " weather", " and", " the", " time."]
    text = [
        (t, sse(chunk(content=w)))
        for t, w in zip([0.25, 0.3, 0.33, 0.36, 0.4, 0.42, 0.45], words, strict=True)
    ]
    calls = [
        (0.6, sse(chunk(tc(0, "call_weather", WEATHER, "")))),
        (0.68, sse(chunk(tc(0, args='{"ci')))),
        (0.74, sse(chunk(tc(0, args='ty"')), chunk(tc(0, args=': "O')), chunk(tc(0, args="s")))),
        (0.8, sse(chunk(tc(1, "call_time", "get_time", "")), chunk(tc(0, args='lo", ')))),
        (0.86, sse(chunk(tc(1, args='{"tz": "Eu')))),
        (0.9, sse(chunk(tc(0, args='"days": ')))),
        (0.95, sse(chunk(tc(1, args="rope/")))),
        (1.0, sse(chunk(tc(0, args='3, "un')))),
        (3.0, sse(chunk(tc(1, args='Oslo", ')))),
        (
            3.05,
            sse(
                chunk(tc(0, args='it": "')), chunk(tc(0, args="cel")), chunk(tc(1, args='"format"'))
            ),
        ),
        (3.12, sse(chunk(tc(1, args=': "24h"}')))),
        (3.2, sse(chunk(tc(0, args='sius"}')))),
        (3.4, sse(chunk(finish="tool_calls"), "[DONE]")),
    ]
    return [(0.25, sse(chunk(role="assistant")) + text[0][1]), *text[1:], *calls]


def write_recording(path: Path) -> Path:
    recorder = Recorder(path, "test")
    recorder.write(ResponseHead(status=200, content_type="text/event-stream", t=0.12))
    for t, body in replay_reads():
        recorder.write(BodyChunk(body, t))
    recorder.close()
    return path


def replay_app(tmp_path: Path) -> ToolstreamApp:
    source = ReplaySource(write_recording(tmp_path / "timeline.sse"), speed=0, clock=frozen_clock)
    source.label = "replay:timeline.sse"  # not tmp_path, which differs from run to run
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock))
    app.animation_level = "none"
    return app


def shown(screen: TimelineScreen) -> str:
    return "\n".join(chart.render().plain for chart in screen.query(Chart))


async def test_w_opens_the_timeline_with_call_names_and_milestones(app_stub: StubServer) -> None:
    app = make_app(app_stub, "demo")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        text = shown(screen)
        assert "#0 get_weather" in text and "#1 get_weather" in text
        for milestone in ("response head", "first byte", "first tool name", "finish"):
            assert milestone in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TimelineScreen)


async def test_the_timeline_shows_the_recorded_times(tmp_path: Path) -> None:
    app = replay_app(tmp_path)
    async with app.run_test(size=REPLAY_SIZE) as pilot:
        await wait_settled(app)
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, TimelineScreen)
        text = " ".join(shown(app.screen).split())
        for expected in (
            "response head 0.120 s",
            "first tool name 0.600 s",
            "last byte 3.400 s",
            "7 deltas in 0.200 s ≈ 30 tokens/s",
            "stalls 1 over 1 s, longest 2.000 s from 1.000 s",
            "started 0.600 s · fragments 10 from 0.680 s to 3.200 s · 1 gap",
            "city 0.74→0.80 s",
            "format 3.05→3.12 s",
            "#1 get_time",
            "#0 get_weather_fo…",
        ):
            assert expected in text
        await pilot.press("w")
        await pilot.pause()
        assert not isinstance(app.screen, TimelineScreen)


async def test_the_axis_and_every_strip_keep_one_width_when_the_terminal_resizes(
    tmp_path: Path,
) -> None:
    app = replay_app(tmp_path)
    async with app.run_test(size=REPLAY_SIZE) as pilot:
        await wait_settled(app)
        await pilot.press("w")
        await pilot.pause()
        widths = []
        for size in ((120, 34), (80, 24), (160, 40)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            axis, calls = list(app.screen.query(Chart))[1:]
            ticks, stream = axis.render().plain.splitlines()[1:3]
            strips = [line for line in calls.render().plain.splitlines() if line.startswith("#")]
            assert {len(ticks), len(stream)} | {len(line) for line in strips} == {len(ticks)}
            widths.append(len(ticks))
        assert widths[1] < widths[0] < widths[2]


# -- pictures -------------------------------------------------------------------------


def test_timeline_of_a_replay(snap_compare: Snap, tmp_path: Path) -> None:
    """The timeline of a replay with recorded times (axis 0 to 3.4 s): milestones
    (response head 0.120 s … last byte 3.400 s), 7 text deltas ≈ 30 tokens/s,
    one 2 s stall; the stream row busy until 1 s, red dots to 3 s, then busy
    again with the magenta finish mark at 3.4 s; lanes #0 (name truncated with …)
    and #1 each with a dim lead-in, a yellow name mark, red dots over the stall,
    their details and field times (city 0.74→0.80 s, tz 0.86→3.00 s)."""
    app = replay_app(tmp_path)
    assert snap_compare(app, terminal_size=REPLAY_SIZE, run_before=settled_then("w"))


def test_timeline_of_a_replay_in_a_narrow_terminal(snap_compare: Snap, tmp_path: Path) -> None:
    """The same timeline in 80x24: milestones in two columns, a shorter axis with
    ticks every 1 s still aligned with every strip, the call rows scrolling."""
    app = replay_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled_then("w"))


async def test_each_lane_shows_when_its_fields_were_complete(tmp_path: Path) -> None:
    app = replay_app(tmp_path)
    async with app.run_test(size=REPLAY_SIZE):
        await wait_settled(app)
        lanes = app.stream.lanes.lanes
        lines = [str(lanes[index].fields_line.render()) for index in sorted(lanes)]
    assert lines == [
        "fields city 0.80s · days 1.00s · unit 3.20s",
        "fields tz 3.00s · format 3.12s",
    ]


async def test_an_open_timeline_follows_the_stream_until_it_ends() -> None:
    gate = threading.Event()

    def before_event(index: int) -> None:
        if index == 4:
            gate.wait(timeout=30)

    with StubServer("weather", speed=0, before_event=before_event) as stub:
        source = HttpSource(HttpRequest(url=stub.scenario_url("weather")))
        app = ToolstreamApp(source, WatchOptions(clock=frozen_clock))
        async with app.run_test(size=REPLAY_SIZE) as pilot:
            await until(
                pilot, lambda: app.session.state.events >= 4, "4 events (the stub holds the next)"
            )
            await pilot.press("w")
            await pilot.pause()
            assert isinstance(app.screen, TimelineScreen)
            assert "finish —" in " ".join(shown(app.screen).split())
            gate.set()
            await wait_settled(app)
            await until(  # redrawn within a second
                pilot,
                lambda: "finish —" not in " ".join(shown(app.screen).split()),
                "the timeline to show the finish",
            )
