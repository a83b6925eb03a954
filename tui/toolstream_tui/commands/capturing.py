"""`--replay FILE` and `toolstream-tui open FILE` on a capture another tool saved: a
HAR file or a mitmproxy flow file (sources/captures.py reads them).

A capture with one streaming response is watched as a recording is (the app, or
the headless report). With several, the app opens the proxy's request list on
every entry of the capture (Enter opens one), and `--headless` prints one JSON
line per streaming entry, the request and its report, so `--fail-on` lints a
whole browser or Playwright run: the exit status is the worst entry's."""

from __future__ import annotations

import argparse
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from ..core.exit_codes import EXIT_INTERRUPTED
from ..core.visible import inert
from ..process import plain_reason
from ..sources import Source
from ..sources.capture_kind import SNIFF_BYTES, ZIP_MAGIC, capture_kind
from ..sources.captures import (
    MAX_INFLATED,
    NOT_TIMED,
    Attachment,
    Capture,
    CaptureError,
    CaptureSource,
    read_capture,
)
from ..sources.recording import RecordingError
from ..sources.replay import ReplaySource, open_regular
from ..watching.bundle import RECORDING
from .common import CannotUse, UsageError, named_path

PROG = "toolstream-tui"


class CaptureList:
    """A capture with more (or fewer) than one streaming entry: watched as a list."""

    def __init__(self, capture: Capture, path: Path) -> None:
        self.capture = capture
        self.path = path


def open_arguments(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """`toolstream-tui open FILE [options]`: --replay FILE, as one verb."""
    parser.prog += " open"
    parser.add_argument(
        "file",
        metavar="FILE",
        type=named_path,
        help="a recording, a HAR file or a mitmproxy flow file (as --replay FILE)",
    )
    args = parser.parse_args(argv)
    if args.url is not None or args.scenario is not None or args.replay is not None:
        parser.error("open FILE takes no other source (--url, --replay, --scenario)")
    args.replay = args.file
    return args


def replay_source(args: argparse.Namespace) -> Source | CaptureList:
    """What `--replay FILE` names: a recording, the one stream of a capture, or a
    capture's list of entries. A capture's notes go to stderr and to the app."""
    path: Path = args.replay
    capture = load_capture(path)
    if capture is None:
        return ReplaySource(path, speed=args.speed)
    streams = capture.streams
    if len(streams) != 1:
        return CaptureList(capture, path)
    entry = streams[0]
    notes = [*capture.notes, *entry.notes, f"{NOT_TIMED} in a {capture.kind} file"]
    for note in notes:
        print(f"{PROG}: note: {inert(note)}", file=sys.stderr)
    args.notice = "; ".join(notes)
    return CaptureSource(entry, capture.name, speed=args.speed, dialect=args.dialect)


def load_capture(path: Path) -> Capture | None:
    """The capture in `path`, or None when it is not one: a recording, or a file
    that cannot be read (the replay says why, in its report, as it always has)."""
    try:
        with open_regular(path) as file:
            head = file.read(SNIFF_BYTES)
            if head.startswith(ZIP_MAGIC):
                return zipped_capture(path)
            if capture_kind(head) is None:
                return None
            data = head + file.read()
    except (OSError, RecordingError):
        return None
    try:
        return read_capture(data, path.name, beside(path))
    except CaptureError as exc:
        raise CannotUse(f"cannot read capture {exc}") from exc


def beside(path: Path) -> Attachment:
    """The files a HAR names instead of holding bodies, in the HAR's own folder."""

    def read(name: str) -> bytes | None:
        try:
            with open_regular(path.parent / name) as file:
                data = file.read(MAX_INFLATED + 1)
        except (OSError, RecordingError):
            return None
        return data if len(data) <= MAX_INFLATED else None

    return read


def zipped_capture(path: Path) -> Capture | None:
    """A HAR in a zip archive with its attached files (Playwright's `.zip` captures);
    None when the archive holds no HAR."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            hars = [name for name in members if name.endswith(".har")]
            if len(hars) != 1:
                return None

            def read(name: str) -> bytes | None:
                info = members.get(name)
                if info is None or info.file_size > MAX_INFLATED:
                    return None
                return archive.read(info)

            har = read(hars[0])
            if har is None:
                raise CannotUse(f"cannot read capture {path}: its HAR is over the size limit")
            return read_capture(har, path.name, read)
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        raise CannotUse(f"cannot read capture {path}: {plain_reason(exc)}") from exc
    except CaptureError as exc:
        raise CannotUse(f"cannot read capture {exc}") from exc


def watch_list(listing: CaptureList, args: argparse.Namespace, fail_on: frozenset[str]) -> int:
    """The capture's entries in the proxy's request list, or their reports."""
    from asyncio import run  # only here: a capture of one stream at speed 0 needs no loop

    from .capture_list import print_reports, run_list_app

    capture = listing.capture
    if not capture.entries:
        raise CannotUse(f"{capture.name} holds no requests")
    if args.record is not None or args.bundle is not None:
        raise UsageError(
            f"--record and --bundle take one stream and {capture.name} holds "
            f"{len(capture.streams)} streams; in the app, b bundles the one on screen"
        )
    moment = moment_option(args)
    if moment is not None:
        raise UsageError(
            f"{moment} takes one stream and {capture.name} holds {len(capture.streams)} "
            f"streams; bundle the one you want (in the app, b on its stream view) and "
            f"replay the bundle's {RECORDING} with {moment}"
        )
    for note in [*capture.notes, f"{NOT_TIMED} in a {capture.kind} file"]:
        print(f"{PROG}: note: {inert(note)}", file=sys.stderr)
    if args.headless:
        if not capture.streams:
            raise CannotUse(
                f"{capture.name} holds no streaming response among its {len(capture.entries)} "
                "requests; open it without --headless to see them all"
            )
        try:
            return run(print_reports(capture, args, fail_on))
        except KeyboardInterrupt:  # mid-way through a big capture: no traceback
            return EXIT_INTERRUPTED
    return run(run_list_app(capture, listing.path, args))


def moment_option(args: argparse.Namespace) -> str | None:
    """The option given for a moment in one stream (--until-event, --until-time,
    --at), which a list of streams has no single one of; None when none is."""
    given = {"--until-event": args.until_event, "--until-time": args.until_time, "--at": args.at}
    return next((option for option, value in given.items() if value is not None), None)
