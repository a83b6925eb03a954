"""The app's behaviour, driven with Pilot against the stub over loopback HTTP."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streaming import untimed

from conftest import CliRunner, frozen_clock, make_app, wait_received, wait_settled
from toolstream_stubs import StubServer, list_scenarios
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.app import BURST_EVENTS, BURST_REDRAW_SECONDS
from toolstream_tui.app.widgets.lane import CallLane
from toolstream_tui.app.widgets.text_pane import TextPane
from toolstream_tui.core import build_report
from toolstream_tui.core.events import (
    CallParsed,
    CallStarted,
    FinishSeen,
    WireEvent,
)
from toolstream_tui.sources.replay import ReplaySource

SIZE = (120, 40)


def lane_view(lane: CallLane) -> str:
    return "tree" if lane.show_tree else "raw"


async def test_lanes_flip_exactly_at_the_finish_event(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        finish_seen = False
        while not finish_seen:
            await pilot.press("n")
            finish_seen = any(isinstance(event, FinishSeen) for event in app.handled)
            lane = app.lanes.lanes[0]
            if not finish_seen:
                assert lane_view(lane) == "raw", "flipped before the finish"
                assert not lane.parsed
        assert lane_view(app.lanes.lanes[0]) == "tree"
        assert app.lanes.lanes[0].arguments == {"location": "Beijing"}
        kinds = [type(event) for event in app.handled]
        assert kinds.index(FinishSeen) < kinds.index(CallParsed)


async def test_step_advances_one_wire_event(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        for expected_events in range(1, 5):
            await pilot.press("n")
            wire = [event.number for event in app.handled if isinstance(event, WireEvent)]
            assert wire == list(range(1, expected_events + 1))
        lane = app.lanes.lanes[0]
        assert lane.fragments == 3  # the head carried none; then '{"loc', 'ation', '":"Be'
        assert "".join(lane.buffer.plain_lines()) == '{"location":"Be'
        await pilot.press("n")
        assert lane.fragments == 4


async def test_pause_holds_the_display_and_resume_catches_up(app_stub: StubServer) -> None:
    app = make_app(app_stub, "demo", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        await pilot.pause()
        assert app.handled == []
        assert app.lanes.lanes == {}
        await pilot.press("space")
        await wait_settled(app)
        assert [lane.state for lane in app.lanes.ordered()] == ["parsed", "parsed"]
        text = app.query_one(TextPane).typed.plain_lines()
        assert "".join(text) == "I'll check the weather in 北京 and 上海 for you."


async def test_toggle_lane_and_all_lanes(app_stub: StubServer) -> None:
    app = make_app(app_stub, "demo")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        first, second = app.lanes.ordered()
        assert (lane_view(first), lane_view(second)) == ("tree", "tree")
        first.focus()
        await pilot.press("t")
        assert (lane_view(first), lane_view(second)) == ("raw", "tree")
        await pilot.press("T")
        assert (lane_view(first), lane_view(second)) == ("tree", "tree")
        await pilot.press("T")
        assert (lane_view(first), lane_view(second)) == ("raw", "raw")


async def test_a_failed_parse_stays_raw_and_marks_the_error_position(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "invalid-json")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        bad, good = app.lanes.ordered()
        assert bad.state == "invalid JSON" and lane_view(bad) == "raw"
        assert good.state == "parsed" and lane_view(good) == "tree"
        raw = "".join(bad.buffer.plain_lines())
        assert bad.buffer.mark == raw.index("}")
        await pilot.press("t")  # a failed lane has no tree to toggle to
        assert lane_view(bad) == "raw"


async def test_truncated_stream_leaves_lanes_raw_and_marked(app_stub: StubServer) -> None:
    app = make_app(app_stub, "truncated")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        (lane,) = app.lanes.ordered()
        assert lane.state == "truncated" and lane_view(lane) == "raw"
        assert "".join(lane.buffer.plain_lines()) == '{"location":"San Franci'
        assert app.facts.state == "truncated"


async def test_raw_log_toggle_shows_every_event(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        assert not app.raw_log.display
        await pilot.press("l")
        assert app.raw_log.display
        lines = [line for line in app.raw_log.plain_lines() if line.startswith("#")]
        assert len(lines) == app.session.state.events == 8  # head, 5 fragments, finish, [DONE]
        assert lines[-1].endswith("data: [DONE]")
        longest = max(map(len, app.raw_log.plain_lines()))
        assert app.raw_log.virtual_size.width >= longest, "measured once shown: scrolls to the end"


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
        await pilot.press("r")
        await wait_settled(app)
        assert app.lanes.lanes[0].arguments == {"location": "Beijing"}
        started = [event for event in app.handled if isinstance(event, CallStarted)]
        assert len(started) == 1, "the first run's events were not cleared"
        requests = [r for r in app_stub.requests if r.path.endswith("weather/v1/chat/completions")]
        assert len(requests) >= 2


async def test_http_error_shows_status_and_body(app_stub: StubServer) -> None:
    app = make_app(app_stub, "http-401")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        banner = app.query_one("#error-banner")
        assert banner.display
        shown = str(banner.render())
        assert "HTTP 401: Incorrect API key provided" in shown
        assert '"code":"invalid_api_key"' in shown
        assert app.facts.state == "error"


async def test_inspector_lists_every_fragment_and_none_parses_alone(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.press("i")
        screen = app.screen
        assert [row["text"] for row in screen.rows] == [
            '"{\\"loc"',
            '"ation"',
            '"\\":\\"Be"',
            '"ijing"',
            '"\\"}"',
        ]
        assert [row["length"] for row in screen.rows] == [5, 5, 5, 5, 2]
        assert not any(row["parses_alone"] for row in screen.rows)
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


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
    app = ToolstreamApp(ReplaySource(recording, speed=0, clock=frozen_clock), clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_settled(app)
        await pilot.pause()
        shown = "".join(app.text_pane.typed.plain_lines())
        assert shown == "[bold]not bold[/] [link=https://x.invalid]x[/link] ␛[31mred␛[0m bell␇"
        lane = app.lanes.lanes[0]
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
        second = app.lanes.lanes[1]
        await pilot.click(second)
        assert app.focused is second
        assert app.screen is app.screen_stack[0]
        await pilot.double_click(second)
        assert app.screen.title_text.startswith("fragments of call #1 get_time")


async def test_typing_speed_reveals_text_at_a_steady_rate(app_stub: StubServer) -> None:
    """With --typing-cps 10, each second of the (manual) clock reveals 10 characters,
    however fast the stream delivered them."""
    now = [0.0]
    app = make_app(app_stub, "text-only", typing_cps=10)
    app.clock = lambda: now[0]
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        await pilot.pause()
        app.tick()
        shown_at_start = app.text_pane.revealed
        for second in range(1, 4):
            now[0] = float(second)
            app.tick()
            assert app.text_pane.revealed == shown_at_start + 10 * second
        assert not app.text_pane.caught_up
        total = len("".join(app.session.state.text))
        now[0] = 1000.0
        app.tick()
        assert app.text_pane.revealed == total
        assert app.text_pane.caught_up


@pytest.mark.parametrize("scenario", [info.name for info in list_scenarios()])
async def test_every_scenario_settles_with_lanes_matching_the_report(
    app_stub: StubServer, scenario: str
) -> None:
    app = make_app(app_stub, scenario)
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        report = build_report(app.session.state)
        lanes = app.lanes.ordered()
        assert [lane.index for lane in lanes] == [call["index"] for call in report["tool_calls"]]
        for lane, call in zip(lanes, report["tool_calls"], strict=True):
            assert lane.parsed == (call["arguments"] is not None)
            assert lane.show_tree == lane.parsed
            assert lane.arguments == call["arguments"]
            assert lane.chars == len(call.get("arguments_streamed", call["arguments_raw"]))
            on_lane = [a for a in report["anomalies"] if a["index"] == lane.index]
            assert len(lane.anomalies) == len(on_lane)
        assert app.facts.state == report["status"]
        assert app.error_banner.has_class("-shown") == (report["status"] == "error")
        assert app.text_pane.revealed == len(
            report["text"] + report["reasoning"] + report["refusal"]
        )


async def test_every_binding_is_in_the_command_palette(app_stub: StubServer) -> None:
    app = make_app(app_stub, "weather")
    async with app.run_test(size=SIZE):
        titles = {command.title for command in app.get_system_commands(app.screen)}
    assert "Quit" in titles
    for binding in ToolstreamApp.BINDINGS:
        assert binding.description in titles or binding.action == "quit"


async def test_only_lanes_in_view_are_redrawn(app_stub: StubServer) -> None:
    app = make_app(app_stub, "many-parallel")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        lanes = app.lanes.ordered()
        assert lanes[0] in app.lanes.visible()
        assert lanes[-1] not in app.lanes.visible()
        app.lanes.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert lanes[-1] in app.lanes.visible()
        assert lanes[0] not in app.lanes.visible()
        assert len(app.lanes.visible()) < len(lanes)


async def test_preview_follows_each_step_and_gives_way_to_the_parsed_tree(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "weather", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        for _ in range(4):
            await pilot.press("n")
        lane = app.lanes.lanes[0]
        assert lane.view == "raw"
        await pilot.press("p")
        assert lane.view == "preview"
        assert lane.preview.value == {"location": "Be"}
        assert str(lane.preview_tree.root.label).startswith("preview of 15 chars, not final")
        await pilot.press("n")  # 'ijing'
        assert lane.preview.value == {"location": "Beijing"}
        assert "streaming · preview" in str(lane.border_subtitle)
        await pilot.press("space")
        await wait_settled(app)
        assert lane.view == "tree" and lane.arguments == {"location": "Beijing"}
        assert "preview" not in str(lane.border_subtitle)
        await pilot.press("t")
        assert lane.view == "raw", "after the finish, t still flips between tree and raw"


async def test_each_lane_says_when_its_fields_were_complete(app_stub: StubServer) -> None:
    app = make_app(app_stub, "schema-mismatch")
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        lines = [str(lane.fields_line.render()) for lane in app.lanes.ordered()]
    assert lines == [
        "fields city 0.00s · unit 0.00s · days 0.00s · hourly 0.00s",
        "fields tz 0.00s",
        "fields to 0.00s",
    ]


async def test_a_stream_without_calls_says_so_once_it_ends(app_stub: StubServer) -> None:
    app = make_app(app_stub, "text-only", start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_received(app)
        assert str(app.lanes.placeholder.render()) == "no tool calls yet"
        await pilot.press("space")
        await wait_settled(app)
        assert str(app.lanes.placeholder.render()) == "no tool calls in this stream"


async def test_a_lane_lists_a_dozen_fields_and_counts_the_rest(tmp_path: Path) -> None:
    arguments = json.dumps({f"k{number:02}": number for number in range(20)})
    call = {"index": 0, "id": "call_1", "function": {"name": "many_fields", "arguments": arguments}}
    body = chunk({"tool_calls": [call]}) + chunk({}, finish="tool_calls") + b"data: [DONE]\n\n"
    recording = tmp_path / "many-fields.sse"
    recording.write_bytes(body)
    app = ToolstreamApp(ReplaySource(recording, speed=0), clock=frozen_clock)
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        line = str(app.lanes.lanes[0].fields_line.render())
    assert line.startswith("fields k00 0.00s · k01 0.00s")
    assert "k11 0.00s · +8 more" in line and "k12" not in line


async def test_a_burst_is_redrawn_at_a_slower_pace_and_shown_whole_at_its_end(
    app_stub: StubServer,
) -> None:
    app = make_app(app_stub, "huge-args")  # 1 MB of arguments at full speed
    async with app.run_test(size=SIZE):
        await wait_settled(app)
        (lane,) = app.lanes.ordered()
        assert lane.view == "tree" and lane.fragments == len(app.session.state.calls[0].fragments)
        assert app.facts.events == app.session.state.events, "the last redraw shows every event"
        assert not app.in_burst()
        app._events_at_redraw = app.session.state.events - BURST_EVENTS - 1
        app._redrawn_at = time.perf_counter() + 60  # a redraw "just now", however slow this runs
        assert app.in_burst(), "many events since a recent redraw"
        app._redrawn_at = time.perf_counter() - BURST_REDRAW_SECONDS
        assert not app.in_burst(), "the slower pace is due"
        app._events_at_redraw = app.session.state.events - BURST_EVENTS
        app._redrawn_at = time.perf_counter() + 60
        assert not app.in_burst(), "a stream a person could read is never held back"
