"""What the app loads before its first frame: only what that frame needs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.apps import wait_settled
from tests.helpers.screen import screen_rows
from tests.helpers.sse import sse
from tests.helpers.waiting import until
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.screens import stream as stream_screen
from toolstream_tui.sources.base import BodyChunk, ResponseHead, SourceItems

# Loaded when a key, a bundle or --otlp asks for them, never at the start.
LATER_MODULES = (
    "toolstream_tui.app.screens.inspector",
    "toolstream_tui.watching.bundle",
    "toolstream_tui.otlp.watching",
)

# The app on a replay until the stream is on screen, then `i` on its one call:
# which of LATER_MODULES were loaded at each point.
PROGRAM = """
import asyncio, json, sys
from pathlib import Path
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.sources.replay import ReplaySource

LATER = {later!r}

def loaded():
    return [name for name in LATER if name in sys.modules]

async def main():
    app = ToolstreamApp(ReplaySource(Path({replay!r}), speed=0))
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.settled_event.wait(), 60)
        shown = loaded()
        await pilot.press("i")
        await pilot.pause()
        print(json.dumps({{"shown": shown, "inspected": loaded()}}))

asyncio.run(main())
"""


def test_the_first_frame_loads_no_inspector_bundle_or_otlp(tmp_path: Path) -> None:
    """The stream on screen without the inspector, the bundle writer or
    OpenTelemetry loaded; `i` loads the inspector (so the check can fail)."""
    replay = tmp_path / "one-call.sse"
    replay.write_bytes(
        sse(
            {"choices": [{"index": 0, "delta": {"tool_calls": [call_start()]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            done=True,
        )
    )
    code = PROGRAM.format(later=LATER_MODULES, replay=str(replay))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert loaded == {"shown": [], "inspected": ["toolstream_tui.app.screens.inspector"]}


def call_start() -> dict[str, object]:
    return {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1}'}}


class GatedSource:
    """A stream whose head arrives at once and whose text waits for `gate`."""

    label = "gated"

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def items(self) -> SourceItems:
        yield ResponseHead(200, "text/event-stream", t=0.0)
        await self.gate.wait()
        text = {"choices": [{"index": 0, "delta": {"content": "hello"}}]}
        yield BodyChunk(sse(text, done=True), t=0.1)


def footer_row(app: ToolstreamApp) -> str:
    return screen_rows(app)[-1]


async def test_the_footer_builds_its_keys_after_the_streams_first_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building the footer's keys takes the first frame some 40 ms: they wait until
    the screen has drawn something of the stream (here, longer than their own
    deadline would let them)."""
    monkeypatch.setattr(stream_screen, "KEYS_HELD_AT_MOST_SECONDS", 600.0)
    source = GatedSource()
    app = ToolstreamApp(source)
    async with app.run_test(size=(120, 20)) as pilot:
        await until(pilot, lambda: app.session.state.http_status == 200, "the response head")
        await pilot.pause()
        assert app.stream.footer.keys_held and "Quit" not in footer_row(app)
        source.gate.set()
        await wait_settled(app)
        assert not app.stream.footer.keys_held and "q Quit" in footer_row(app)


async def test_a_source_that_sends_nothing_still_gets_its_keys() -> None:
    """A server that has not answered yet: the keys come after a fifth of a second."""
    source = GatedSource()
    app = ToolstreamApp(source)
    async with app.run_test(size=(120, 20)) as pilot:
        await until(pilot, lambda: "q Quit" in footer_row(app), "the footer's keys")
        assert not app.session.state.events
        source.gate.set()
