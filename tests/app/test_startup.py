"""What the app loads before its first frame: only what that frame needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.sse import sse

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
