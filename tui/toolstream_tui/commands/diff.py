"""`toolstream-tui diff A B`: replay two recordings and compare what came.

Exit codes follow diff(1): 0 identical, 1 different, 2 trouble. `--headless`
prints the diff as JSON without importing Textual; otherwise a small Textual app
shows it."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

from ..core import StreamSession, StreamState
from ..core.dialects.detect import DIALECTS
from ..core.diff import diff_states, failed_body
from ..core.exit_codes import EXIT_DIFFERENT, EXIT_IDENTICAL, EXIT_INTERRUPTED, EXIT_TROUBLE
from ..core.report import printable_json
from ..core.visible import inert
from ..process import plain_reason, write_out
from ..sources import TransportError, pump
from ..sources.base import UNREADABLE, SourceItems
from ..sources.capture_kind import FLOWS, HAR, ZIP, file_capture_kind
from ..sources.recording import RecordingError, timing_path
from ..sources.replay import ReplaySource, open_regular
from ..views.words import plural
from .common import OneLineParser, ignored_events, missing_terminal, nothing_came

PROG = "toolstream-tui diff"
REASON_CHARS = 100  # of why a file is not a recording: its error may quote its bytes
CAPTURE_KINDS = {
    HAR: "a HAR capture",
    FLOWS: "a mitmproxy flow capture",
    ZIP: "a zip archive (as Playwright saves a HAR capture)",
}


class Unreadable(Exception):
    """A recording (or its timing file) could not be read."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="Replay two recordings and compare how each ended (status, HTTP status, "
        "error, finish reason, the body of a failed response), their text, tool calls and "
        "anomalies. Fragment boundaries are reported but never count as a difference. "
        "Exit status: 0 identical, 1 different, 2 trouble (a file that cannot be read as "
        "a recording of a stream).",
    )
    parser.add_argument("a", metavar="A", type=Path, help="the first recording")
    parser.add_argument("b", metavar="B", type=Path, help="the second recording")
    parser.add_argument("--headless", action="store_true", help="print the diff as JSON, no UI")
    parser.add_argument(
        "--dialect",
        choices=sorted(DIALECTS),
        help="read both recordings as this dialect (default: detected from each)",
    )
    return parser


def check_readable(path: Path) -> None:
    """Only a regular file that opens (a FIFO would block, a device never ends)."""
    try:
        open_regular(path).close()
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {plain_reason(exc)}") from exc
    except RecordingError as exc:
        raise Unreadable(f"cannot read {path}: {exc}") from exc


def check_not_capture(path: Path) -> None:
    """Refuse a capture: it holds requests, each its own stream, and its bytes
    read as one stream would compare as anything at all."""
    kind = file_capture_kind(path)
    if kind is not None:
        raise Unreadable(
            f"{path} is {CAPTURE_KINDS[kind]}, not a recording: open it (toolstream-tui "
            f"open {shlex.quote(str(path))}) and bundle or record the entry to compare"
        )


async def _refusing_unreadable(items: SourceItems) -> SourceItems:
    """The replay's items; a recording that cannot be read (a broken timing file)
    is trouble, not a stream."""
    async with aclosing(items):
        async for item in items:
            if isinstance(item, TransportError) and item.kind == UNREADABLE:
                raise Unreadable(item.message)
            yield item


def replay_state(path: Path, dialect: str | None) -> StreamState:
    """The recording replayed as fast as possible into a fresh session; one that
    holds no stream to compare is trouble (see `check_stream`)."""
    check_readable(path)
    check_not_capture(path)
    bare = not timing_path(path).exists()
    source = ReplaySource(path, speed=0)
    session = StreamSession(source.label, dialect, live=False)
    asyncio.run(pump(_refusing_unreadable(source.items()), session, lambda events: None))
    check_stream(path, session, bare)
    return session.state


def check_stream(path: Path, session: StreamSession, bare: bool) -> None:
    """Refuse, as an empty file is refused, what could not be read as a stream at
    all: without a timing file to say a response came, bytes that failed to be
    read as events or as a JSON answer; or events of which the dialect ignored
    some and understood nothing else (a stream of another dialect, say).
    Comparing either would call any two such files identical. A recorded response
    that was not a stream (an HTTP error, a page) is an outcome: it is compared."""
    state = session.state
    if bare and state.error is not None and failed_body(state) is not None:
        raise Unreadable(f"not a recording of a stream: {path}: {cut(state.error)}")
    ignored = ignored_events(state)
    if ignored and nothing_came(state):
        raise Unreadable(
            f"nothing in {path} could be read as {state.dialect} "
            f"({min(ignored, state.events)} of its {plural(state.events, 'event')} ignored)"
        )


def cut(message: str) -> str:
    return message if len(message) <= REASON_CHARS else message[:REASON_CHARS] + "…"


def diff_recordings(a: Path, b: Path, dialect: str | None = None) -> dict[str, Any]:
    return diff_states(replay_state(a, dialect), replay_state(b, dialect))


def exit_code_of(diff: dict[str, Any]) -> int:
    return EXIT_IDENTICAL if diff["identical"] else EXIT_DIFFERENT


def show(diff: dict[str, Any], headless: bool) -> int:
    code = exit_code_of(diff)
    if headless:
        write_out(printable_json(diff))
        return code
    from ..app.apps.diff import run_diff_app  # Textual loads only for the UI

    return run_diff_app(diff, code)


def main_diff(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    no_terminal = None if args.headless else missing_terminal()
    if no_terminal:
        print(
            f"{PROG}: the diff view needs a terminal and {no_terminal} is not one; "
            "add --headless for the diff as JSON",
            file=sys.stderr,
        )
        return EXIT_TROUBLE
    try:
        diff = diff_recordings(args.a, args.b, args.dialect)
    except Unreadable as exc:
        print(f"{PROG}: {inert(str(exc))}", file=sys.stderr)
        return EXIT_TROUBLE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return show(diff, args.headless)


if __name__ == "__main__":
    sys.exit(main_diff(sys.argv[1:]))
