"""The watch command, `toolstream-tui [--url|--replay|--scenario|open] ...`: pick a
source, then print a headless report or open the app.

Headless mode never imports Textual, so it starts fast in scripts and CI."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..core import StreamSession, exit_code
from ..core.anomaly_kinds import ANOMALY_KINDS, dialects_naming, kinds_of
from ..core.dialects.detect import DIALECTS
from ..core.exit_codes import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_LINT, EXIT_OUTPUT_FAILED
from ..core.visible import inert
from ..otlp import OtlpUnavailable
from ..otlp.option import add_otlp_option, open_export
from ..process import (
    OutputFailed,
    TerminateAsInterrupt,
    collect_garbage_rarely,
    exit_now,
    output_failed,
    plain_reason,
    stop_writing_stdout,
    write_out,
    write_utf8_to_stdout,
)
from ..sources import Limits, Source, pump, run_to_end
from ..sources.recording import Tape, TapeSource, source_items
from .common import (
    CannotUse,
    CommandError,
    OneLineParser,
    UsageError,
    VersionAction,
    add_limit_options,
    bundle_directory,
    fail_on_kinds,
    limits_of,
    lint_failures,
    missing_terminal,
    named_path,
    number_from,
    one_line_summary,
    read_nothing_warning,
    speed_factor,
)
from .time_travel import (
    Until,
    add_time_travel_options,
    check_time_travel,
    headless_report,
    until_cursor,
)

if TYPE_CHECKING:
    from ..otlp.export import OtlpExport
    from ..sources.base import SourceItems
    from ..sources.http import HttpRequest
    from ..watching.options import WatchOptions
    from .capturing import CaptureList


PROG = "toolstream-tui"


# The anomalies that say why a stream stopped before its finish.


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="Watch LLM tool calls stream in, piece by piece: OpenAI chat completions "
        "and Responses, Anthropic Messages, Gemini and Vertex AI, Bedrock, Cohere, Ollama and "
        "the Vercel AI SDK's UI stream, told apart by the response itself. With no source, "
        "watches the embedded stub server's 'demo' scenario. "
        "'toolstream-tui diff A B' compares two recordings; 'toolstream-tui proxy --upstream "
        "URL' watches the requests an agent sends through it; 'toolstream-tui open FILE' "
        "opens a recording, a HAR file or a mitmproxy flow file.",
    )
    parser.add_argument("--version", action=VersionAction)
    add_source_options(parser)
    add_request_options(parser)
    add_display_options(parser)
    add_limit_options(parser)
    add_output_options(parser)
    add_time_travel_options(parser)
    return parser


def add_source_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--url",
        help="request a stream from this http(s) URL, in any dialect (see --dialect)",
    )
    source.add_argument(
        "--replay",
        metavar="FILE",
        type=named_path,
        help="replay a recording (a response body as --record writes it, with its timing "
        "file when there is one), a HAR file or a mitmproxy flow file (`mitmdump -w`): one "
        "streaming response opens, several are listed (headless: one JSON line each)",
    )
    source.add_argument("--scenario", metavar="NAME", help="embedded stub scenario (default: demo)")
    parser.add_argument("--list-scenarios", action="store_true", help="list stub scenarios")
    parser.add_argument(
        "--dialect",
        choices=sorted(DIALECTS),
        help="read the stream as this dialect (default: detected from its first events)",
    )


def add_request_options(parser: argparse.ArgumentParser) -> None:
    request = parser.add_argument_group("request (with --url)")
    request.add_argument("-X", "--method", help="HTTP method (default: GET, or POST with --data)")
    request.add_argument(
        "-d",
        "--data",
        help="request body, or @FILE to read it from a file (sent as application/json unless "
        "a Content-Type header is given)",
    )
    request.add_argument(
        "-H", "--header", action="append", default=[], help="'Name: value' (repeatable)"
    )
    request.add_argument(
        "--timeout",
        type=number_from(float, 0, above=True),
        default=60.0,
        metavar="SECONDS",
        help="seconds to wait for the connection, the response head, or each read of the body "
        "(that last one: --idle-timeout's instead, when given) before giving up (default: 60)",
    )
    request.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="send the key in environment variable NAME as the provider expects "
        "(default: the provider's usual variable for its API host: OPENAI_API_KEY, "
        "ANTHROPIC_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY, CO_API_KEY, "
        "AWS_BEARER_TOKEN_BEDROCK)",
    )


def add_display_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--speed",
        type=speed_factor,
        default=1.0,
        metavar="F",
        help="pace of replay and stub: 1 = recorded pace, 0 = as fast as possible",
    )
    parser.add_argument(
        "--typing-cps",
        type=number_from(float, 0, above=True),
        metavar="N",
        help="reveal the text at a steady N characters per second (default: as received)",
    )
    parser.add_argument(
        "--preview",
        action="store_true",
        help="start with live previews: streaming lanes show what their arguments parse "
        "to so far (toggle with p)",
    )


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        metavar="FILE",
        type=named_path,
        help="record the response body to FILE byte for byte, and its request and read "
        "times to FILE.timing.jsonl",
    )
    parser.add_argument(
        "--bundle",
        metavar="DIR",
        type=bundle_directory,
        help="write a repro bundle to DIR once the stream is over: the recording, the "
        "report, an SVG of the screen and a README on replaying it (in the app: key b)",
    )
    parser.add_argument(
        "--headless", action="store_true", help="print a JSON report when the stream ends, no UI"
    )
    parser.add_argument(
        "--fail-on",
        metavar="KINDS",
        action="append",
        default=[],
        help="with --headless: exit 3 when an anomaly of one of these comma-separated kinds "
        "occurs ('any' for every kind; --list-anomalies lists them; repeatable), so CI can lint a "
        "server",
    )
    parser.add_argument(
        "--list-anomalies",
        action="store_true",
        help="list anomaly kinds and the dialects that name each (with --dialect, that one's)",
    )
    add_otlp_option(parser)


# RFC 9110's token: a header's name, a method.
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def parse_headers(lines: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not TOKEN.fullmatch(name) or any(c in value for c in "\r\n\0"):
            raise UsageError(f"header {line!r} is not of the form 'Name: value' on one line")
        headers[name] = value
    return headers


def http_method(given: str | None, body: bytes | None) -> str:
    """-X's method, or GET (POST with a body); one that is not a token is refused."""
    if given is None:
        return "POST" if body is not None else "GET"
    if not TOKEN.fullmatch(given):
        raise UsageError(f"-X {given!r} is not an HTTP method (GET, POST, …)")
    return given.upper()


def read_body(data: str | None) -> bytes | None:
    if data is None:
        return None
    if not data.startswith("@"):
        return data.encode()
    try:
        return Path(data[1:]).read_bytes()
    except OSError as exc:
        raise CannotUse(f"cannot read request body {data[1:]}: {plain_reason(exc)}") from exc


def http_request(args: argparse.Namespace) -> HttpRequest:
    from ..sources.http import HttpRequest, url_problem
    from ..sources.secrets import MissingKey, auth_headers

    problem = url_problem(args.url)
    if problem:
        raise CannotUse(f"--url is not a URL that can be requested: {problem}")
    headers = parse_headers(args.header)
    given = {name.lower() for name in headers}
    if not given & {"authorization", "x-api-key", "x-goog-api-key"}:
        try:
            headers.update(auth_headers(args.url, args.dialect, args.api_key_env, os.environ))
        except MissingKey as exc:
            raise UsageError(str(exc)) from exc
    body = read_body(args.data)
    if body is not None and "content-type" not in given:
        headers["Content-Type"] = "application/json"
    method = http_method(args.method, body)
    return HttpRequest(
        url=args.url,
        method=method,
        headers=headers,
        body=body,
        timeout=args.timeout,
        idle_timeout=args.idle_timeout,
    )


def stream_flag_warning(body: bytes | None) -> str | None:
    """A JSON request body that does not ask for a stream gets one JSON answer."""
    if body is None:
        return None
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if isinstance(payload, dict) and payload.get("stream") is not True:
        return 'the request body does not set "stream": true; expect one JSON answer, not a stream'
    return None


def build_source(args: argparse.Namespace) -> Source | CaptureList:
    """The source the arguments name (for a capture of several streams, their list).
    Each kind is imported only when used, so a headless replay starts without httpx
    or the stub server."""
    if args.url is not None:
        from ..sources.http import HttpSource

        request = http_request(args)
        warning = stream_flag_warning(request.body)
        if warning:
            print(f"{PROG}: note: {warning}", file=sys.stderr)
            args.notice = warning
        return HttpSource(request, dialect=args.dialect)
    if args.replay:
        from ..sources.capture_kind import may_be_capture
        from ..sources.replay import ReplaySource

        if not may_be_capture(args.replay):  # a recording: the capture modules stay unloaded
            return ReplaySource(args.replay, speed=args.speed)
        from .capturing import replay_source

        return replay_source(args)
    from toolstream_stubs import ScenarioNotFound, list_scenarios, load_scenario

    from ..sources.stub import StubSource

    scenario = "demo" if args.scenario is None else args.scenario
    try:
        load_scenario(scenario)
    except ScenarioNotFound as exc:
        names = ", ".join(info.name for info in list_scenarios())
        raise UsageError(f"unknown scenario {scenario!r}; known: {names}") from exc
    return StubSource(scenario, speed=args.speed, timeout=args.timeout)


def anomaly_list(dialect: str | None) -> str:
    """`--list-anomalies`: a kind a line, first, then the dialects that name it;
    with `--dialect`, only the kinds a stream of that dialect can show."""
    kinds = sorted(ANOMALY_KINDS if dialect is None else kinds_of(dialect))
    width = max(map(len, kinds))
    lines = []
    for kind in kinds:
        named_by = dialects_naming(kind)
        where = "every dialect" if len(named_by) == len(DIALECTS) else ", ".join(named_by)
        lines.append(f"{kind:<{width}}  {where}")
    return "\n".join(lines)


def watch_options(args: argparse.Namespace, otlp: OtlpExport | None = None) -> WatchOptions:
    from ..watching.options import WatchOptions  # the app's options: a headless run needs none

    return WatchOptions(
        limits=limits_of(args),
        dialect=args.dialect,
        record=args.record,
        bundle=args.bundle,
        typing_cps=args.typing_cps,
        preview=args.preview,
        notice=args.notice,
        otlp=otlp,
        start_at=args.at,
    )


def report_headless(
    source: Source,
    record: Path | None,
    dialect: str | None,
    limits: Limits,
    bundle: Path | None = None,
    fail_on: frozenset[str] = frozenset(),
    otlp: OtlpExport | None = None,
    until: Until | None = None,
) -> int:
    session = limits.session(source.label, dialect, live=False)
    tape = Tape(source.label) if bundle is not None else None
    try:
        items = source_items(source, record, tape, limits.idle_timeout, warn=say)
    except OSError as exc:  # the watch goes on without the recording
        say(f"cannot record to {record}: {plain_reason(exc)}; not recording")
        items = source_items(source, None, tape, limits.idle_timeout, warn=say)
    span = None
    if otlp is not None:  # the span's modules load only with --otlp
        from ..otlp.watching import StreamSpan, redactor_of

        span = StreamSpan(source.label, redactor_of(source))
        items = span.tapped(items)
    with TerminateAsInterrupt() as interruption:
        status = read_to_end(
            items, session, interruption, needs_event_loop(source, limits.idle_timeout)
        )
        try:
            write_utf8_to_stdout(headless_report(session.state, until))
        except BrokenPipeError:  # the reader stopped reading (`| head`): the rest goes nowhere
            stop_writing_stdout()
            status = status or EXIT_BROKEN_PIPE
        except OutputFailed as failure:  # a full disk: said, and the bundle still written
            failed = output_failed(failure, PROG)
            status = status or failed
        if bundle is not None and tape is not None:
            upto = None if until is None else until(session.state)
            if not write_headless_bundle(bundle, tape, session, upto):
                status = status or EXIT_OUTPUT_FAILED  # asked for, and not there
        if otlp is not None and span is not None:
            from ..otlp.watching import send_and_close

            send_and_close(otlp, span, session, PROG)
        for said in (one_line_summary(session.state), read_nothing_warning(session.state, dialect)):
            if said:
                print(f"{PROG}: {inert(said)}", file=sys.stderr)
        failures = lint_failures(session.state, fail_on)
        for line in failures:
            print(f"{PROG}: {inert(line)}", file=sys.stderr)
        status = status or interruption.status
    return status or exit_code(session.state) or (EXIT_LINT if failures else 0)


def read_to_end(
    items: SourceItems, session: StreamSession, interruption: TerminateAsInterrupt, loop: bool
) -> int | None:
    """Feeds the session to the stream's end, or to Ctrl-C or SIGTERM (what arrived
    stands, truncated): the interruption's exit status then, else None."""
    try:
        run_to_end(pump(items, session, lambda events: None), event_loop=loop)
    except KeyboardInterrupt:
        why = "terminated (SIGTERM)" if interruption.terminated else "interrupted by the user"
        session.interrupt(why, 0.0)
        return interruption.status or EXIT_INTERRUPTED
    finally:
        interruption.done_reading()
    return None


def say(message: str) -> None:
    """One line on stderr, whatever the message carries."""
    print(f"{PROG}: {inert(message)}", file=sys.stderr)


def needs_event_loop(source: Source, idle_timeout: float | None) -> bool:
    """Only a replay at speed 0 never waits (for the network, the recorded pace or
    an idle timer): it runs without an event loop (see `run_to_end`)."""
    from ..sources.replay import ReplaySource

    captures = sys.modules.get("toolstream_tui.sources.captures")  # loaded for a capture only
    replays = ReplaySource if captures is None else ReplaySource | captures.CaptureSource
    never_waits = isinstance(source, replays) and source.speed <= 0
    return idle_timeout is not None or not never_waits


def write_headless_bundle(
    directory: Path, tape: Tape, session: StreamSession, upto: int | None = None
) -> bool:
    """The bundle, with the screen drawn off-screen (this loads Textual); `upto`:
    its report as of that wire event, as the headless report was printed. False
    when it could not be written (said on stderr)."""
    from ..watching.bundle import write_bundle

    try:
        from ..app.screenshot import render_screenshot

        screenshot: str | None = render_screenshot(TapeSource(tape))
    except Exception as exc:  # the bundle is still worth writing without its picture
        print(f"{PROG}: no screenshot in the bundle: {inert(str(exc))}", file=sys.stderr)
        screenshot = None
    try:
        write_bundle(directory, tape, session.state, screenshot, upto=upto)
    except OSError as exc:
        print(f"{PROG}: cannot write bundle to {directory}: {plain_reason(exc)}", file=sys.stderr)
        return False
    print(f"{PROG}: repro bundle written to {directory}", file=sys.stderr)
    return True


def print_scenarios() -> None:
    from toolstream_stubs import list_scenarios

    infos = list_scenarios()
    width = max(len(info.name) for info in infos)
    write_out("".join(f"{info.name:<{width}}  {info.description}\n" for info in infos))


def main_watch(argv: list[str]) -> int:
    """`toolstream-tui [OPTIONS]`, or `toolstream-tui open FILE [OPTIONS]`."""
    if argv[:1] == ["open"]:
        from .capturing import open_arguments

        args = open_arguments(build_parser(), argv[1:])
    else:
        args = build_parser().parse_args(argv)
    args.notice = None
    if args.list_scenarios:
        print_scenarios()
        return 0
    if args.list_anomalies:
        write_out(anomaly_list(args.dialect) + "\n")
        return 0
    try:
        return watch(args)
    except CommandError as exc:
        print(f"{PROG}: {inert(str(exc))}", file=sys.stderr)
        return exc.code


def otlp_export(url: str | None) -> OtlpExport | None:
    try:
        return open_export(url)
    except OtlpUnavailable as exc:
        raise UsageError(str(exc)) from exc


# The options that shape a request: they go with --url only.
REQUEST_OPTIONS = {"method": "-X", "data": "-d", "header": "-H", "api_key_env": "--api-key-env"}


def check_request_options(args: argparse.Namespace) -> None:
    """A request option without --url would be dropped without a word: refused."""
    if args.url is not None:
        return
    given = [flag for name, flag in REQUEST_OPTIONS.items() if getattr(args, name)]
    if given:
        are = "is a request option" if len(given) == 1 else "are request options"
        raise UsageError(f"{', '.join(given)} {are}: give --url too")


def watch(args: argparse.Namespace) -> int:
    """Watch the source the arguments name, headless or in the app."""
    check_request_options(args)
    fail_on = fail_on_kinds(args.fail_on, args.headless)
    check_time_travel(args)
    no_terminal = None if args.headless else missing_terminal()
    if no_terminal:  # checked before any request goes out
        raise UsageError(
            f"the app needs a terminal and {no_terminal} is not one; "
            "add --headless for a JSON report"
        )
    otlp = otlp_export(args.otlp)
    source = build_source(args)
    capturing = sys.modules.get("toolstream_tui.commands.capturing")  # loaded for a capture only
    if capturing is not None and isinstance(source, capturing.CaptureList):
        from .capturing import watch_list

        args.otlp_export = otlp  # each entry is sent as a span
        code = watch_list(source, args, fail_on)
        if otlp is not None:
            otlp.close()
            print(f"{PROG}: {otlp.summary()}", file=sys.stderr)
        return code
    source = cast("Source", source)  # a capture's list of streams was watched above
    collect_garbage_rarely()  # a report's stream and the app's Textual: see its docstring
    if args.headless:
        return report_headless(
            source,
            args.record,
            args.dialect,
            limits_of(args),
            args.bundle,
            fail_on,
            otlp,
            until=lambda state: until_cursor(args, state),
        )
    if waits_on_network(args):  # its first bytes come while Textual loads
        from ..sources.early import EarlySource

        source = EarlySource(source)
    from ..app import run_app  # Textual loads only for the UI

    exit_now(run_app(source, watch_options(args, otlp)))


def waits_on_network(args: argparse.Namespace) -> bool:
    """The source is a request (--url) or the embedded stub, not a file."""
    return args.url is not None or not args.replay
