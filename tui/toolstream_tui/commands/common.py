"""What every command shares: its errors and exit codes, the limit options, and
--fail-on. The watch command (cli.py) and `toolstream-tui proxy` (commands/proxy.py) both
stand on it, so neither imports the other."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..command_line import number_from
from ..core import StreamState
from ..core.anomaly_kinds import ANOMALY_KINDS
from ..core.report import EXIT_FAILED
from ..core.session import MAX_BYTES, MAX_EVENT_BYTES
from ..core.state import STALL_SECONDS
from ..sources import Limits

EXIT_USAGE = 2
EXIT_LINT = 3  # the stream was sound, but an anomaly named by --fail-on occurred
EXIT_INTERRUPTED = 130


class CommandError(Exception):
    """One line for stderr, and the exit code it means."""

    code = EXIT_USAGE


class UsageError(CommandError):
    """The command line is wrong: an option's value is not one the tool takes."""


class CannotUse(CommandError):
    """A URL or file the command line names cannot be used: a source that failed."""

    code = EXIT_FAILED


IDLE_HELP = "end the stream as truncated after SECONDS without data (default: never)"


def add_limit_options(parser: argparse.ArgumentParser, idle_help: str = IDLE_HELP) -> None:
    """--max-bytes, --max-event-bytes, --idle-timeout and --stall-threshold, shared
    with `toolstream-tui proxy`."""
    limits = parser.add_argument_group("limits")
    limits.add_argument(
        "--max-bytes",
        type=number_from(int, 1),
        default=MAX_BYTES,
        metavar="N",
        help=f"stop reading past N bytes, keeping what came (default: {MAX_BYTES})",
    )
    limits.add_argument(
        "--max-event-bytes",
        type=number_from(int, 1),
        default=MAX_EVENT_BYTES,
        metavar="N",
        help=f"stop at an SSE event larger than N bytes, keeping what came "
        f"(default: {MAX_EVENT_BYTES})",
    )
    limits.add_argument(
        "--idle-timeout", type=number_from(float, 0, above=True), metavar="SECONDS", help=idle_help
    )
    limits.add_argument(
        "--stall-threshold",
        type=number_from(float, 0, above=True),
        default=STALL_SECONDS,
        metavar="SECONDS",
        help="a silence longer than SECONDS is a stall in the timing and the timeline "
        f"(default: {STALL_SECONDS:g})",
    )


def fail_on_kinds(values: Sequence[str], headless: bool) -> frozenset[str]:
    kinds = {kind.strip() for value in values for kind in value.split(",") if kind.strip()}
    if kinds and not headless:
        raise UsageError("--fail-on works with --headless")
    if "any" in kinds:
        return ANOMALY_KINDS
    unknown = sorted(kinds - ANOMALY_KINDS)
    if unknown:
        raise UsageError(
            f"--fail-on: unknown anomaly kind {', '.join(map(repr, unknown))}; see --list-anomalies"
        )
    return frozenset(kinds)


def lint_failures(state: StreamState, kinds: frozenset[str]) -> list[str]:
    """One line per anomaly whose kind --fail-on names."""
    return [
        f"--fail-on: {anomaly.kind}"
        + (f" on call {anomaly.index}" if anomaly.index is not None else "")
        + (f" (x{anomaly.count})" if anomaly.count > 1 else "")
        + f": {anomaly.detail}"
        for anomaly in state.anomalies
        if anomaly.kind in kinds
    ]


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(args.max_bytes, args.max_event_bytes, args.idle_timeout, args.stall_threshold)
