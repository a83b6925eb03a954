"""The command line's options for a moment in a stream: `--until-event N` and
`--until-time S` (headless: the report as it stood then), `--at N` (the app opens
paused at event N). Textual-free."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator

from ..core import StreamState
from ..core.report import printable_pieces, report_utf8_pieces
from .common import UsageError, number_from

Until = Callable[[StreamState], int | None]  # where a headless report is cut, once read


def add_time_travel_options(parser: argparse.ArgumentParser) -> None:
    moment = parser.add_argument_group("a moment in the stream")
    until = moment.add_mutually_exclusive_group()
    until.add_argument(
        "--until-event",
        type=number_from(int, 0),
        metavar="N",
        help="with --headless: print the report as it stood after wire event N (marked "
        "as_of; at or past the last event: as the stream ended), so a script can bisect "
        "a recording for the first event where a check fails",
    )
    until.add_argument(
        "--until-time",
        type=number_from(float, 0),
        metavar="S",
        help="with --headless: the report as it stood S seconds after the request (the "
        "last event that had arrived by then)",
    )
    moment.add_argument(
        "--at",
        type=number_from(int, 0),
        metavar="N",
        help="open the app paused at wire event N (the recording is read at once: "
        "--speed 0); then N/n, [/], {/}, Home/End and g move through it",
    )


def check_time_travel(args: argparse.Namespace) -> None:
    """Usage errors for options that ask for what the mode cannot do; --at reads
    the source as fast as it comes."""
    cut = "--until-event" if args.until_event is not None else "--until-time"
    if not args.headless and (args.until_event is not None or args.until_time is not None):
        raise UsageError(f"{cut} is for --headless; in the app, open a moment with --at N")
    if args.at is not None:
        if args.headless:
            raise UsageError("--at opens the app at an event; headless, use --until-event N")
        args.speed = 0.0


def until_cursor(args: argparse.Namespace, state: StreamState) -> int | None:
    """The cursor the headless report is cut at, None for the whole report."""
    if args.until_event is None and args.until_time is None:
        return None
    from ..core.upto import cursor_for_event, event_at_time  # only for a moment asked for

    if args.until_event is not None:
        return cursor_for_event(state, args.until_event)
    return event_at_time(state, args.until_time)


def headless_report(state: StreamState, until: Until | None) -> Iterator[bytes | memoryview]:
    """The headless report as UTF-8 pieces: whole, or cut where `until` says."""
    cursor = None if until is None else until(state)
    if cursor is None:
        return report_utf8_pieces(state)
    from ..core.upto import report_upto

    return (piece.encode() for piece in printable_pieces(report_upto(state, cursor)))
