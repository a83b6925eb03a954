"""Time travel in the app: for random sequences of jumps (steps either way, Home,
End, go-to, previous/next anomaly, previous/next call moment, a call picked or
not) over a recording of every dialect, every view at the display cursor is the
headless report cut at that event (`--until-event`, `report_upto`) and the
stream really cut there; and the screen at event N is the same whichever way
the cursor got there.

Each scenario's app runs once; the jumps are the screen's own actions, called
between frames (a move draws every view at once, synchronously), so hypothesis
can try many sequences in the time one app takes to start."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.app.test_proxy_app import post, proxy_app, until
from tests.core.test_upto import UNSTAMPED, fed
from tests.helpers.apps import (
    SETTLE_TIMEOUT,
    frozen_clock,
    make_app,
    redrawn_at_rest,
    wait_received,
)
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.screens.stream import StreamScreen
from toolstream_tui.app.widgets.text_pane import ChannelText
from toolstream_tui.app.wrapped import PieceText, WrappedLines
from toolstream_tui.core import StreamState, build_report
from toolstream_tui.core.dialects.detect import DIALECTS
from toolstream_tui.core.pieces import TextPieces
from toolstream_tui.core.report import report_json
from toolstream_tui.core.surrogates import rejoin_pairs
from toolstream_tui.core.upto import next_call_moment, report_upto, report_upto_json
from toolstream_tui.core.visible import inert
from toolstream_tui.proxy.requests import RequestList
from toolstream_tui.sources.base import BodyChunk, ResponseHead, SourceItem
from toolstream_tui.views.cursor import anomalies_seen
from toolstream_tui.views.fragments import FragmentRows
from toolstream_tui.watching.options import WatchOptions

SIZE = (64, 30)  # narrow: text and buffers wrap over several lines
# One recording per dialect (the one with the most parallel calls), and streams
# with anomalies, a cut and an error.
BY_DIALECT = {
    "openai-chat": "parallel",
    "anthropic": "anthropic-parallel",
    "openai-responses": "responses-interleaved",
    "gemini": "gemini-parallel-spread",
    "bedrock": "bedrock-text-tools",
    "cohere": "cohere-text-tools",
    "ollama": "ollama-text-tools",
    "ai-sdk-ui": "aisdk-text-tools",
}
MORE = ("anthropic-quirks", "truncated", "anthropic-truncated", "data-after-done", "reasoning")
SCENARIOS = (*BY_DIALECT.values(), *MORE)
EXAMPLES = 25  # sequences per scenario

moves = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.integers(-4, 4)),
        st.tuples(st.sampled_from(["first", "last"]), st.just(0)),
        st.tuples(st.just("goto"), st.integers(0, 10_000)),
        st.tuples(st.sampled_from(["anomaly", "moment"]), st.sampled_from([-1, 1])),
        st.tuples(st.just("pick"), st.sampled_from([-1, 1])),
    ),
    min_size=1,
    max_size=10,
)


def test_every_dialect_has_a_recording_here() -> None:
    assert set(BY_DIALECT) == set(DIALECTS)
    for dialect, name in BY_DIALECT.items():
        assert fed(name).state.dialect == dialect, name


def move(screen: StreamScreen, kind: str, value: int) -> None:
    """What a key does: the screen's own action for it."""
    if kind == "step":
        screen.action_step(value)
    elif kind == "first":
        screen.action_first()
    elif kind == "last":
        screen.action_last()
    elif kind == "goto":
        screen.move_to(value % (screen.horizon + 1))
    elif kind == "anomaly":
        screen.action_anomaly(value)
    elif kind == "moment":
        screen.action_moment(value)
    else:
        screen.action_select_lane(value)


def cut_state(name: str, cursor: int, state: StreamState) -> StreamState:
    """The stream really cut after event `cursor` (fed that far; at the end, all)."""
    if cursor > state.events:
        return fed(name).state
    return fed(name, cursor).state


def drawn_text(state: StreamState) -> str:
    text = ChannelText(state)
    text.read(len(state.text_pieces))
    return text.slice(0, text.length)


def check_views(screen: StreamScreen, name: str) -> None:
    """Every view at the cursor against the report cut there and the stream cut there."""
    state, cursor = screen.watched.state, screen.cursor
    report = report_upto(state, cursor)
    calls = report["tool_calls"]
    status = screen.status_bar.view
    assert status is not None
    assert status.shown_events == report["as_of"]["event"]
    assert status.state == report["status"]
    assert status.dialect == report["dialect"]
    assert status.received_bytes == report["bytes"]
    assert status.anomalies == len(report["anomalies"])
    assert status.failed_calls == sum(call["error"] is not None for call in calls)
    assert status.rejected_calls == sum(bool(call["schema_errors"]) for call in calls)
    assert screen.lanes.indexes == [call["index"] for call in calls]
    for call in calls:
        lane = screen.lanes.lanes.get(call["index"])
        if lane is None:
            continue  # out of the window of lanes
        check_lane(lane, call)
    seen = [(a.kind, a.index, a.count) for a in anomalies_seen(state, cursor)]
    assert seen == [(a["kind"], a["index"], a["count"]) for a in report["anomalies"]]
    if screen.selected is not None:
        rows = FragmentRows(state.calls[screen.selected].pieces)
        selected = next(call for call in calls if call["index"] == screen.selected)
        assert rows.count_upto(cursor) == selected["fragments"]
    assert screen.timeline_figures().timing.as_dict() == report["timing"]
    pane = screen.text_pane
    assert pane.text.slice(0, pane.text.length) == drawn_text(cut_state(name, cursor, state))
    assert pane.revealed == pane.text.length
    if "tool_calls" not in UNSTAMPED.get(name, ()):
        really = build_report(cut_state(name, cursor, state))["tool_calls"]
        assert [streamed(call) for call in calls] == [streamed(call) for call in really]


def streamed(call: dict[str, Any]) -> str:
    """A call's arguments as they streamed (the server's restatement aside)."""
    return call.get("arguments_streamed", call["arguments_raw"])


def check_lane(lane: Any, call: dict[str, Any]) -> None:
    view = lane.view
    assert view.fragments == call["fragments"]
    assert view.title.startswith(f"#{call['index']} {inert(call['name'] or '?')} · ")
    if view.state == "streaming":
        assert call["arguments"] is None and call["error"] is None
    elif view.tone in ("parsed", "schema"):
        assert call["error"] is None and call["arguments"] == lane.slot.arguments
    else:
        assert call["error"] is not None and call["error"] in view.messages
    if view.mode == "raw":
        assert lane.buffer.shown_length == view.chars
        assert "".join(lane.buffer.plain_lines()) == inert(rejoin_pairs(streamed(call)))


def fingerprint(screen: StreamScreen) -> tuple[Any, ...]:
    """What the screen shows, view by view, and where its text and buffers break
    into lines (which must be where a fresh wrap breaks them)."""
    pane = screen.text_pane
    typed = pane.typed
    fresh = WrappedLines(pane.text, typed.wrap_width(), word_wrap=True)
    fresh.extend_to(typed.shown_length)
    assert typed.line_starts() == tuple(fresh.starts)
    lanes = []
    for index in sorted(screen.lanes.lanes):
        lane = screen.lanes.lanes[index]
        buffer = lane.buffer
        again = WrappedLines(lane.fragments, buffer.wrap_width(), newlines=False)
        again.extend_to(buffer.shown_length)
        assert buffer.line_starts() == tuple(again.starts)
        lanes.append((index, lane.view, buffer.plain_lines() if lane.view.mode == "raw" else ()))
    return (
        screen.cursor,
        screen.status_bar.view,
        tuple(screen.lanes.indexes),
        tuple(lanes),
        pane.text.slice(0, pane.text.length),
        typed.plain_lines(),
    )


@pytest.mark.parametrize("name", SCENARIOS)
async def test_every_view_follows_the_cursor_whichever_way_it_moves(
    app_stub: StubServer, name: str
) -> None:
    app = make_app(app_stub, name, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        screen = app.stream
        screen.action_last()
        await redrawn_at_rest(pilot)  # the lanes mounted and laid out at their widths

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(moves)
        def jumps(sequence: list[tuple[str, int]]) -> None:
            for kind, value in sequence:
                move(screen, kind, value)
                check_views(screen, name)
            there = screen.cursor
            shown = fingerprint(screen)
            screen.action_last()
            screen.move_to(there)
            assert fingerprint(screen) == shown, "from the end"
            screen.action_first()
            screen.move_to(there)
            assert fingerprint(screen) == shown, "from the start"

        jumps()


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab cd\n北京é🙂\t"), max_size=120),
    st.integers(1, 12),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_lines_wrapped_back_to_a_shorter_text_are_a_fresh_wrap(
    text: str, width: int, word_wrap: bool, newlines: bool, data: st.DataObject
) -> None:
    """Going back re-wraps only the last lines: the result is the wrap of the
    shorter text from scratch, and growing again is too."""
    source = PieceText(TextPieces())
    source.pieces.append(text, 0, 0.0)
    lines = WrappedLines(source, width, word_wrap=word_wrap, newlines=newlines)
    lines.extend_to(data.draw(st.integers(0, len(text)), label="shown"))
    for _ in range(3):
        length = data.draw(st.integers(0, len(text)), label="then")
        lines.truncate(length)
        lines.extend_to(length)
        fresh = WrappedLines(source, width, word_wrap=word_wrap, newlines=newlines)
        fresh.extend_to(length)
        assert (lines.starts, lines.length) == (fresh.starts, fresh.length)
        assert [lines.line_text(n) for n in range(len(lines))] == [
            fresh.line_text(n) for n in range(len(fresh))
        ]


async def test_the_keys_move_the_cursor(app_stub: StubServer) -> None:
    """The bindings themselves, pressed: N n shift+arrows Home End g [ ] { }."""
    app = make_app(app_stub, "anthropic-quirks", start_paused=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_received(app)
        screen, state = app.stream, app.session.state
        await pilot.press("end")
        assert screen.cursor == state.end_event
        await pilot.press("N", "shift+left")
        assert screen.cursor == state.events - 1
        await pilot.press("home", "n", "shift+right")
        assert screen.cursor == 2
        sightings = sorted({stamp for anomaly in state.anomalies for stamp in anomaly.stamps})
        await pilot.press("right_square_bracket")
        assert screen.cursor == next(stamp for stamp in sightings if stamp > 2)
        before = screen.cursor
        await pilot.press("left_square_bracket")
        earlier = [stamp for stamp in sightings if stamp < before]
        assert screen.cursor == (earlier[-1] if earlier else before)
        await pilot.press("home", "right_curly_bracket")
        assert screen.cursor == min(slot.started_event for slot in state.calls.values())
        await pilot.press("g")
        await pilot.press(*"7", "enter")
        await pilot.pause()
        assert screen.cursor == 7
        assert "at event 7 of " in str(screen.status_bar.render())
        await pilot.press("g")
        await pilot.press(*str(state.events + 1), "enter")
        await pilot.pause()
        assert f"event {state.events + 1} is past the last one ({state.events})" in str(
            app.screen.query_one("#problem").render()
        )
        await pilot.press("escape")
        assert screen.cursor == 7
        await pilot.press("g")
        await pilot.press(*"soon", "enter")
        await pilot.pause()
        assert "not an event number or a time like 12.5s" in str(
            app.screen.query_one("#problem").render()
        )
        await pilot.press("escape")
        assert screen.cursor == 7
        await pilot.press("l", "N")
        await pilot.pause()
        lines = screen.raw_log.plain_lines()
        assert len(lines) == screen.watched.wire_events.lines_upto(6) and lines[-1].startswith(
            "#6 "
        )


async def test_a_picked_call_stays_picked_where_it_has_not_started(app_stub: StubServer) -> None:
    """j picks call 1; Home goes where no call has started; { } still walk call 1's
    moments alone, and back at the end call 1 is the selected one again."""
    app = make_app(app_stub, "parallel", start_paused=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_received(app)
        screen, state = app.stream, app.session.state
        await pilot.press("end")
        for _ in range(len(state.calls)):
            if screen.selected != 1:
                await pilot.press("j")
        assert screen.selected == 1
        await pilot.press("home")
        assert screen.lanes.indexes == []
        await pilot.press("right_curly_bracket")
        assert screen.cursor == next_call_moment(state, 0, 1)
        assert screen.cursor != next_call_moment(state, 0, None), "call 0 moves first"
        await pilot.press("end")
        assert screen.selected == 1


async def test_a_click_on_the_scrub_bar_moves_the_cursor_there(app_stub: StubServer) -> None:
    app = make_app(app_stub, "parallel", start_paused=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_received(app)
        screen = app.stream
        await pilot.press("end")
        await pilot.pause()
        bar = screen.scrub_bar
        assert bar.display
        width = bar.content_region.width
        await pilot.click("#scrub", offset=(1, 0))  # the padding's cell, then the first column
        assert screen.cursor == 0
        await pilot.click("#scrub", offset=(1 + width // 2, 0))
        last = state_end(screen)
        assert abs(screen.cursor - last / 2) <= last / width + 1


async def test_the_scrub_bar_is_there_live_and_a_click_on_it_pauses_there(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.settled_event.wait(), 30)
        screen = app.stream
        assert not screen.paused and screen.scrub_bar.display
        assert screen.scrub_bar.region.y == screen.status_bar.region.bottom
        await pilot.click("#scrub", offset=(1, 0))
        assert screen.paused and screen.cursor == 0


def layout(screen: StreamScreen) -> list[tuple[str, Any]]:
    """Where each widget of the stream screen is."""
    return [(str(widget), widget.region) for widget in screen.query("*")]


async def test_pause_and_resume_leave_every_widget_where_it_was(app_stub: StubServer) -> None:
    """Space changes what is drawn, never the layout: a layout change redraws the
    whole screen, a cost the key would pay before its frame."""
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.settled_event.wait(), 30)
        screen = app.stream
        live = layout(screen)
        await pilot.press("space")
        await pilot.pause()
        assert screen.paused and layout(screen) == live
        await pilot.press("space")
        await pilot.pause()
        assert not screen.paused and layout(screen) == live


def state_end(screen: StreamScreen) -> int:
    state = screen.watched.state
    return state.end_event or state.events


async def test_an_export_and_a_bundle_while_paused_are_as_of_the_cursor(
    app_stub: StubServer, tmp_path: Path
) -> None:
    app = make_app(app_stub, "parallel", start_paused=True, output_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_received(app)
        screen, state = app.stream, app.session.state
        screen.move_to(9)
        await pilot.press("e")
        exported = json.loads((tmp_path / "toolstream-report.json").read_text("utf-8"))
        assert exported == json.loads(report_upto_json(state, 9))
        assert exported["as_of"] == {
            "event": 9,
            "events": state.events,
            "time": 0.0,
            "ended": False,
        }
        screen.write_bundle(tmp_path / "bundle")
        bundled = json.loads((tmp_path / "bundle" / "report.json").read_text("utf-8"))
        assert bundled == exported
        readme = (tmp_path / "bundle" / "README.md").read_text("utf-8")
        assert "## As of event 9" in readme and "--replay stream.sse --at 9" in readme
        screen.action_toggle_pause()  # live again: the whole stream, unmarked
        await pilot.press("e")
        whole = json.loads((tmp_path / "toolstream-report.json").read_text("utf-8"))
        assert "as_of" not in whole and whole == build_report_json(state)


def build_report_json(state: StreamState) -> Any:
    return json.loads(report_json(state))


async def test_the_proxys_stream_view_travels_too(app_stub: StubServer) -> None:
    """A proxied request opened from the list: the same keys, the same views."""
    log = RequestList(tapes=True)
    async with (
        proxy_app(app_stub.base_url, log) as (app, url),
        app.run_test(size=(170, 30)) as pilot,
    ):
        await post(url + "/scenarios/parallel/v1/chat/completions")
        await until(lambda: log.finished_count == 1, pilot)
        app.requests.draw()
        await pilot.pause()
        await pilot.press("enter")
        stream = app.screen
        assert isinstance(stream, StreamScreen)
        await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
        state = stream.watched.state
        await pilot.press("home")
        assert stream.cursor == 0 and stream.lanes.indexes == []
        await pilot.press("right_curly_bracket", "right_curly_bracket")
        check_views(stream, "parallel")
        assert stream.lanes.indexes == [0, 1]
        await pilot.press("end")
        assert stream.cursor == state.end_event
        check_views(stream, "parallel")
        assert {lane.view.state for lane in stream.lanes.lanes.values()} == {"parsed"}


class HeldSource:
    """A scenario's events, the rest held back after the first `first` until
    `release` is set: a recording still being read when a key is pressed."""

    def __init__(self, scenario: str, first: int) -> None:
        self.label = f"held:{scenario}"
        self.scenario = load_scenario(scenario)
        self.first = first
        self.release = asyncio.Event()

    async def items(self) -> AsyncIterator[SourceItem]:
        yield ResponseHead(status=200, content_type=self.scenario.content_type)
        for number, event in enumerate(self.scenario.events):
            if number == self.first:
                await self.release.wait()
            yield BodyChunk(event, number * 0.1)


async def test_end_pressed_while_the_stream_is_still_read_goes_on_to_its_end() -> None:
    """`--at N` shows event N as soon as it is in while the rest is still read (a
    200k-event recording takes seconds): End pressed then, after `]` as a user
    would, shows the stream as it ended once it has, not the event that happened
    to be the last received when the key came."""
    source = HeldSource("anthropic-quirks", first=10)
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock, start_at=1))
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        screen, state = app.stream, app.session.state
        await until(lambda: state.events == 10 and screen.cursor == 1, pilot)
        await pilot.press("right_square_bracket", "end")
        assert screen.cursor == 10 and screen.paused
        source.release.set()
        await wait_received(app)
        screen.display_tick()  # what the display timer does next
        assert screen.cursor == state.end_event
        await pilot.pause()
        assert screen.paused and "at event 14 of 14" in str(screen.status_bar.render())
        await pilot.press("home", "end")
        assert screen.cursor == state.end_event


async def test_paused_again_after_end_the_cursor_stays() -> None:
    """Space twice after End, while the stream still arrives: paused again, the
    cursor stays where it was paused instead of going on following End."""
    source = HeldSource("anthropic-quirks", first=10)
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock, start_at=1))
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        screen, state = app.stream, app.session.state
        await until(lambda: state.events == 10 and screen.cursor == 1, pilot)
        await pilot.press("end", "space", "space")
        assert screen.paused
        paused_at = screen.cursor
        source.release.set()
        await wait_received(app)
        screen.display_tick()
        assert screen.cursor == paused_at < state.end_event
