"""The app's behaviour, driven with Pilot against the stub over loopback HTTP.

The screen is a function of the core's state at the display cursor (the last
wire event shown), so these tests read the cursor, the views the widgets drew
and the core's state, never a copy of the stream kept by a widget."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable
from pathlib import Path

import pytest
from textual.color import Color
from textual.dom import DOMNode
from textual.geometry import Region
from textual.strip import Strip

from tests.helpers.apps import (
    frozen_clock,
    make_app,
    redrawn_at_rest,
    scenario_params,
    wait_received,
    wait_settled,
)
from tests.helpers.cli import CliRunner
from tests.helpers.streaming import untimed
from toolstream_stubs import StubServer, list_scenarios, load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.screens import stream as stream_screen
from toolstream_tui.app.screens.stream import (
    BURST_EVENTS,
    TICK_SECONDS,
    StreamScreen,
    redraw_due,
)
from toolstream_tui.app.widgets.arguments_tree import ArgumentsTree
from toolstream_tui.app.widgets.lane import CallLane
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.visible import inert
from toolstream_tui.sources.early import EarlySource
from toolstream_tui.sources.replay import ReplaySource
from toolstream_tui.watching.options import WatchOptions

SIZE = (120, 40)
MAX_STEPS = 1000  # a cursor that stops moving fails the loop stepping it, not CI
SHUTDOWN_POLLS = 3000  # 30 s of 10 ms polls: only a hang reaches it


def mode(lane: CallLane) -> str:
    assert lane.view is not None
    return lane.view.mode


def lanes(screen: StreamScreen) -> list[CallLane]:
    return [screen.lanes.lanes[index] for index in sorted(screen.lanes.lanes)]


async def test_lanes_flip_exactly_at_the_finish_event(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        screen, state = app.stream, app.session.state
        assert state.finish_event is not None
        steps = itertools.count()
        while screen.cursor < state.finish_event:
            assert next(steps) < MAX_STEPS, "the cursor stopped short of the finish"
            await pilot.press("n")
            if screen.cursor < state.finish_event and screen.lanes.lanes:
                assert mode(screen.lanes.lanes[0]) == "raw", "flipped before the finish"
                assert screen.lanes.lanes[0].view.state == "streaming"
        lane = screen.lanes.lanes[0]
        assert mode(lane) == "tree" and lane.view.state == "parsed"
        assert 'location: "Beijing"' in "\n".join(lane.arguments_tree.plain_labels())


async def test_step_advances_one_wire_event(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        screen = app.stream
        assert screen.cursor == 0
        for expected in range(1, 5):
            await pilot.press("n")
            assert screen.cursor == expected
        lane = screen.lanes.lanes[0]
        assert lane.view.fragments == 3  # the head carried none; then '{"loc', 'ation', '":"Be'
        assert "".join(lane.buffer.plain_lines()) == '{"location":"Be'
        assert screen.status_bar.view.shown_events == 4
        await pilot.press("n")
        assert lane.view.fragments == 4


async def test_stepping_shows_exactly_the_stream_cut_at_each_event(app_stub: StubServer) -> None:
    """At every step, the lanes equal the headless report of the stream cut after
    that many events: nothing shown early, nothing held back."""
    blocks = load_scenario("parallel").events
    app = make_app(app_stub, "parallel", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        screen = app.stream
        for count in range(1, len(blocks) + 1):
            await pilot.press("n")
            cut = StreamSession("cut", live=False)
            cut.open(200, "text/event-stream")
            cut.feed(b"".join(blocks[:count]), 0.0)
            report = build_report(cut.state)
            shown = lanes(screen)
            assert [lane.index for lane in shown] == [c["index"] for c in report["tool_calls"]]
            for lane, call in zip(shown, report["tool_calls"], strict=True):
                assert lane.view.chars == len(call["arguments_raw"])
                assert lane.view.fragments == call["fragments"]
                assert lane.view.title.startswith(f"#{call['index']} {call['name'] or '?'} · ")
                if lane.view.mode == "raw":
                    assert "".join(lane.buffer.plain_lines()) == call["arguments_raw"]
            assert screen.status_bar.view.shown_events == count


async def test_pause_holds_the_display_and_resume_catches_up(app_stub: StubServer) -> None:
    app = make_app(app_stub, "demo", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        await pilot.pause()
        screen = app.stream
        assert screen.cursor == 0 and screen.lanes.lanes == {}
        assert app.session.state.events > 0, "received while the display was paused"
        assert screen.status_bar.view.state == "streaming"
        await pilot.press("space")
        await wait_settled(app)
        assert [lane.view.state for lane in lanes(screen)] == ["parsed", "parsed"]
        text = screen.text_pane.typed.plain_lines()
        assert "".join(text) == "I'll check the weather in 北京 and 上海 for you."


async def test_a_finished_screen_is_not_redrawn_until_something_changes(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "demo")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        screen = app.stream
        draws: list[float | None] = []
        draw = screen.draw
        screen.draw = lambda seconds: (draws.append(seconds), draw(seconds))  # type: ignore[method-assign]
        screen.display_tick()
        screen.display_tick()
        assert draws == [], "an idle screen costs nothing per tick"
        await pilot.resize_terminal(SIZE[0] - 10, SIZE[1] - 4)
        screen.display_tick()
        assert len(draws) == 1, "lanes are sized to the screen: a resize redraws"
        screen.display_tick()
        assert len(draws) == 1


async def test_toggle_lane_and_all_lanes(app_stub: StubServer) -> None:
    app = make_app(app_stub, "demo")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        first, second = lanes(app.stream)
        assert (mode(first), mode(second)) == ("tree", "tree")
        await pilot.press("t")  # the first lane is selected
        assert (mode(first), mode(second)) == ("raw", "tree")
        await pilot.press("T")
        assert (mode(first), mode(second)) == ("tree", "tree")
        await pilot.press("T")
        assert (mode(first), mode(second)) == ("raw", "raw")
        await pilot.press("j", "t")
        assert (mode(first), mode(second)) == ("raw", "tree")


async def test_a_failed_parse_stays_raw_and_marks_the_error_position(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "invalid-json")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        bad, good = lanes(app.stream)
        assert bad.view.state == "invalid JSON" and mode(bad) == "raw"
        assert good.view.state == "parsed" and mode(good) == "tree"
        raw = "".join(bad.buffer.plain_lines())
        assert bad.buffer.mark == raw.index("}")
        said: list[str] = []
        app.stream.notify = lambda message, **_: said.append(message)  # type: ignore[method-assign]
        await pilot.press("t")  # a failed lane has no tree to toggle to
        assert mode(bad) == "raw"
        assert said == ["call #0 has no tree: its arguments did not parse"]


async def test_truncated_stream_leaves_lanes_raw_and_marked(app_stub: StubServer) -> None:
    app = make_app(app_stub, "truncated")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        (lane,) = lanes(app.stream)
        assert lane.view.state == "truncated" and mode(lane) == "raw"
        edge, color = lane.styles.border_top  # the one lane is the selected one
        assert edge == "double" and close_to(color, app.current_theme.error)
        assert "".join(lane.buffer.plain_lines()) == '{"location":"San Franci'
        assert app.stream.status_bar.view.state == "truncated"


def close_to(color: Color, theme_color: str) -> bool:
    """Within rounding: the frame's colour goes through Rich's colours."""
    wanted = Color.parse(theme_color)
    return all(abs(got - want) <= 1 for got, want in zip(color.rgb, wanted.rgb, strict=True))


async def test_frames_are_in_their_tone_s_colour_in_any_theme(app_stub: StubServer) -> None:
    """The selected lane's frame is doubled, the others round; a parsed call's
    frame is the theme's success colour, and a new theme recolours every frame."""
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        for theme in ("textual-dark", "dracula"):
            app.theme = theme
            await pilot.pause()
            for lane in lanes(app.stream):
                edge, color = lane.styles.border_top
                assert edge == ("double" if lane.selected else "round")
                assert lane.view.tone == "parsed" and close_to(color, app.current_theme.success)


async def test_raw_log_toggle_shows_every_event(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        raw_log = app.stream.raw_log
        assert not raw_log.display
        await pilot.press("l")
        assert raw_log.display
        lines = [line for line in raw_log.plain_lines() if line.startswith("#")]
        assert len(lines) == app.session.state.events == 8  # head, 5 fragments, finish, [DONE]
        assert lines[-1].endswith("[DONE]")
        assert 'delta {"tool_calls":[{"index":0,"function":{"arguments":"ation"}}]}' in lines[2]
        assert "chat.completion.chunk" not in lines[2], "the envelope is a key away"
        await pilot.press("v")
        assert "chat.completion.chunk" in raw_log.plain_lines()[2]
        longest = max(map(len, raw_log.plain_lines()))
        assert raw_log.virtual_size.width >= longest, "scrolls to the end of the longest line"


async def test_raw_log_shows_the_events_up_to_the_cursor(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        await pilot.press("l", "n", "n", "n")
        numbers = [line.split()[0] for line in app.stream.raw_log.plain_lines()]
        assert numbers == ["#1", "#2", "#3"]


async def test_export_writes_the_same_json_as_headless(
    app_stub: StubServer, cli: CliRunner, tmp_path: Path
) -> None:
    app = make_app(app_stub, "parallel", output_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.press("e")
    exported = json.loads((tmp_path / "toolstream-report.json").read_text(encoding="utf-8"))
    headless = json.loads(cli("--headless", "--url", app_stub.scenario_url("parallel")).stdout)
    del exported["source"], headless["source"]
    assert untimed(exported) == untimed(headless)
    assert exported["timing"].keys() == headless["timing"].keys()


async def test_screenshot_is_saved(app_stub: StubServer, tmp_path: Path) -> None:
    app = make_app(app_stub, "weather", output_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.pause()
        await pilot.press("s")
    (svg,) = tmp_path.glob("*.svg")
    assert "get_weather" in svg.read_text(encoding="utf-8")


async def test_restart_runs_the_stream_again(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        first_run = app.session
        await pilot.press("r")
        await wait_settled(app)
        assert app.session is not first_run
        assert list(app.stream.lanes.lanes) == [0], "the first run's lanes were cleared"
        assert app.session.state.calls[0].arguments == {"location": "Beijing"}
        requests = [r for r in app_stub.requests if r.path.endswith("weather/v1/chat/completions")]
        assert len(requests) >= 2


async def test_a_source_read_while_the_app_loads_shows_the_same_stream_and_reruns(
    app_stub: StubServer,
) -> None:
    """The command wraps a network source in EarlySource before Textual loads: the
    app shows what it shows without the wrapper, and `r` reads the source anew."""
    direct = make_app(app_stub, "weather")
    async with direct.run_test(size=SIZE):
        await wait_settled(direct)
        expected = untimed(build_report(direct.session.state))
    app = make_app(app_stub, "weather")
    app.source = EarlySource(app.source)
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        assert untimed(build_report(app.session.state)) == expected
        await pilot.press("r")
        await wait_settled(app)
        assert untimed(build_report(app.session.state)) == expected


async def test_http_error_shows_status_and_body(app_stub: StubServer) -> None:
    app = make_app(app_stub, "http-401")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        banner = app.stream.error_banner
        assert banner.display
        shown = str(banner.render())
        assert "HTTP 401: Incorrect API key provided" in shown
        assert '"code":"invalid_api_key"' in shown
        assert app.stream.status_bar.view.state == "error"


async def test_inspector_lists_every_fragment_and_none_parses_alone(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.press("i")
        await pilot.pause()
        rows = [line.split(maxsplit=5) for line in app.screen.fragment_list.drawn_rows()]
        assert [row[5] for row in rows] == [
            '"{\\"loc"',
            '"ation"',
            '"\\":\\"Be"',
            '"ijing"',
            '"\\"}"',
        ]
        assert [row[3] for row in rows] == ["5", "5", "5", "5", "2"]
        assert [row[4] for row in rows] == ["no"] * 5
        await pilot.press("escape")
        assert app.screen is app.stream


HOSTILE_TEXT = "[bold]not bold[/] [link=https://x.invalid]x[/link] \x1b[31mred\x1b[0m bell\x07"


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def test_markup_and_escapes_in_model_output_are_shown_literally(tmp_path: Path) -> None:
    recording = tmp_path / "hostile.sse"
    recording.write_bytes(
        chunk({"content": HOSTILE_TEXT})
        + chunk({"tool_calls": [{"index": 0, "id": "[red]id", "function": {"name": "[b]n"}}]})
        + chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":"[i]x\\u001b"}'}}]})
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    app = ToolstreamApp(
        ReplaySource(recording, speed=0, clock=frozen_clock), WatchOptions(clock=frozen_clock)
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.pause()
        shown = "".join(app.stream.text_pane.typed.plain_lines())
        assert shown == "[bold]not bold[/] [link=https://x.invalid]x[/link] ␛[31mred␛[0m bell␇"
        lane = app.stream.lanes.lanes[0]
        assert "[i]x" in "\n".join(lane.arguments_tree.plain_labels())
        svg = app.export_screenshot()
    assert "\x1b" not in svg and "\x07" not in svg
    visible = svg.replace("&#160;", " ")
    assert "[bold]not bold[/]" in visible
    assert "#0 [b]n · [red]id" in visible


async def test_double_click_on_a_lane_opens_its_inspector(app_stub: StubServer) -> None:
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.pause()
        second = app.stream.lanes.lanes[1]
        await pilot.click(second)
        assert app.stream.selected == 1 and second.selected
        assert app.screen is app.stream
        await pilot.double_click(second)
        assert app.screen.title_text.startswith("fragments of call #1 get_time")


async def test_typing_speed_reveals_text_at_a_steady_rate(app_stub: StubServer) -> None:
    """With --typing-cps 10, each second of the (manual) clock reveals 10 characters,
    however fast the stream delivered them."""
    now = [0.0]
    app = make_app(app_stub, "text-only", typing_cps=10, clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        await pilot.pause()
        screen = app.stream
        screen.display_tick()
        shown_at_start = screen.text_pane.revealed
        for second in range(1, 4):
            now[0] = float(second)
            screen.display_tick()
            assert screen.text_pane.revealed == shown_at_start + 10 * second
        assert not screen.text_pane.caught_up
        total = len(app.session.state.text)
        now[0] = 1000.0
        screen.display_tick()
        assert screen.text_pane.revealed == total
        assert screen.text_pane.caught_up


@pytest.mark.parametrize("scenario", scenario_params(info.name for info in list_scenarios()))
async def test_every_scenario_settles_with_lanes_matching_the_report(
    app_stub: StubServer, scenario: str
) -> None:
    app = make_app(app_stub, scenario)
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        screen = app.stream
        report = build_report(app.session.state)
        calls = report["tool_calls"]
        assert screen.lanes.indexes == [call["index"] for call in calls]
        for lane in lanes(screen):
            call = next(call for call in calls if call["index"] == lane.index)
            assert (lane.view.state == "parsed" or lane.view.tone == "schema") == (
                call["arguments"] is not None
            )
            assert mode(lane) == ("tree" if call["arguments"] is not None else "raw")
            assert lane.view.chars == len(call.get("arguments_streamed", call["arguments_raw"]))
            on_lane = [a for a in report["anomalies"] if a["index"] == lane.index]
            assert lane.view.anomalies == len(on_lane)
        view = screen.status_bar.view
        assert view.state == report["status"]
        assert view.anomalies == len(report["anomalies"])
        assert screen.error_banner.has_class("-shown") == (report["status"] == "error")
        shown = screen.text_pane.revealed
        labels = sum(bool(report[channel]) for channel in ("reasoning", "refusal"))
        streamed = report.get("text_streamed", report["text"])  # what the pane types out
        assert shown >= len(streamed + report["reasoning"] + report["refusal"])
        assert shown <= len(streamed + report["reasoning"] + report["refusal"]) + 12 * labels


async def test_every_binding_is_in_the_command_palette(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE):
        titles = {command.title for command in app.get_system_commands(app.screen)}
    assert "Quit" in titles
    for binding in StreamScreen.BINDINGS:
        can = app.stream.check_action(binding.action, ())
        assert (binding.description in titles) is bool(can), binding.description


async def test_only_the_lanes_in_view_are_widgets(app_stub: StubServer) -> None:
    app = make_app(app_stub, "many-parallel")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        screen = app.stream
        shown = sorted(screen.lanes.lanes)
        assert len(shown) < len(screen.lanes.indexes) == 16
        assert screen.lanes.call_list.display, "a compact list jumps between the calls"
        for _ in range(15):
            await pilot.press("j")
        assert screen.selected == 15
        assert 15 in screen.lanes.lanes and 0 not in screen.lanes.lanes
        lanes = screen.query(CallLane)
        assert len([lane for lane in lanes if lane.display]) == len(screen.lanes.lanes)
        # lanes a smaller window left are hidden and kept for reuse: never one per call
        assert len(lanes) < len(screen.lanes.indexes)


async def test_preview_follows_each_step_and_gives_way_to_the_parsed_tree(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        for _ in range(4):
            await pilot.press("n")
        lane = app.stream.lanes.lanes[0]
        assert mode(lane) == "raw"
        said: list[str] = []
        app.stream.notify = lambda message, **_: said.append(message)  # type: ignore[method-assign]
        await pilot.press("t")
        assert mode(lane) == "raw"
        assert said == ["call #0 has no tree yet: it is parsed at its end (p previews)"]
        await pilot.press("p")
        assert mode(lane) == "preview"
        assert lane.preview.value == {"location": "Be"}
        assert str(lane.preview_tree.root.label).startswith("preview of 15 chars, not final")
        await pilot.press("n")  # 'ijing'
        assert lane.preview.value == {"location": "Beijing"}
        assert "streaming · preview" in str(lane.border_subtitle)
        await pilot.press("space")
        await wait_settled(app)
        assert mode(lane) == "tree" and lane.view.state == "parsed"
        assert "preview" not in str(lane.border_subtitle)
        await pilot.press("t")
        assert mode(lane) == "raw", "after the finish, t still flips between tree and raw"


async def test_a_preview_of_a_call_in_pieces_is_what_its_pieces_assemble_to(
    app_stub: StubServer,
) -> None:
    """Vertex AI's partialArgs: the lane shows each piece as a line; `p` shows the
    arguments they make so far (it said "nothing parses yet", reading the lines as
    JSON)."""
    app = make_app(app_stub, "vertex-partial-args", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        for _ in range(4):  # the text, the call, "San ", "Francisco"
            await pilot.press("n")
        lane = app.stream.lanes.lanes[0]
        await pilot.press("p")
        assert mode(lane) == "preview"
        assert lane.preview.value == {"destination": {"city": "San Francisco"}}
        assert "nothing parses yet" not in str(lane.preview_tree.root.label)
        for _ in range(2):  # the city's end, then its nights
            await pilot.press("n")
        assert lane.preview.value == {"destination": {"city": "San Francisco", "nights": 3}}


async def test_each_lane_says_when_its_fields_were_complete(app_stub: StubServer) -> None:
    app = make_app(app_stub, "schema-mismatch")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        lines = [str(lane.fields_line.render()) for lane in lanes(app.stream)]
    assert lines == [
        "fields city 0.00s · unit 0.00s · days 0.00s · hourly 0.00s",
        "fields tz 0.00s",
        "fields to 0.00s",
    ]


async def test_a_call_in_pieces_says_when_its_fields_were_complete(app_stub: StubServer) -> None:
    """Vertex AI's partialArgs are not JSON text: their fields line was empty."""
    app = make_app(app_stub, "vertex-partial-args")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        lines = [str(lane.fields_line.render()) for lane in lanes(app.stream)]
    assert lines == ["fields destination 0.00s · stops 0.00s · notes 0.00s", "fields city 0.00s"]


async def test_a_stream_without_calls_says_so_once_it_ends(app_stub: StubServer) -> None:
    app = make_app(app_stub, "text-only", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        placeholder = app.stream.lanes.placeholder
        assert str(placeholder.render()) == "no tool calls yet"
        await pilot.press("space")
        await wait_settled(app)
        assert str(placeholder.render()) == "no tool calls in this stream"


async def test_a_lane_lists_a_dozen_fields_and_counts_the_rest(tmp_path: Path) -> None:
    arguments = json.dumps({f"k{number:02}": number for number in range(20)})
    call = {"index": 0, "id": "call_1", "function": {"name": "many_fields", "arguments": arguments}}
    body = chunk({"tool_calls": [call]}) + chunk({}, finish="tool_calls") + b"data: [DONE]\n\n"
    recording = tmp_path / "many-fields.sse"
    recording.write_bytes(body)
    # Both clocks frozen: on a loaded machine the source's own clock gave "0.01s".
    source = ReplaySource(recording, speed=0, clock=frozen_clock)
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock))
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        line = str(app.stream.lanes.lanes[0].fields_line.render())
    assert line.startswith("fields k00 0.00s · k01 0.00s")
    assert "k11 0.00s · +8 more" in line and "k12" not in line


@pytest.mark.slow
async def test_a_burst_is_shown_whole_at_its_end(app_stub: StubServer) -> None:
    app = make_app(app_stub, "huge-args")  # 1 MB of arguments at full speed
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        screen, state = app.stream, app.session.state
        (lane,) = lanes(screen)
        assert mode(lane) == "tree" and lane.view.fragments == state.calls[0].fragment_count
        assert screen.status_bar.view.shown_events == state.events, "the last draw shows all"
        assert screen._frame_seconds > 0, "what a frame costs was measured"


def test_redraws_leave_the_loop_to_the_stream_and_keys_as_frames_cost_more() -> None:
    assert redraw_due(TICK_SECONDS, 0.0, 0), "cheap frames: 30 a second"
    assert not redraw_due(TICK_SECONDS / 2, 0.0, 0)
    assert not redraw_due(TICK_SECONDS, 0.1, 0), "a 100 ms frame waits as long again"
    assert redraw_due(0.1, 0.1, 0)
    assert not redraw_due(0.5, 0.1, BURST_EVENTS + 1), "a burst leaves the stream more"
    assert redraw_due(1.0, 0.1, BURST_EVENTS + 1), "a 100 ms frame in a burst: one a second"
    assert redraw_due(0.1, 0.1, BURST_EVENTS), "a stream a person could read: its share"


async def test_the_display_timer_draws_nothing_once_the_app_is_quitting(
    app_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual runs the screen's timer in a task of its own until the screen's turn
    to close comes: a draw then mounted the lanes of calls just arrived in an app
    that no longer styles them (KeyError for the lane's frame colour)."""
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        screen, ticks = app.stream, []
        monkeypatch.setattr(screen, "display_tick", lambda: ticks.append(1))
        monkeypatch.setattr(stream_screen, "redraw_due", lambda *_: True)
        screen.tick()
        assert ticks == [1], "while the app runs, the timer draws"
        app.exit()
        for _ in range(SHUTDOWN_POLLS):  # the app's own loop shuts it down
            if not app.is_running:
                break
            await asyncio.sleep(0.01)
        assert not app.is_running
        screen.tick()
        assert ticks == [1], "once it is shutting down, no more"


async def test_a_key_holds_the_stream_until_its_effect_is_drawn(app_stub: StubServer) -> None:
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        pacer, holds = app.pacer, []
        hold = pacer.hold

        def hold_until_released(seconds: float = 0.0) -> None:
            holds.append(seconds)
            hold(3600.0)  # only the drawn effect may release it, not the clock

        pacer.hold = hold_until_released  # type: ignore[method-assign]
        await pilot.press("j")
        assert len(holds) == 1, "the key held the pump"
        await pilot.pause()
        assert not pacer.held, "released once the new selection was on screen"


async def test_a_key_releases_the_stream_only_after_the_frame_that_shows_it(
    app_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Widgets tell the screen of a change only when their own queues next run: a
    release on the first idle turn after the action let the stream read on while
    the screen had not yet heard of the new selection."""
    app = make_app(app_stub, "many-parallel")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_settled(app)
        seen: list[tuple[str, int | None]] = []
        render_lines = CallLane.render_lines

        def drawn(lane: CallLane, crop: Region) -> list[Strip]:
            if lane.selected:
                seen.append(("drawn selected", lane.index))
            return render_lines(lane, crop)

        monkeypatch.setattr(CallLane, "render_lines", drawn)
        release = app.pacer.release

        def released() -> None:
            seen.append(("released", None))
            release()

        monkeypatch.setattr(app.pacer, "release", released)
        for _ in range(6):  # past the window's edge: the lanes move
            seen.clear()
            await pilot.press("j")
            await pilot.pause()
            after = app.stream.selected
            assert ("released", None) in seen
            first_release = seen.index(("released", None))
            assert ("drawn selected", after) in seen[:first_release], seen


async def test_the_footer_keeps_its_keys_until_they_change(app_stub: StubServer) -> None:
    """Rebuilding the footer's keys lays out the whole screen: returning from the
    inspector must not, a change of what the footer shows must."""
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        footer = app.stream.footer
        keys = list(footer.query("FooterKey"))
        assert keys
        await pilot.press("i")
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        assert app.screen is app.stream
        assert list(footer.query("FooterKey")) == keys, "the same key widgets, not new ones"
        footer.show_command_palette = False
        app.stream.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        shown = [key.action for key in footer.query("FooterKey")]
        assert "command_palette" not in shown
        assert shown == [key.action for key in keys if key.action != "command_palette"]


async def test_lanes_reused_as_the_window_moves_show_only_their_new_call(
    app_stub: StubServer,
) -> None:
    """16 calls, a few lanes in view: selecting each call in turn moves the window,
    and a lane that shows another call shows all of it and nothing of the old."""
    app = make_app(app_stub, "many-parallel")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_settled(app)
        screen, state = app.stream, app.session.state
        await pilot.press("T")  # every call raw: the buffers can be compared
        lanes_seen: set[CallLane] = set()
        for _ in range(len(state.calls)):
            await pilot.press("j")
            await redrawn_at_rest(pilot)
            shown = screen.lanes.lanes
            lanes_seen |= set(shown.values())
            assert screen.selected in shown and shown[screen.selected].selected
            for index, lane in shown.items():
                assert lane.slot is state.calls[index] and lane.view is not None
                assert lane.view.title.startswith(f"#{index} ")
                assert mode(lane) == "raw"
                raw = state.calls[index].arguments_raw
                assert "".join(lane.buffer.plain_lines()) == inert(raw)
                assert lane.selected == (index == screen.selected)
            on_display = [lane for lane in screen.lanes.deck.children if lane.display]
            assert on_display == [shown[i] for i in sorted(shown)]  # hidden: kept for reuse
        assert len(lanes_seen) < len(state.calls), "lanes are reused, not one per call"


def count_restyles(app: ToolstreamApp, monkeypatch: pytest.MonkeyPatch) -> list[DOMNode]:
    """Every node Textual applies the stylesheet to from now on."""
    restyled: list[DOMNode] = []
    update_nodes = app.stylesheet.update_nodes

    def counted(nodes: Iterable[DOMNode], animate: bool = False) -> None:
        nodes = list(nodes)
        restyled.extend(nodes)
        update_nodes(nodes, animate=animate)

    monkeypatch.setattr(app.stylesheet, "update_nodes", counted)
    return restyled


async def test_lanes_flip_without_restyling_their_parts(
    app_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lane's tone (streaming, then parsed or failed) and its anomaly badge
    colour its frame without the stylesheet being applied to the lane and all it
    holds again (which made each flip mid-stream a draw that keys waited behind)."""
    app = make_app(app_stub, "schema-mismatch", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        screen = app.stream
        steps = itertools.count()
        while not screen.lanes.lanes:  # (the column's look without calls goes, once)
            assert next(steps) < MAX_STEPS, "no lane came"
            await pilot.press("n")
        restyled = count_restyles(app, monkeypatch)
        tones = set()
        while screen.cursor < screen.horizon:
            assert next(steps) < MAX_STEPS, "the cursor stopped short of the horizon"
            await pilot.press("n")
            tones |= {lane.view.tone for lane in screen.lanes.lanes.values()}
        assert {"streaming", "parsed", "schema"} <= tones
        in_lanes = [
            node
            for node in restyled
            if any(isinstance(a, CallLane) for a in node.ancestors_with_self)
        ]
        # A schema error's line is recoloured by a class on that line alone.
        assert all(node.has_class("lane--error") for node in in_lanes), in_lanes


async def test_the_lane_column_frames_focus_and_restyles_none_of_its_lanes(
    app_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The column's frame takes the accent colour while it, or a tree in one of its
    lanes, has focus; a focus change restyles none of the lanes or their parts
    (Textual restyles a focused widget and all it holds: every lane, ~100 ms at
    each Tab and again at quit)."""
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        column = app.stream.lanes
        accent = Color.parse(app.get_css_variables()["accent"])
        primary = Color.parse(app.get_css_variables()["primary"])
        restyled = count_restyles(app, monkeypatch)
        tree = column.query(ArgumentsTree).first()
        frames = []
        for target in (column, None, tree, None):
            app.screen.set_focus(target)
            await pilot.pause()
            frames.append(column.styles.border_top)
        assert frames == [("round", accent), ("round", primary)] * 2
        # The tree restyles itself for its own focus rules; nothing else in the column.
        assert not [node for node in restyled if column in node.ancestors and node is not tree]
