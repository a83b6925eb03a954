"""The screen in small and large terminals, and what a newcomer presses first:
no character of a buffer hidden, the status bar cut from its least important
end, panes sized by content, the keys help, the palette, and bundles written on
quit or only after asking before an overwrite."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from rich.cells import cell_len

from tests.helpers.apps import (
    frozen_clock,
    make_app,
    redrawn_at_rest,
    wait_received,
    wait_settled,
)
from tests.helpers.waiting import until
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.screens.anomalies import AnomaliesScreen
from toolstream_tui.app.screens.confirm import ConfirmScreen
from toolstream_tui.app.screens.stream import StreamScreen, shown_path
from toolstream_tui.app.widgets.lane import CallLane
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.visible import inert
from toolstream_tui.sources import pump
from toolstream_tui.sources.replay import ReplaySource
from toolstream_tui.watching.options import WatchOptions


def shown_lanes(screen: StreamScreen) -> list[CallLane]:
    return [screen.lanes.lanes[index] for index in sorted(screen.lanes.lanes)]


def assert_nothing_hidden(screen: StreamScreen) -> int:
    """Every raw lane in view draws its whole buffer, each line within the width
    left beside the scrollbar. Returns how many raw lanes were checked."""
    checked = 0
    for lane in shown_lanes(screen):
        if lane.view is None or lane.view.mode != "raw":
            continue
        buffer = lane.buffer
        lines = buffer.plain_lines()
        assert "".join(lines) == inert(lane.slot.pieces.slice(0, lane.view.chars))
        room = buffer.scrollable_content_region.width
        assert room > 0 and all(cell_len(line) <= room for line in lines), (room, lines)
        checked += 1
    return checked


@pytest.mark.parametrize(
    ("size", "first_size"),
    [((70, 20), None), ((80, 24), None), ((70, 20), (200, 50)), ((200, 50), (70, 20))],
)
async def test_no_character_of_a_raw_buffer_is_hidden(
    app_stub: StubServer, size: tuple[int, int], first_size: tuple[int, int] | None
) -> None:
    app = make_app(app_stub, "many-parallel", start_paused=True)
    async with app.run_test(size=first_size or size) as pilot:
        await wait_received(app)
        screen = app.stream
        screen.cursor = 400  # mid-stream: every lane in view still raw
        screen.draw(None)
        await redrawn_at_rest(pilot)
        if first_size is not None:
            await pilot.resize_terminal(*size)
            screen.draw(None)
            await redrawn_at_rest(pilot)
        assert assert_nothing_hidden(screen) >= 2


async def test_a_tab_in_the_text_takes_the_one_cell_the_wrapper_counts(tmp_path: Path) -> None:
    """A terminal widens a tab to its next stop: drawn as a tab, it moved every
    column after it and broke the panes' borders."""
    code = "Here:\n\ndef f():\n\treturn 1\n\tx\ty\n"
    event = {"choices": [{"index": 0, "delta": {"content": code}, "finish_reason": "stop"}]}
    recording = tmp_path / "tab.sse"
    recording.write_text(f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n")
    source = ReplaySource(recording, speed=0, clock=frozen_clock)
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock))
    async with app.run_test(size=(80, 14)):
        await wait_settled(app)
        typed = app.stream.text_pane.typed
        width = typed.size.width
        strips = [typed.render_line(y) for y in range(typed.size.height)]
    texts = [strip.text for strip in strips]
    assert [text.rstrip() for text in texts[:6]] == [
        "Here:",
        "",
        "def f():",
        "\u2409return 1",
        "\u2409x\u2409y",
        "",
    ]
    assert all("\t" not in text for text in texts), texts
    assert all(strip.cell_length == width for strip in strips)


async def test_an_error_banner_leaves_the_panes_room_on_a_short_terminal(
    app_stub: StubServer,
) -> None:
    """html-page fails with a long body: at 16 rows its banner took every row the
    status, scrub and footer bars left, and the panes had none."""
    app = make_app(app_stub, "html-page")
    async with app.run_test(size=(100, 16)) as pilot:
        await wait_settled(app)
        banner = app.stream.error_banner
        await until(pilot, lambda: banner.size.height > 0, "the banner laid out")
        assert app.stream.query_one("#main").size.height >= 6


async def test_a_raw_buffer_shows_its_newest_line_as_it_grows(app_stub: StubServer) -> None:
    app = make_app(app_stub, "many-parallel", start_paused=True)
    async with app.run_test(size=(60, 20)) as pilot:
        await wait_received(app)
        screen = app.stream
        outgrown = 0
        for cursor in range(40, 400, 40):
            screen.cursor = cursor
            screen.draw(None)
            await redrawn_at_rest(pilot)
            for lane in shown_lanes(screen):
                if lane.view is None or lane.view.mode != "raw":
                    continue
                buffer = lane.buffer
                rows = buffer.scrollable_content_region.height
                outgrown += buffer.line_count > rows
                assert buffer.scroll_y + rows >= buffer.line_count, (cursor, lane.slot.index)
        assert outgrown  # some buffers had more lines than their lane shows


async def test_the_status_bar_keeps_the_state_and_anomalies_when_narrow(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "name-repeated")
    async with app.run_test(size=(60, 24)) as pilot:
        await wait_settled(app)
        await pilot.pause()
        line = str(app.stream.status_bar.render())
        assert line.startswith("finished · ⚠ 2 anomalies · ")
        assert "0.0s" in line
        assert cell_len(line) <= 58


async def test_the_footer_fits_and_shows_bundle(app_stub: StubServer) -> None:
    for width in (80, 120):
        app = make_app(app_stub, "weather")
        async with app.run_test(size=(width, 24)) as pilot:
            await wait_settled(app)
            await pilot.pause()
            bottom = app.export_screenshot().replace("&#160;", " ")
            for key in ("Pause", "Inspect", "Anomalies", "Bundle", "Quit", "Keys"):
                assert key in bottom, (width, key)


async def test_paused_says_which_event_is_shown_of_how_many(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_received(app)
        await pilot.press("n", "n", "n")
        received = app.session.state.events
        line = str(app.stream.status_bar.render())
        assert f"PAUSED · at event 3 of {received} · " in line
        assert "no data for" not in line


async def test_elapsed_time_is_the_streams_and_leaves_out_the_pause(
    app_stub: StubServer,
) -> None:
    """The stream is received while the display is paused for 100 s; once shown,
    its elapsed time is the stream's own, not the time the person waited."""
    now = [0.0]
    app = make_app(app_stub, "weather", start_paused=True, clock=lambda: now[0])
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_received(app)
        now[0] = 100.0
        await pilot.press("space")
        await wait_settled(app)
        view = app.stream.status_bar.view
        assert view.state == "finished"
        assert view.elapsed < 1.0


async def test_an_empty_text_pane_gives_its_width_to_the_lanes(app_stub: StubServer) -> None:
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_settled(app)
        await pilot.pause()
        screen = app.stream
        assert screen.text_pane.size.width < 40 < screen.lanes.size.width
        for lane in shown_lanes(screen):
            assert lane.outer_size.height == lane.rows_wanted(), "a small tree gets its lines"


async def test_every_lane_header_shows_at_80x24(app_stub: StubServer) -> None:
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_settled(app)
        await pilot.pause()
        screen = app.stream
        lanes = shown_lanes(screen)
        assert len(lanes) == 3
        bottom = screen.lanes.content_region.bottom
        for lane in lanes:
            assert lane.region.y < bottom and lane.region.height >= 5
        picture = app.export_screenshot().replace("&#160;", " ")
        for title in ("#0 get_weather", "#1 get_time", "#2 search_web"):
            assert title in picture


async def test_question_mark_and_f1_open_the_keys_help(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_settled(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.query("HelpPanel")
        await pilot.press("f1")
        await pilot.pause()
        assert not app.screen.query("HelpPanel")
        await pilot.press("f1")
        await pilot.pause()
        assert app.screen.query("HelpPanel")


async def test_the_palette_has_one_row_per_command_and_its_screenshot_saves_here(
    app_stub: StubServer, tmp_path: Path
) -> None:
    app = make_app(app_stub, "weather", output_dir=tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_settled(app)
        commands = list(app.get_system_commands(app.screen))
        titles = [command.title for command in commands]
        assert len(titles) == len(set(titles)), titles
        assert "Back" not in titles, "a watch has no list to go back to"
        (screenshot,) = [command for command in commands if command.title == "Screenshot"]
        assert "here" in screenshot.help
        app.call_later(screenshot.callback)  # as the palette runs it
        await pilot.pause()
        await pilot.pause()
    assert list(tmp_path.glob("*.svg"))


async def test_anomaly_details_are_cut_with_an_ellipsis_and_shown_whole_below(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "index0-reused")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_settled(app)
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AnomaliesScreen)
        longest = max(screen.anomalies, key=lambda anomaly: len(anomaly.detail))
        screen.query_one("DataTable").move_cursor(row=screen.anomalies.index(longest))
        await pilot.pause()
        assert longest.detail in str(screen.detail.render()).replace("\n", " ")


def test_a_path_in_a_toast_is_cut_in_the_middle_not_broken() -> None:
    path = Path("/far/away/" + "d" * 80 + "/toolstream-report.json")
    shown = shown_path(path)
    assert len(shown) <= 40 and "…" in shown
    assert shown.endswith("report.json") and shown.startswith("/far")
    assert shown_path(Path.cwd() / "toolstream-report.json") == "toolstream-report.json"


async def test_quit_mid_stream_with_bundle_writes_what_arrived(tmp_path: Path) -> None:
    gate = threading.Event()

    def before_event(index: int) -> None:
        if index == 5:
            gate.wait(timeout=60)

    bundle = tmp_path / "bundle"
    with StubServer("weather", speed=0, before_event=before_event) as stub:
        app = make_app(stub, "weather", bundle=bundle)
        async with app.run_test(size=(120, 30)) as pilot:
            await until(
                pilot, lambda: app.session.state.events >= 5, "5 events (the stub holds the next)"
            )
            await pilot.press("q")
        gate.set()
    report = json.loads((bundle / "report.json").read_text(encoding="utf-8"))
    assert report["status"] == "truncated"
    kept = report["tool_calls"][0]["arguments_raw"]
    assert kept == app.session.state.calls[0].arguments_raw
    assert '{"location":"Beijing"}'.startswith(kept) and kept != '{"location":"Beijing"}'
    assert any("quit before the stream ended" in a["detail"] for a in report["anomalies"])
    assert app.said_at_exit == [f"repro bundle written to {shown_path(bundle)}"]
    replayed = ReplaySource(bundle / "stream.sse", speed=0)
    session = StreamSession(replayed.label)
    await pump(replayed.items(), session, lambda events: None)
    again = build_report(session.state)
    assert again["anomalies"] == report["anomalies"], "the quit replays too"
    assert again["tool_calls"] == report["tool_calls"]


async def test_b_asks_before_overwriting_a_bundle(app_stub: StubServer, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "report.json").write_text("earlier", encoding="utf-8")
    app = make_app(app_stub, "weather", bundle=bundle)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_settled(app)  # --bundle writes once settled: the person asked for it
        (bundle / "report.json").write_text("earlier", encoding="utf-8")
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert (bundle / "report.json").read_text(encoding="utf-8") == "earlier"
        await pilot.press("b")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert json.loads((bundle / "report.json").read_text(encoding="utf-8"))["status"] == "finished"
