"""Repro bundles: everything someone else needs to see what a stream did — the
recording (request with secrets redacted, response bytes, arrival times), the
report, a picture of the screen and a README saying how to replay it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..core import StreamState
from ..core.report import printable_pieces, report_pieces
from ..core.upto import report_upto, shown_event
from ..core.visible import inert
from ..sources.base import LIMIT, TRANSPORT, TransportError
from ..sources.recording import Tape, WatchStop, timing_path

RECORDING = "stream.sse"
REPORT = "report.json"
SCREENSHOT = "screen.svg"
README = "README.md"
TITLE = "# toolstream-tui repro bundle"


def others_files(directory: Path) -> list[str]:
    """The names in `directory` a bundle would not have written: none when it is
    missing, empty or holds a bundle (its files, its README's title), so that
    writing a bundle there overwrites nobody's work."""
    try:
        names = sorted(entry.name for entry in directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):  # to be made (or failing to be, said then)
        return []
    ours = {RECORDING, timing_path(Path(RECORDING)).name, REPORT, SCREENSHOT, README}
    if README in names and not _titled_as_a_bundle(directory / README):
        ours.discard(README)
    return [name for name in names if name not in ours]


def _titled_as_a_bundle(readme_path: Path) -> bool:
    try:
        with readme_path.open("rb") as file:
            return file.readline().rstrip() == TITLE.encode()
    except OSError:
        return False


def write_bundle(
    directory: Path,
    tape: Tape,
    state: StreamState,
    screenshot: str | None,
    *,
    upto: int | None = None,
) -> Path:
    """Write the bundle into `directory` (created if needed); raises OSError.
    `upto`: the report is the stream as it stood after that wire event (the app's
    display cursor), marked so; the recording is always the whole of it."""
    directory.mkdir(parents=True, exist_ok=True)
    tape.save(directory / RECORDING, watch_stop(state, tape))
    pieces = report_pieces(state) if upto is None else printable_pieces(report_upto(state, upto))
    with (directory / REPORT).open("w", encoding="utf-8") as report:
        report.writelines(pieces)
    if screenshot is not None:
        (directory / SCREENSHOT).write_text(screenshot, encoding="utf-8")
    text = readme(state, screenshot is not None)
    if upto is not None:
        text += as_of_note(state, upto)
    (directory / README).write_text(text, encoding="utf-8")
    return directory


# The anomalies that say the watch stopped reading, and the stop a replay gives for each.
WATCH_STOPS = {"limit-reached": LIMIT, "connection-lost": TRANSPORT}


def watch_stop(state: StreamState, tape: Tape) -> WatchStop | None:
    """Where and why the watch stopped reading before its source ended (--max-bytes;
    the app quit with --bundle), which its tape cannot know: the bundle's recording
    then ends there too, with that stop, and replays to the same report. None when
    the source itself ended or failed (the tape says it), and for an event past
    --max-event-bytes (a replay finds it too long only under the same limit)."""
    if tape.error is not None or not state.ended:
        return None
    stop = next((a for a in state.anomalies if a.kind in WATCH_STOPS), None)
    if stop is None:
        return None
    if stop.kind == "limit-reached" and state.bytes_received >= tape.length:
        return None  # an event too long, not a byte: where a replay stops is not a place
    t = tape.read_times[-1] if tape.read_times else 0.0
    why = TransportError(stop.detail, t, WATCH_STOPS[stop.kind])
    return WatchStop(min(state.bytes_received, tape.length), why)


def as_of_note(state: StreamState, upto: int) -> str:
    """What a bundle written at a display cursor says about it."""
    event = shown_event(state, upto)
    return "\n".join(
        [
            "## As of event " + f"{event:,}",
            "",
            f"The report and the picture show the stream as it stood after wire event {event} "
            f"of {state.events} (the recording holds all of it). To open it there:",
            "",
            "```sh",
            f"toolstream-tui --replay {RECORDING} --at {event}",
            f"toolstream-tui --replay {RECORDING} --headless --until-event {event}",
            "```",
            "",
        ]
    )


def readme(state: StreamState, with_screenshot: bool) -> str:
    timing = timing_path(Path(RECORDING)).name
    files = [
        f"- `{RECORDING}`: the response body, byte for byte",
        f"- `{timing}`: the request (secrets redacted), the response head and the "
        "arrival time of every read",
        f"- `{REPORT}`: the report, as `toolstream-tui --headless` prints it",
    ]
    if with_screenshot:
        files.append(f"- `{SCREENSHOT}`: the screen when the bundle was written")
    return "\n".join(
        [
            TITLE,
            "",
            *summary(state),
            "",
            "## Files",
            "",
            *files,
            "",
            "## Replay",
            "",
            "```sh",
            "pip install toolstream-tui",
            f"toolstream-tui --replay {RECORDING}             # at the recorded pace",
            f"toolstream-tui --replay {RECORDING} --speed 0   # all at once",
            f"toolstream-tui --replay {RECORDING} --headless  # the report as JSON",
            f"toolstream-tui diff {RECORDING} other.sse       # compare with another recording",
            "```",
            "",
        ]
    )


def summary(state: StreamState) -> list[str]:
    lines = [
        f"- source: `{inert(state.source)}`",
        f"- status: **{state.status.value}**, dialect {state.dialect}, finish reason "
        f"{state.finish_reason or '—'}, {state.events} events, {state.bytes_received} bytes",
    ]
    if state.error:
        lines.append(f"- error: {inert(state.error)}")
    for index in sorted(state.calls):
        lines.append(f"- call #{index}: {call_summary(state, index)}")
    kinds = Counter(anomaly.kind for anomaly in state.anomalies)
    shown = ", ".join(f"`{kind}` x{count}" for kind, count in kinds.items()) or "none"
    lines.append(f"- anomalies: {shown}")
    return lines


def call_summary(state: StreamState, index: int) -> str:
    slot = state.calls[index]
    name = f"`{inert(slot.name)}`" if slot.name else "(no name)"
    if slot.error:
        return f"{name}: {inert(slot.error)}"
    if slot.schema_errors:
        return f"{name}: parsed, {len(slot.schema_errors)} schema error(s)"
    return f"{name}: parsed" if slot.parsed else f"{name}: not parsed"
