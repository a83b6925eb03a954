"""`toolstream-tui proxy --upstream URL`: a pass-through proxy for an agent's own
requests. Every request is forwarded to the one upstream untouched and read by
the same core as a watched stream; `--headless` prints one JSON line per finished
request, `--record-dir` keeps each as a recording, and `--fail-on` makes the
shutdown exit 3 when a request showed one of those anomalies.

Exit codes: 0 stopped cleanly (SIGINT, SIGTERM or --exit-after), 1 could not
listen or the server failed, 2 usage, 3 an anomaly named by --fail-on occurred."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence

from ..core.dialects.detect import DIALECTS
from ..core.exit_codes import EXIT_FAILED, EXIT_LINT, EXIT_OK, EXIT_USAGE
from ..core.report import printable_json
from ..core.visible import inert
from ..otlp import OtlpUnavailable
from ..otlp.option import add_otlp_option, open_export
from ..otlp.watching import is_model_call
from ..process import prepare_descriptor_table, tune_garbage_collector
from ..proxy.config import (
    CONNECT_TIMEOUT_S,
    DEFAULT_HOST,
    DEFAULT_PORT,
    SHUTDOWN_GRACE_S,
    TOKEN_ENV,
    WATCH_BUFFER_BYTES,
    ProxyConfig,
    UpstreamError,
    is_loopback,
    parse_upstream,
)
from ..proxy.http_rules import MAX_REQUEST_BYTES
from ..proxy.requests import DEFAULT_KEEP, Change, RequestList, RequestRecord
from ..proxy.server import ProxyServer
from ..sources.secrets import Redactor, secrets_in
from .common import (
    OneLineParser,
    UsageError,
    add_limit_options,
    fail_on_kinds,
    limits_of,
    lint_failures,
    missing_terminal,
    named_path,
    number_from,
)

PROG = "toolstream-tui proxy"
CONSUMER_GRACE_S = 5.0  # after the server stopped, how long the core may take to catch up
WATCHER_NICENESS = 10  # how far the watching process steps back from the forwarder


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="Forward an agent's requests to one upstream, untouched, and watch every "
        "response stream through the same core. Point the agent's base URL at the proxy "
        "(e.g. OPENAI_BASE_URL=http://127.0.0.1:8787/v1).",
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="where every request goes, e.g. "
        "https://api.openai.com (a path prefix is kept: https://gateway/openai)",
    )
    parser.add_argument(
        "--listen",
        default=f"{DEFAULT_HOST}:{DEFAULT_PORT}",
        metavar="HOST:PORT",
        help=f"address to listen on (default: {DEFAULT_HOST}:{DEFAULT_PORT}; port 0 picks a "
        "free one; an address other machines can reach needs --allow-remote)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --listen name an address that is not loopback: whoever can reach it can send "
        "requests through the proxy, and the agent's keys cross that network (use --token)",
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        default=os.environ.get(TOKEN_ENV),
        help="forward only requests that carry 'Proxy-Authorization: Bearer TOKEN' (others get "
        f"407 and never reach upstream; default: ${TOKEN_ENV}, which keeps it out of ps)",
    )
    parser.add_argument(
        "--headless",
        action="store_true",
        help="no UI: one JSON line per finished request on stdout",
    )
    parser.add_argument(
        "--record-dir",
        metavar="DIR",
        type=named_path,
        help="write each request as a recording in DIR (secrets redacted; --replay and diff "
        "read them)",
    )
    parser.add_argument(
        "--fail-on",
        metavar="KINDS",
        action="append",
        default=[],
        help="exit 3 at shutdown if any request showed an anomaly of these comma-separated "
        "kinds ('any' for every kind; repeatable)",
    )
    parser.add_argument(
        "--exit-after",
        type=int,
        metavar="N",
        help="shut down once N requests have finished",
    )
    parser.add_argument(
        "--keep",
        type=int,
        default=DEFAULT_KEEP,
        metavar="N",
        help=f"keep the last N finished requests in memory (default: {DEFAULT_KEEP}; "
        "--record-dir keeps them all)",
    )
    parser.add_argument(
        "--dialect",
        choices=sorted(DIALECTS),
        help="read every response as this dialect (default: detected per response)",
    )
    parser.add_argument(
        "--timeout",
        type=number_from(float, 0, above=True),
        default=CONNECT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"to connect to the upstream, and again for its response to begin: past it the "
        f"client gets a 504 (default: {CONNECT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--drain",
        type=number_from(float, 0),
        default=SHUTDOWN_GRACE_S,
        metavar="SECONDS",
        help="at SIGTERM or SIGINT, let the responses still streaming end for up to SECONDS, "
        f"then cut them; a second signal cuts at once (default: {SHUTDOWN_GRACE_S:g})",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=MAX_REQUEST_BYTES,
        metavar="N",
        help=f"refuse (413) a request body over N bytes (default: {MAX_REQUEST_BYTES})",
    )
    parser.add_argument(
        "--watch-buffer",
        type=number_from(int, 0),
        default=WATCH_BUFFER_BYTES,
        metavar="BYTES",
        help="what the forwarder holds for a watcher that has fallen behind (a stopped "
        "terminal); past it, the rest of a response is not watched, only counted "
        f"(watch-gap); clients and --record-dir get every byte (default: {WATCH_BUFFER_BYTES})",
    )
    add_limit_options(
        parser,
        "cut an upstream that sends nothing for SECONDS: the client sees the cut, the request "
        "ends truncated (default: never)",
    )
    add_otlp_option(parser)
    return parser


def parse_listen(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {text!r} is not HOST:PORT (e.g. 127.0.0.1:8787)")
    return host, int(port)


def config_of(args: argparse.Namespace) -> ProxyConfig:
    host, port = parse_listen(args.listen)
    if not (is_loopback(host) or args.allow_remote):
        raise UsageError(
            f"--listen {args.listen}: {host} is not a loopback address, so other machines could "
            "send requests through the proxy; add --allow-remote if that is meant (and --token)"
        )
    if args.token is not None and not args.token.strip():
        raise UsageError("--token must not be empty")
    try:
        parse_upstream(args.upstream)
    except UpstreamError as exc:
        raise UsageError(str(exc)) from exc
    for name in ("keep", "max_request_bytes"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be 0 or more")
    if args.exit_after is not None and args.exit_after < 1:
        raise UsageError("--exit-after must be 1 or more")
    return ProxyConfig(
        upstream=args.upstream,
        host=host,
        port=port,
        max_request_bytes=args.max_request_bytes,
        connect_timeout=args.timeout,
        idle_timeout=args.idle_timeout,
        shutdown_grace=args.drain,
        watch_buffer_bytes=args.watch_buffer,
        token=args.token,
        record_dir=None if args.record_dir is None else str(args.record_dir),
    )


def shown_url(url: str) -> str:
    return Redactor(secrets_in(url, {})).url(url)


class FailOnCounter:
    """Counts the finished requests that showed an anomaly --fail-on names."""

    def __init__(self, fail_on: frozenset[str]) -> None:
        self.fail_on = fail_on
        self.failed_requests = 0

    def failures(self, record: RequestRecord) -> list[str]:
        """What --fail-on finds in a finished request that was a model's, counted (a
        listing such as GET /v1/models is read as no stream, and lints nothing)."""
        if not is_model_call(record.method, record.session):
            return []
        found = lint_failures(record.session.state, self.fail_on)
        self.failed_requests += bool(found)
        return found

    def __call__(self, record: RequestRecord, change: Change) -> None:
        if change is Change.FINISHED:
            self.failures(record)


class HeadlessPrinter(FailOnCounter):
    """One compact JSON line per finished request on stdout, the --fail-on findings
    on stderr, and the stop signal once --exit-after requests are done."""

    def __init__(
        self, log: RequestList, fail_on: frozenset[str], exit_after: int | None, stop: asyncio.Event
    ) -> None:
        super().__init__(fail_on)
        self.log = log
        self.exit_after = exit_after
        self.stop = stop

    def __call__(self, record: RequestRecord, change: Change) -> None:
        if change is not Change.FINISHED:
            return
        sys.stdout.write(printable_json(record.summary(), compact=True))
        sys.stdout.flush()
        for line in self.failures(record):
            print(f"{PROG}: request {record.id}: {inert(line)}", file=sys.stderr)
        if self.exit_after is not None and self.log.finished_count >= self.exit_after:
            self.stop.set()


def step_behind_the_forwarder() -> None:
    """Lower the priority of this process (the core, the screen) below that of the
    forwarder it has started, which keeps the one it was started with: when the
    cores are busy, the agent's streams go first. (On Linux a thread's own: this
    is the loop's thread, and the threads started from here on inherit it.)"""
    with contextlib.suppress(OSError):
        os.nice(WATCHER_NICENESS)


def start_server(config: ProxyConfig, log: RequestList) -> ProxyServer | None:
    """Listen and start forwarding, saying where on stderr (None: cannot listen)."""
    server = ProxyServer(config, log.take, asyncio.get_running_loop())
    try:
        server.start()
    except OSError as exc:
        print(
            f"{PROG}: cannot listen on {config.host}:{config.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return None
    step_behind_the_forwarder()
    print(
        f"{PROG}: listening on {server.url} (forwarding to {shown_url(config.upstream)})",
        file=sys.stderr,
    )
    if not is_loopback(config.host):
        print(f"{PROG}: warning: {remote_warning(config)}", file=sys.stderr)
    return server


def remote_warning(config: ProxyConfig) -> str:
    """Who can reach the proxy on a non-loopback address, and what they get."""
    unspecified = config.host in ("0.0.0.0", "::")
    who = (
        "every machine on every network this one is on"
        if unspecified
        else (f"every machine that can reach {config.host}")
    )
    guard = (
        "only requests with the --token get through"
        if config.token
        else "nothing stops them: add --token"
    )
    return (
        f"{config.host} is not a loopback address: {who} can send requests through this proxy "
        f"to {shown_url(config.upstream)}, and the agent's requests (its keys in their headers) "
        f"cross that network unencrypted; {guard}"
    )


async def serve(config: ProxyConfig, log: RequestList, stop: asyncio.Event) -> int:
    """Run the proxy until `stop` is set or a signal arrives, then let the requests
    still streaming end (within the grace period) and the core catch up."""
    with stopped_by_signals(stop) as on_server:
        server = start_server(config, log)
        if server is None:
            return EXIT_FAILED
        on_server(server)
        return await serve_until(server, log, stop)


@contextlib.contextmanager
def stopped_by_signals(
    stop: asyncio.Event, also: Callable[[], object] = lambda: None
) -> Iterator[Callable[[ProxyServer], None]]:
    """SIGINT and SIGTERM set `stop` (and call `also`), from before the proxy says
    it is listening: a script that signals it as soon as it has read that line
    must not kill it outright. A second signal does not wait for requests. Yields
    the function that tells it the server once there is one."""
    loop = asyncio.get_running_loop()
    started: list[ProxyServer] = []

    def on_signal() -> None:
        for server in started:
            server.stop(force=stop.is_set())
        stop.set()
        also()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, on_signal)
    try:
        yield started.append
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)


async def serve_until(server: ProxyServer, log: RequestList, stop: asyncio.Event) -> int:
    """Forward until `stop` is set (or the forwarder ends), then stop and let the
    core catch up with what is still streaming, within a grace period."""
    ended = asyncio.ensure_future(asyncio.to_thread(server.join))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({ended, stopping}, return_when=asyncio.FIRST_COMPLETED)
    server.stop()
    await ended
    stopping.cancel()
    try:
        await asyncio.wait_for(log.wait_idle(), CONSUMER_GRACE_S)
    except TimeoutError:
        log.stop()
        await log.wait_idle()
    if server.failure is not None:
        print(f"{PROG}: the server failed: {inert(server.failure)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def serve_headless(
    config: ProxyConfig, log: RequestList, fail_on: frozenset[str], exit_after: int | None
) -> int:
    tune_garbage_collector()
    stop = asyncio.Event()
    printer = HeadlessPrinter(log, fail_on, exit_after, stop)
    log.subscribe(printer)
    code = await serve(config, log, stop)
    count = log.finished_count
    summary = f"{count} request{'s' * (count != 1)}"
    if fail_on:
        summary += f", {printer.failed_requests} with an anomaly named by --fail-on"
    print(f"{PROG}: stopped after {summary}", file=sys.stderr)
    return code or (EXIT_LINT if printer.failed_requests else EXIT_OK)


async def run_request_list(
    config: ProxyConfig, log: RequestList, fail_on: frozenset[str], exit_after: int | None
) -> int:
    """The request list: the proxy forwards while the app shows every request."""
    from ..app.apps.proxy import RequestListApp  # Textual loads only for the UI

    tune_garbage_collector()  # as the app watching one stream does, once Textual is loaded
    stop = asyncio.Event()
    apps: list[RequestListApp] = []

    def quit_apps() -> None:  # as `q` does: the terminal is given back
        for app in apps:
            app.exit()

    with stopped_by_signals(stop, also=quit_apps) as on_server:
        server = start_server(config, log)
        if server is None:
            return EXIT_FAILED
        on_server(server)
        linter = FailOnCounter(fail_on)
        log.subscribe(linter)
        app = RequestListApp(log, server.url, shown_url(config.upstream), exit_after=exit_after)
        apps.append(app)
        serving = asyncio.ensure_future(serve_until(server, log, stop))
        try:
            if not stop.is_set():
                await app.run_async()
        finally:
            stop.set()
            code = await serving
    return code or (EXIT_LINT if linter.failed_requests else EXIT_OK)


def main_proxy(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = config_of(args)
        fail_on = fail_on_kinds(args.fail_on, headless=True)
        otlp = open_export(args.otlp)
    except (UsageError, OtlpUnavailable) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    no_terminal = None if args.headless else missing_terminal()
    if no_terminal:  # before anything listens
        print(
            f"{PROG}: the request list needs a terminal and {no_terminal} is not one; "
            "add --headless for one JSON line per request",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.record_dir is not None:
        try:
            args.record_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"{PROG}: cannot record to {args.record_dir}: {exc.strerror}", file=sys.stderr)
            return EXIT_FAILED
    log = RequestList(
        limits_of(args),
        dialect=args.dialect,
        keep=args.keep,
        tapes=not args.headless,
        otlp=otlp,
    )
    prepare_descriptor_table()  # before the event loop or the app start threads
    run = serve_headless if args.headless else run_request_list
    code = asyncio.run(run(config, log, fail_on, args.exit_after))
    if otlp is not None:  # what is still queued leaves now, or is counted
        otlp.close()
        print(f"{PROG}: {otlp.summary()}", file=sys.stderr)
    return code
