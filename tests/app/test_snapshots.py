"""Pictures of the app at deterministic points, driven against the stub server
over real loopback HTTP. Every snapshot waits on a condition, never a sleep:
the whole stream received (worker complete) and, unless paused, everything on
screen (`settled`). Times come from a frozen clock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.helpers.apps import make_app, redrawn_at_rest, settled_then, wait_received
from toolstream_stubs import StubServer

Snap = Callable[..., bool]
RunBefore = Callable[[Pilot[Any]], Awaitable[None]]


def stepped(steps: int) -> RunBefore:
    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_received(pilot.app)  # type: ignore[arg-type]
        for _ in range(steps):
            await pilot.press("n")
        await redrawn_at_rest(pilot)
        await pilot.wait_for_scheduled_animations()

    return run_before


def at_event(number: int) -> RunBefore:
    """Paused with the display cursor on wire event `number` (as `number` steps
    would leave it, without pressing n that many times)."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_received(pilot.app)  # type: ignore[arg-type]
        screen = pilot.app.stream  # type: ignore[attr-defined]
        screen.cursor = number
        screen.draw(None)
        await redrawn_at_rest(pilot)
        await pilot.wait_for_scheduled_animations()

    return run_before


def test_demo_mid_stream(snap_compare: Snap, app_stub: StubServer) -> None:
    """Paused after 16 events of `demo`: the text typed out, both lanes growing
    raw with alternately shaded fragments, nothing parsed yet; the status bar
    says streaming and paused."""
    app = make_app(app_stub, "demo", start_paused=True)
    assert snap_compare(app, terminal_size=(120, 36), run_before=stepped(16))


def test_demo_finished(snap_compare: Snap, app_stub: StubServer) -> None:
    """`demo` finished: the full sentence, both lanes flipped to parsed trees
    (city 北京 / 上海, unit celsius), status finished."""
    app = make_app(app_stub, "demo")
    assert snap_compare(app, terminal_size=(120, 36), run_before=settled_then())


def test_parse_error(snap_compare: Snap, app_stub: StubServer) -> None:
    """`invalid-json`: lane 0 stays raw with a red border, the error message and
    the offending `}` highlighted; lane 1 is a tree; 1 call not parsed."""
    app = make_app(app_stub, "invalid-json")
    assert snap_compare(app, terminal_size=(100, 30), run_before=settled_then())


def test_truncated(snap_compare: Snap, app_stub: StubServer) -> None:
    """`truncated`: the lane keeps its partial buffer `{"location":"San Franci`,
    marked truncated; the status bar says truncated with one anomaly."""
    app = make_app(app_stub, "truncated")
    assert snap_compare(app, terminal_size=(100, 30), run_before=settled_then())


def test_http_401(snap_compare: Snap, app_stub: StubServer) -> None:
    """`http-401`: a red banner with the status, the server's message and its
    JSON body; status error; no lanes."""
    app = make_app(app_stub, "http-401")
    assert snap_compare(app, terminal_size=(100, 30), run_before=settled_then())


def test_sixteen_parallel_lanes(snap_compare: Snap, app_stub: StubServer) -> None:
    """`many-parallel` finished: a compact list of the 16 calls (the ones shown as
    lanes marked, the selected one highlighted) above the first lanes, as trees;
    "tool calls · 1-N of 16"."""
    app = make_app(app_stub, "many-parallel")
    assert snap_compare(app, terminal_size=(120, 40), run_before=settled_then())


def test_raw_log_open(snap_compare: Snap, app_stub: StubServer) -> None:
    """`weather` with the raw log toggled on: every SSE event numbered, with its
    arrival time and its delta (not the envelope), ending with [DONE]."""
    app = make_app(app_stub, "weather")
    assert snap_compare(app, terminal_size=(120, 36), run_before=settled_then("l"))


def test_narrow_terminal(snap_compare: Snap, app_stub: StubServer) -> None:
    """`demo` finished in 80x24: panes side by side, still readable; the status
    bar starts with the state and the anomaly count."""
    app = make_app(app_stub, "demo")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled_then())


@pytest.mark.parametrize("size", [(80, 24), (70, 20)])
def test_parallel_mid_stream_in_a_small_terminal(
    snap_compare: Snap, app_stub: StubServer, size: tuple[int, int]
) -> None:
    """`many-parallel` paused at event 400: the compact list of calls, lanes raw
    with every character of their buffers (emoji and accents) inside the lane,
    none under the scrollbar; the status bar says PAUSED · at event 400 of 1,428,
    with the scrub bar under it."""
    app = make_app(app_stub, "many-parallel", start_paused=True)
    assert snap_compare(app, terminal_size=size, run_before=at_event(400))


def test_parallel_finished_at_80x24(snap_compare: Snap, app_stub: StubServer) -> None:
    """`parallel` finished in 80x24: all three calls as small trees, each lane as
    tall as its tree, every header in view; the empty text pane narrow."""
    app = make_app(app_stub, "parallel")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled_then())


def test_inspector(snap_compare: Snap, app_stub: StubServer) -> None:
    """The inspector on `weather`: 5 fragments of 5, 5, 5, 5, 2 characters,
    escapes visible, none parses as JSON on its own."""
    app = make_app(app_stub, "weather")
    assert snap_compare(app, terminal_size=(120, 30), run_before=settled_then("i"))


def test_anomaly_list(snap_compare: Snap, app_stub: StubServer) -> None:
    """The anomaly list on `name-repeated`: id-repeated and name-repeated on
    lane 0, each counted 5 times."""
    app = make_app(app_stub, "name-repeated")
    assert snap_compare(app, terminal_size=(120, 30), run_before=settled_then("a"))


@pytest.mark.parametrize("scenario", ["reasoning", "refusal"])
def test_reasoning_and_refusal_are_set_apart(
    snap_compare: Snap, app_stub: StubServer, scenario: str
) -> None:
    """Reasoning in muted italics behind a `thinking` label, then the answer;
    a refusal in bold red behind a `refusal` label."""
    app = make_app(app_stub, scenario)
    assert snap_compare(app, terminal_size=(100, 24), run_before=settled_then())


def test_anthropic_stream(snap_compare: Snap, app_stub: StubServer) -> None:
    """`anthropic-thinking`: dialect anthropic in the status bar; the thinking text
    set apart above the answer; the tool_use block's lane numbered by its content
    block index (#2) as a tree."""
    app = make_app(app_stub, "anthropic-thinking")
    assert snap_compare(app, terminal_size=(110, 28), run_before=settled_then())


def test_responses_stream(snap_compare: Snap, app_stub: StubServer) -> None:
    """`responses-interleaved`: dialect openai-responses; lanes #1 and #2 titled
    with call_id and the fc_ item id, both trees."""
    app = make_app(app_stub, "responses-interleaved")
    assert snap_compare(app, terminal_size=(110, 28), run_before=settled_then())


def test_schema_errors(snap_compare: Snap, app_stub: StubServer) -> None:
    """`schema-mismatch`, whose request declares get_weather and get_time: lane 0
    parsed but yellow, "3 schema errors", listing $ (hourly unexpected), $.days
    (30 > 14) and $.unit (kelvin not an allowed unit); lane 1 a clean tree;
    lane 2 (send_email) with an anomaly badge for the undeclared tool; the status
    bar says 1 call against schema."""
    app = make_app(app_stub, "schema-mismatch")
    assert snap_compare(app, terminal_size=(120, 36), run_before=settled_then())


def test_preview_mid_stream(snap_compare: Snap, app_stub: StubServer) -> None:
    """`demo` with previews on (`--preview`), paused after 16 events: both lanes
    show a yellow "preview of N chars, not final" tree of what their arguments
    parse to so far (city 北京 in lane 0, a cut-off city in lane 1), subtitles
    "streaming · preview", and a fields line under each."""
    app = make_app(app_stub, "demo", start_paused=True, preview=True)
    assert snap_compare(app, terminal_size=(120, 36), run_before=stepped(16))


def test_gemini_parallel_calls(snap_compare: Snap, app_stub: StubServer) -> None:
    """`gemini-text-tools` finished: the sentence typed out, two get_weather lanes
    (Paris, Tokyo) each flipped to a tree from the one fragment Gemini sends whole;
    the status bar says gemini, finished STOP."""
    app = make_app(app_stub, "gemini-text-tools")
    assert snap_compare(app, terminal_size=(110, 28), run_before=settled_then())


def test_bedrock_stream_mid_call(snap_compare: Snap, app_stub: StubServer) -> None:
    """`bedrock-text-tools` paused after 12 event-stream frames: the CJK text typed
    out; lanes 1 and 2 (the content-block indexes; block 0 is the text) raw, with
    their fragments shaded: lane 1 holds its whole input, lane 2's stops after
    `"unit` (its city sent as \\u escapes); nothing parsed yet, as Bedrock's
    finish has not come; the status bar says bedrock, streaming and paused."""
    app = make_app(app_stub, "bedrock-text-tools", start_paused=True)
    assert snap_compare(app, terminal_size=(110, 28), run_before=stepped(12))
