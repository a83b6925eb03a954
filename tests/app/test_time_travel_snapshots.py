"""Pictures of a recording of three parallel calls, cut mid-event before its
finish, opened paused at three moments (as `--replay FILE --at N` does): before
the third call starts, in the middle of the calls, and after the cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.helpers.apps import frozen_clock, redrawn_at_rest, wait_received
from toolstream_stubs import load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.core import StreamSession
from toolstream_tui.sources.base import BodyChunk, ResponseHead
from toolstream_tui.sources.recording import Recorder
from toolstream_tui.sources.replay import ReplaySource
from toolstream_tui.watching.options import WatchOptions

SIZE = (110, 30)
KEPT_EVENTS = 17  # of `parallel`'s 24: the calls' arguments are under way
SECONDS_PER_EVENT = 0.1


def cut_reads() -> list[tuple[float, bytes]]:
    """`parallel`'s first KEPT_EVENTS events, one read each 0.1 s apart, then half
    of the next event: the connection ended there."""
    events = load_scenario("parallel").events
    reads = [(SECONDS_PER_EVENT * (n + 1), block) for n, block in enumerate(events[:KEPT_EVENTS])]
    half = events[KEPT_EVENTS][: len(events[KEPT_EVENTS]) // 2]
    return [*reads, (SECONDS_PER_EVENT * (KEPT_EVENTS + 1), half)]


def write_recording(path: Path) -> Path:
    recorder = Recorder(path, "test")
    recorder.write(ResponseHead(status=200, content_type="text/event-stream", t=0.05))
    for t, body in cut_reads():
        recorder.write(BodyChunk(body, t))
    recorder.close()
    return path


def third_call_start() -> int:
    session = StreamSession("cut", live=False)
    session.open(200, "text/event-stream")
    for t, body in cut_reads():
        session.feed(body, t)
    return session.state.calls[2].started_event


def opened_at(tmp_path: Path, event: int) -> ToolstreamApp:
    source = ReplaySource(write_recording(tmp_path / "cut.sse"), speed=0, clock=frozen_clock)
    source.label = "replay:cut.sse"  # not tmp_path, which differs from run to run
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock, start_at=event))
    app.animation_level = "none"
    return app


async def arrived(pilot: Pilot[Any]) -> None:
    """The recording read, the cursor on the event asked for, the lanes at rest."""
    await wait_received(pilot.app)  # type: ignore[arg-type]
    pilot.app.stream.display_tick()  # type: ignore[attr-defined]
    await redrawn_at_rest(pilot)
    await pilot.wait_for_scheduled_animations()


def test_before_the_third_call_starts(snap_compare: Any, tmp_path: Path) -> None:
    """Paused at the event before call #2 starts (event 4): two lanes, #0
    get_weather with its first fragment `{"loca` and #1 get_time with none yet, no
    third lane; the status says PAUSED · at event 4 of 17 · 0.40 s; the scrub
    bar's dot a quarter along, and a ▲ at its right end where the cut's anomaly
    will be seen."""
    event = third_call_start() - 1
    assert snap_compare(opened_at(tmp_path, event), terminal_size=SIZE, run_before=arrived)


def test_in_the_middle_of_the_calls(snap_compare: Any, tmp_path: Path) -> None:
    """Paused at event 12: three lanes streaming, their buffers shaded fragment by
    fragment, part of each call's arguments shown; no anomalies yet."""
    assert snap_compare(opened_at(tmp_path, 12), terminal_size=SIZE, run_before=arrived)


def test_after_the_cut(snap_compare: Any, tmp_path: Path) -> None:
    """Opened past the end: the stream as it ended, truncated (in the error
    colour), the three lanes red with 'stream ended before the finish', the
    anomalies counted in the status, the scrub bar's dot at its right end."""
    assert snap_compare(opened_at(tmp_path, 999), terminal_size=SIZE, run_before=arrived)
