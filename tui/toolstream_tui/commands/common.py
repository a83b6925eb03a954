"""What every command shares: its errors, numbers checked against their range while
parsing, `--version`, the check that there is a terminal for an app, the limit
options, and --fail-on. The watch command (commands/watch.py) and `toolstream-tui proxy`
(commands/proxy.py) both stand on it, so neither imports the other. The exit
codes are in one table: core/exit_codes.py."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from ..core import StreamState
from ..core.anomaly_kinds import ANOMALY_KINDS
from ..core.dialects.chat import DONE
from ..core.events import Status
from ..core.exit_codes import EXIT_FAILED, EXIT_USAGE
from ..core.session import MAX_BYTES, MAX_EVENT_BYTES
from ..core.state import STALL_SECONDS
from ..process import plain_reason
from ..sources import Limits
from ..views.words import plural

DISTRIBUTION = "toolstream-tui"
Number = TypeVar("Number", int, float)
# The anomalies that say why a stream stopped before its finish.
STOP_ANOMALY_KINDS = ("limit-reached", "connection-lost", "idle-timeout")


def number_from(
    kind: Callable[[str], Number], low: Number, *, above: bool = False
) -> Callable[[str], Number]:
    """An argparse `type`: a finite number read by `kind` (int or float) that is at
    least `low`, or more than `low` with `above`. Anything else is a usage error
    (exit 2) that names the valid range."""
    noun = "an integer" if kind is int else "a number"
    rule = f"{noun} {'>' if above else '>='} {low:g}"

    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < low or (above and value == low):
            raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}")
        return value

    return parse


SLOWEST_SPEED = 0.001  # a thousand times slower than recorded; slower, a wait could overflow


def speed_factor(text: str) -> float:
    """An argparse `type` for --speed: 0 (as fast as possible), or from SLOWEST_SPEED."""
    value = number_from(float, 0.0)(text)
    if 0 < value < SLOWEST_SPEED:
        raise argparse.ArgumentTypeError(
            f"expected 0 (as fast as possible) or a number >= {SLOWEST_SPEED:g}, got {text!r}"
        )
    return value


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors in one line, as every other error of the tool is:
    the usage block above it would bury the line that says what is wrong."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def named_path(text: str) -> Path:
    """An argparse `type` for a file or folder the command line names: an empty
    name (an unset variable) or `-` (read as stdin or stdout elsewhere; not taken
    here) is a usage error, not a path quietly read as `.` or a file called `-`."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name: name a file or folder")
    if text == "-":
        raise argparse.ArgumentTypeError(
            "'-' (stdin or stdout) is not taken here: name a file (./- for a file called -)"
        )
    return Path(text)


def bundle_directory(text: str) -> Path:
    """An argparse `type` for --bundle: a folder that is new, empty or holds a bundle
    already; one that holds anything else is refused before the stream is read
    (writing into it would overwrite a README.md or a report.json of its own)."""
    from ..watching.bundle import others_files

    directory = named_path(text)
    if directory.exists() and not directory.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file: name a new or empty folder")
    try:
        found = others_files(directory)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text}: {plain_reason(exc)}") from exc
    if found:
        shown = ", ".join(found[:3]) + (", …" if len(found) > 3 else "")
        raise argparse.ArgumentTypeError(
            f"{text} holds files that are not a bundle's ({shown}): name a new or empty folder"
        )
    return directory


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed: version unknown)"


class VersionAction(argparse.Action):
    """`--version`, read from the installed distribution's metadata only when asked:
    reading it costs more than the rest of a headless start-up."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print the version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"{DISTRIBUTION} {installed_version()}")
        parser.exit()


def missing_terminal() -> str | None:
    """The standard stream that is not a terminal, if any. The app draws with escape
    codes on stdout and reads its keys from stdin: without a terminal it would write
    them into a pipe and wait for keys forever."""
    for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin)):
        if stream is None or not stream.isatty():
            return name
    return None


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
        help="stop at an event larger than N bytes (an SSE event, NDJSON line, event-stream "
        "frame, JSON array element, or a whole non-stream body), keeping what came "
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
    """The kinds the --fail-on options name, every item of every list checked, `any`
    beside them or not. An empty list or item is a usage error, not a list that
    lints nothing: in CI it is an unset `$KINDS`, which would pass every stream."""
    if values and not headless:
        raise UsageError("--fail-on works with --headless")
    kinds = {kind for value in values for kind in listed_kinds(value)}
    unknown = sorted(kinds - ANOMALY_KINDS - {"any"})
    if unknown:
        noun = "kind" if len(unknown) == 1 else "kinds"
        raise UsageError(
            f"--fail-on: unknown anomaly {noun} {', '.join(map(repr, unknown))}; "
            "see --list-anomalies"
        )
    return ANOMALY_KINDS if "any" in kinds else frozenset(kinds)


def listed_kinds(value: str) -> list[str]:
    """The items of one --fail-on value, without the spaces around its commas."""
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        raise UsageError(
            f"--fail-on {value!r}: the list of anomaly kinds is empty; "
            "name kinds, or 'any' for all (see --list-anomalies)"
        )
    if not all(items):
        raise UsageError(f"--fail-on {value!r}: an empty anomaly kind between its commas")
    return items


def one_line_summary(state: StreamState) -> str | None:
    """Why a stream did not end well, in one line for stderr (None: it did)."""
    if state.status is Status.ERROR:
        return state.error
    if state.status is Status.TRUNCATED:
        why = next(
            (a.detail for a in state.anomalies if a.kind in STOP_ANOMALY_KINDS),
            None,
        )
        cause = f": {why}" if why else ""
        return f"stream truncated before the finish after {state.events} events{cause}"
    failed = [slot for slot in state.calls.values() if slot.error]
    if failed:
        slot = failed[0]
        return f"call {slot.index} ({slot.name}): {slot.error}"
    rejected = [slot for slot in state.calls.values() if slot.schema_errors]
    if rejected:
        slot = rejected[0]
        first = slot.schema_errors[0]
        count = len(slot.schema_errors)
        return (
            f"call {slot.index} ({slot.name}): {count} schema error{'s' * (count != 1)}; "
            f"first at {first.path}: {first.message}"
        )
    return None


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


# What a dialect notes when it makes nothing of an event (or of a part of one)
IGNORED_EVENT_KINDS = frozenset({"unknown-event", "data-not-json", "unexpected-shape"})


def ignored_events(state: StreamState) -> int:
    """How many events the dialect made nothing of (an event may be noted twice)."""
    return sum(
        anomaly.count
        for anomaly in state.anomalies
        if anomaly.index is None and anomaly.kind in IGNORED_EVENT_KINDS
    )


def nothing_came(state: StreamState) -> bool:
    """Events came, and no text, no call, no finish or finish reason, no error. A
    bare `[DONE]` is no finish here: other dialects' streams end with it too (the AI
    SDK's), and read as chat completions it is all they would share."""
    understood = (
        len(state.text_pieces)
        or state.calls
        or (state.finished and state.finish_trigger != DONE)
        or state.finish_reason is not None
        or state.error is not None
    )
    return state.events > 0 and not understood


def read_nothing_warning(state: StreamState, forced: str | None) -> str | None:
    """A stream the forced `--dialect` read nothing of (each event ignored, nothing
    understood): another dialect's, most likely; said, since its report alone
    would look finished."""
    ignored = ignored_events(state)
    if forced is None or not ignored or not nothing_came(state):
        return None
    events = plural(state.events, "event")
    return (
        f"--dialect {forced} read nothing of this stream ({min(ignored, state.events)} of its "
        f"{events} ignored): another dialect's? Without --dialect it is detected"
    )
