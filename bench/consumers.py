"""What the benchmark times: floors that only parse JSON, the project's core, the
official openai SDK's accumulator, whole processes, and the Textual app.

Every consumer reads the same SSE bytes. In-process consumers return what they
built so the runner can check it; the others return seconds they measured.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import toolstream_tui
from toolstream_tui.core import StreamSession, build_report

READ_SIZE = 64 * 1024
APP_SIZE = (120, 40)
DONE = b"[DONE]"
Loads = Callable[[bytes], Any]

# The floor as a whole process: read the file, split, json.loads each payload.
FLOOR_SCRIPT = """\
import json, sys
for block in open(sys.argv[1], "rb").read().split(b"\\n\\n"):
    payload = block.removeprefix(b"data: ")
    if payload and payload != b"[DONE]":
        json.loads(payload)
"""


def project_path() -> str:
    """Where the measured toolstream_tui is imported from."""
    return str(Path(toolstream_tui.__file__).parent)


# -- in process ---------------------------------------------------------------
def payloads(body: bytes) -> Iterator[bytes]:
    """Each event's JSON payload: split on blank lines, strip `data: `."""
    for block in body.split(b"\n\n"):
        payload = block.removeprefix(b"data: ")
        if payload and payload != DONE:
            yield payload


def floor(body: bytes, loads: Loads) -> int:
    """Parse every payload and nothing else; returns the number of payloads."""
    count = 0
    for payload in payloads(body):
        loads(payload)
        count += 1
    return count


def floor_json(body: bytes) -> int:
    return floor(body, json.loads)


def orjson_loads() -> Loads | None:
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


def core(body: bytes, live: bool = False) -> dict[str, Any]:
    """The project's StreamSession fed in 64 KiB reads, then the final report.
    `live=False` is the headless path; `live=True` also makes the per-event
    detail events the app consumes."""
    session = StreamSession("bench", live=live)
    session.open(200, "text/event-stream")
    for start in range(0, len(body), READ_SIZE):
        session.feed(body[start : start + READ_SIZE], time.perf_counter())
    session.close(time.perf_counter())
    return build_report(session.state)


def sdk_version() -> str | None:
    try:
        import openai
    except ImportError:
        return None
    return str(openai.__version__)


def sdk(body: bytes, construct: bool = False) -> list[Any]:
    """The openai SDK's stream accumulator, fed each chunk as a ChatCompletionChunk;
    returns every call's parsed arguments. `construct` builds chunks without
    validation, as the SDK's own Stream does by default; otherwise `model_validate`."""
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for payload in payloads(body):
        data = json.loads(payload)
        if construct:
            chunk = ChatCompletionChunk.construct(**data)
        else:
            chunk = ChatCompletionChunk.model_validate(data)
        for _event in state.handle_chunk(chunk):
            pass
    message = state.get_final_completion().choices[0].message
    return [json.loads(call.function.arguments) for call in message.tool_calls or []]


# -- whole processes ----------------------------------------------------------
def console_script(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"console script {name} is not installed")
    return found


def headless_argv(path: Path) -> list[str]:
    return [console_script("toolstream-tui"), "--replay", str(path), "--headless", "--speed", "0"]


def floor_argv(path: Path) -> list[str]:
    return [sys.executable, "-c", FLOOR_SCRIPT, str(path)]


def process_seconds(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Wall time of a whole process, its output thrown away; it must exit 0."""
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env
    )
    seconds = time.perf_counter() - start
    check_exit(argv, done)
    return seconds


def check_exit(argv: list[str], done: subprocess.CompletedProcess[bytes]) -> None:
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"{Path(argv[0]).name} exited {done.returncode}: {last[0]}")


def peak_rss_kb(argv: list[str]) -> tuple[int, str]:
    """Peak resident set of a whole process in KiB, and how it was measured."""
    if Path("/usr/bin/time").exists():
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "rss"
            command = ["/usr/bin/time", "-f", "%M", "-o", str(out), *argv]
            done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            check_exit(argv, done)
            return int(out.read_text().split()[-1]), "/usr/bin/time -f %M"
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True
    )
    return int(done.stdout.split()[-1]), "getrusage(RUSAGE_CHILDREN)"


# -- the Textual app ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class KeyPress:
    at: float  # seconds since the app was started
    events: int  # SSE events the core had taken when the key was sent
    settled: bool  # whether the stream was already all on screen
    latency: float  # seconds until the key's action had run


async def app_settle_seconds(
    path: Path, timeout: float = 600.0, preview: bool = False, stats: dict[str, Any] | None = None
) -> float:
    """Start the app on a replay at speed 0; seconds until everything is on screen.
    `preview`: with live previews on; `stats` receives their parse counts."""
    from toolstream_tui.app import ToolstreamApp
    from toolstream_tui.process import tune_garbage_collector
    from toolstream_tui.sources.replay import ReplaySource
    from toolstream_tui.watching.options import WatchOptions

    tune_garbage_collector()  # as run_app does
    app = ToolstreamApp(ReplaySource(path, speed=0), WatchOptions(preview=preview))
    start = time.perf_counter()
    async with app.run_test(size=APP_SIZE):
        await asyncio.wait_for(app.settled_event.wait(), timeout)
        seconds = time.perf_counter() - start
        if stats is not None:
            lanes = list(app.stream.lanes.lanes.values())
            stats["parses"] = sum(lane.preview.parses for lane in lanes)
            stats["parsed_chars"] = sum(lane.preview.parsed_chars for lane in lanes)
            stats["argument_chars"] = sum(lane.view.chars for lane in lanes if lane.view)
    if app.session.state.status.value != "finished":
        raise RuntimeError(f"app ended {app.session.state.status.value} on {path}")
    return seconds


async def until_toggled(widget: Any, shown: bool) -> None:
    while widget.display == shown:
        await asyncio.sleep(0.001)


async def key_latencies(
    path: Path, gap: float = 0.1, limit: int = 20, timeout: float = 600.0
) -> list[KeyPress]:
    """While the app streams `path` at speed 0, press `l` (raw log) every `gap`
    seconds until the stream is on screen, then once more; time each toggle."""
    from toolstream_tui.app import ToolstreamApp
    from toolstream_tui.process import tune_garbage_collector
    from toolstream_tui.sources.replay import ReplaySource

    tune_garbage_collector()  # as run_app does
    app = ToolstreamApp(ReplaySource(path, speed=0))
    start = time.perf_counter()
    presses: list[KeyPress] = []
    async with app.run_test(size=APP_SIZE) as pilot:
        while len(presses) < limit:
            settled = app.settled_event.is_set()
            shown = app.stream.raw_log.display
            events = app.session.state.events
            sent = time.perf_counter()
            press = asyncio.create_task(pilot.press("l"))
            await asyncio.wait_for(until_toggled(app.stream.raw_log, shown), timeout)
            handled = time.perf_counter()
            presses.append(KeyPress(sent - start, events, settled, handled - sent))
            await press
            if settled:
                break
            await asyncio.sleep(gap)
    return presses
