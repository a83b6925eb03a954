"""The proxy's forwarding process: a small ASGI app served by uvicorn, forwarding
each request to the one upstream with httpx and streaming the answer back read by
read, bytes untouched.

It runs in a process of its own (started by `proxy.ProxyServer`), so nothing the
watching side does (parse a huge stream, draw a screen, stall, crash) can take
CPU, the GIL or time from a client's stream. Each request's items go to the
watching process as frames on a pipe that never makes the forwarder wait."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hmac
import itertools
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..process import prepare_descriptor_table, say_if_heard, tune_garbage_collector
from ..sources.base import Stopwatch, TransportError
from ..sources.http import HttpRequest, describe_transport_error
from ..sources.pacing import InputFirstPacer
from ..sources.secrets import Redactor, secrets_in
from .config import TOKEN_ENV, ProxyConfig, parse_upstream
from .http_rules import (
    HEADER_TIMEOUT_S,
    MAX_HEADER_BYTES,
    NOT_FORWARDED,
    PROXY_CHALLENGE,
    end_to_end,
    head_size,
    headers_too_large,
    proxy_error,
    upgrade_asked,
)
from .pipe import (
    ClientGone,
    Exchange,
    Feed,
    Note,
    Outlet,
    PipeFeed,
    Recording,
    ResponseEnd,
    give_large_blocks_back_at_once,
)
from .relay import ClientLeft, CutWhenTheClientLeaves, Receive, Relay, Send, client_gone
from .upstream import Outgoing, UpstreamTransport, outgoing, transport_for

MAX_CONNECTIONS = 4096  # past this, new connections get uvicorn's 503
FLUSH_TIMEOUT_S = 10.0  # at the end, how long to wait for the watcher to take what is left
STOP_POLL_S = 0.05  # how soon the main thread sees a signal or the watcher gone
# Of each pass of the loop, what starting requests may take: about one request's
# start (~0.35 ms of CPU), so that in a burst they start one a pass.
SETUP_SLICE_S = 0.0003
TARGETS_KEPT = 256  # upstream URLs parsed, for the requests that ask for the same again
DELIBERATE_CUT = "ASGI callable returned without completing response."
DRAIN_OVER = "timeout graceful shutdown exceeded"
# What uvicorn says of an upgrade it will not make; the proxy's 501 says it to the client.
UPGRADE_LINES = ("Unsupported upgrade request.", "No supported WebSocket library detected.")
WATCHER_GONE = (
    "toolstream-tui proxy: the watching process is gone; the forwarder takes no new "
    "connections, lets the requests in flight end (up to {drain:g} s) and exits"
)

StartRecording = Callable[[int, Exchange], "tuple[Recording | None, list[str]]"]


class BodyTooLarge(Exception):
    pass


class ForwardingAsgiApp:
    """The ASGI app: every HTTP request goes to `upstream` + its path, nowhere else."""

    def __init__(
        self,
        config: ProxyConfig,
        transport: httpx.AsyncBaseTransport,
        feed: Feed,
        start_recording: StartRecording | None = None,
    ) -> None:
        """`transport`: httpx's way upstream, used without a client: a client's
        redirects, auth, cookies and hooks do nothing for a proxy and cost ~80 us
        a request, which 64 requests starting at once pay in a row.
        `start_recording`: a request's recording, and any warnings (--record-dir)."""
        self.config = config
        self._start_recording = start_recording
        self.upstream = parse_upstream(config.upstream)
        self._base = str(self.upstream).rstrip("/")
        self._transport = transport
        self._timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.idle_timeout,
            write=config.connect_timeout,
            pool=None,
        ).as_dict()
        self._feed = feed
        self._targets: dict[str, httpx.URL | None] = {}
        self._ids = itertools.count(1)
        # Many requests at once (an agent's parallel calls) each cost far more to
        # start than a chunk costs to forward: they take turns, so that the chunks
        # of the streams already running go on between them.
        self.setups = InputFirstPacer(SETUP_SLICE_S)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        outlet = Outlet(next(self._ids), self._feed)
        try:
            await self._handle(scope, receive, send, outlet)
        except Exception as exc:  # a bug of ours must not reach the client as a traceback
            why = f"proxy failure: {type(exc).__name__}: {exc}"
            outlet.put(TransportError(why, 0.0))  # ignored once the request has ended
            outlet.put(ResponseEnd(0.0, 0))
            logging.getLogger("uvicorn.error").warning("%s", why)

    async def _handle(
        self, scope: dict[str, Any], receive: Receive, send: Send, outlet: Outlet
    ) -> None:
        method: str = scope["method"]
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        query: bytes = scope.get("query_string", b"")
        path = (raw_path + (b"?" + query if query else b"")).decode("latin-1")
        headers = [
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        ]
        forwarded = end_to_end(headers, NOT_FORWARDED)
        target = self._target(path)
        started_at, started = time.time(), time.monotonic()
        refusal: tuple[int, bytes] | None = None
        left = False
        head_bytes = head_size(path, headers)
        if not self._authorized(headers):
            refusal = proxy_error(
                407,
                "proxy_token_required",
                "this proxy takes requests with its token only: send "
                "'Proxy-Authorization: Bearer <the --token value>'; not forwarded",
            )
        elif head_bytes > self.config.max_header_bytes:
            refusal = headers_too_large(self.config.max_header_bytes)
        elif upgrade := upgrade_asked(headers):
            refusal = proxy_error(
                501,
                "upgrade_not_forwarded",
                f"the proxy does not pass protocol upgrades ({upgrade}: a WebSocket, such as "
                "the Realtime API); connect this client to the upstream directly",
            )
        try:
            body = b"" if refusal else await self._read_body(receive)
        except BodyTooLarge:
            body = b""
            refusal = proxy_error(
                413,
                "request_too_large",
                f"the request body is over the proxy's limit of {self.config.max_request_bytes} "
                "bytes (--max-request-bytes); not forwarded",
            )
        except ClientLeft:
            body, left = b"", True
        except asyncio.CancelledError:
            take_the_drain_cut()
            body = b""
            refusal = proxy_error(
                503,
                "proxy_shutting_down",
                f"the proxy shut down before the request came whole ({self._drain_over}); "
                "not forwarded",
            )
        if refusal is None and (method == "CONNECT" or target is None):
            refusal = proxy_error(
                400,
                "not_forwarded",
                f"the proxy forwards only to {self._base}; {path!r} is not a path there",
            )
        exchange = Exchange(
            method, path, str(target or self._base), dict(forwarded), body, started_at, started
        )
        self._record(exchange, outlet)
        elapsed = Stopwatch()
        if left:
            message = "the client disconnected before sending its whole request; not forwarded"
            outlet.put(Note(message))
            outlet.put(TransportError(message, elapsed()))
            outlet.put(ResponseEnd(elapsed(), 0))
        elif refusal is not None:
            await self._refuse(send, outlet, refusal, elapsed)
        else:
            assert target is not None  # refused with 400 otherwise
            await self._forward(exchange, target, forwarded, outlet, receive, send, elapsed)

    def _record(self, exchange: Exchange, outlet: Outlet) -> None:
        """Puts the exchange on the outlet, recorded from here on when asked."""
        if self._start_recording is None:
            outlet.put(exchange)
            return
        recording, warnings = self._start_recording(outlet.request_id, exchange)
        path = None if recording is None else str(recording.path)
        outlet.put(dataclasses.replace(exchange, recording=path))
        outlet.recording = recording
        for warning in warnings:
            outlet.put(Note(warning))

    def _authorized(self, headers: list[tuple[str, str]]) -> bool:
        token = self.config.token
        if token is None:
            return True
        given = [value for name, value in headers if name.lower() == "proxy-authorization"]
        if len(given) != 1:
            return False
        scheme, _, credentials = given[0].strip().partition(" ")
        # An auth scheme is case-insensitive (RFC 9110 11.1): bearer, BEARER.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), token.encode()
        )

    def _target(self, path: str) -> httpx.URL | None:
        """The upstream URL for a request target, or None unless it is a plain path
        (an absolute-form or authority-form target would name another host). Kept
        for the requests to the same target: parsing it was a sixth of the
        forwarder's own work on a request, and an agent asks for one path again and
        again."""
        if path in self._targets:
            return self._targets[path]
        if len(self._targets) >= TARGETS_KEPT:
            self._targets.clear()
        target = self._targets[path] = self._parsed_target(path)
        return target

    def _parsed_target(self, path: str) -> httpx.URL | None:
        if not path.startswith("/"):
            return None
        try:
            url = httpx.URL(self._base + path)
        except httpx.InvalidURL:
            return None
        same = (url.scheme, url.host, url.port) == (
            self.upstream.scheme,
            self.upstream.host,
            self.upstream.port,
        )
        return url if same else None

    async def _read_body(self, receive: Receive) -> bytes:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientLeft
            body += message.get("body", b"")
            if len(body) > self.config.max_request_bytes:
                raise BodyTooLarge
            if not message.get("more_body", False):
                return bytes(body)

    async def _refuse(
        self, send: Send, outlet: Outlet, refusal: tuple[int, bytes], elapsed: Stopwatch
    ) -> None:
        status, payload = refusal
        message = json.loads(payload)["error"]["message"]
        outlet.put(Note(f"refused with {status}: {message}"))
        outlet.put(TransportError(message, elapsed()))
        challenge = [(b"proxy-authenticate", PROXY_CHALLENGE)] if status == 407 else []
        await send_json(send, status, payload, challenge)
        outlet.put(ResponseEnd(elapsed(), len(payload)))

    async def _forward(
        self,
        exchange: Exchange,
        target: httpx.URL,
        headers: list[tuple[str, str]],
        outlet: Outlet,
        receive: Receive,
        send: Send,
        elapsed: Stopwatch,
    ) -> None:
        sending = outgoing(exchange.method, target, headers, exchange.body, self._timeout)
        leaving = asyncio.ensure_future(client_gone(receive))
        try:
            await self._forward_with(exchange, sending, outlet, leaving, send, elapsed)
        finally:
            leaving.cancel()

    async def _forward_with(
        self,
        exchange: Exchange,
        sending: Outgoing,
        outlet: Outlet,
        leaving: asyncio.Future[None],
        send: Send,
        elapsed: Stopwatch,
    ) -> None:
        """`_forward`, `leaving` done once the client is gone."""
        try:
            await self.setups.take()  # at once while the slice lasts
            response = await self._answer(sending, leaving)
        except asyncio.CancelledError:
            take_the_drain_cut()
            why = f"the proxy shut down before upstream answered ({self._drain_over})"
            await close_unanswered(503, "proxy_shutting_down", why, outlet, send, elapsed)
            return
        except TimeoutError:
            why = f"upstream sent no response within {self.config.connect_timeout:g} s (--timeout)"
            await close_unanswered(504, "upstream_timeout", why, outlet, send, elapsed)
            return
        except ClientLeft:
            message = (
                "the client disconnected before upstream answered; the proxy closed the request"
            )
            outlet.put(Note(message))
            outlet.put(ClientGone(message, elapsed()))
            outlet.put(ResponseEnd(elapsed(), 0))
            return
        except (httpx.HTTPError, OSError) as exc:
            await self._unreachable(exchange, exc, outlet, send, elapsed)
            return
        relay = Relay(response, send, outlet, elapsed, self.config.idle_timeout, exchange)
        try:
            await relay.run(leaving)
        except asyncio.CancelledError:
            # Returning with the response incomplete makes uvicorn close the
            # connection: the client sees the cut, as it would an upstream's.
            take_the_drain_cut()
            message = (
                f"the proxy shut down while the response streamed ({self._drain_over}): "
                f"the client got it cut after {relay.forwarded} bytes"
            )
            outlet.put(Note(message))
            outlet.put(TransportError(message, elapsed()))
        finally:
            await response.aclose()
            outlet.put(ResponseEnd(elapsed(), relay.forwarded))

    async def _answer(self, request: Outgoing, leaving: asyncio.Future[None]) -> httpx.Response:
        """Upstream's response head. Raises TimeoutError past --timeout (it bounds the
        wait for the head as well as the connect: an upstream that accepts and never
        answers must not hold the client), ClientLeft when the client goes first (the
        upstream request is closed then, not when its answer comes)."""
        with CutWhenTheClientLeaves(leaving):
            async with asyncio.timeout(self.config.connect_timeout):
                return await self._send(request)

    async def _send(self, request: Outgoing) -> httpx.Response:
        """Our own transport takes the request as it is; httpx's (through a proxy the
        environment names) an httpx.Request."""
        if isinstance(self._transport, UpstreamTransport):
            return await self._transport.send(request)
        asked = httpx.Request(
            request.method,
            request.url,
            headers=request.headers,  # the Host and Content-Length it would add included
            content=request.body,
            extensions={"timeout": request.timeouts},
        )
        response = await self._transport.handle_async_request(asked)
        response.request = asked
        return response

    @property
    def _drain_over(self) -> str:
        return f"--drain {self.config.shutdown_grace:g} s was over"

    async def _unreachable(
        self, exchange: Exchange, exc: Exception, outlet: Outlet, send: Send, elapsed: Stopwatch
    ) -> None:
        redactor = Redactor(secrets_in(exchange.url, exchange.headers))
        why = redactor.text(describe_transport_error(exc, upstream_request(exchange, self.config)))
        error = proxy_error(
            502, "upstream_unreachable", f"toolstream-tui proxy: upstream unreachable: {why}"
        )
        await answer_instead(error, why, outlet, send, elapsed)


def take_the_drain_cut() -> None:
    """Called where a request's task was cancelled: uvicorn cancels the requests
    still going once the drain at shutdown is over (nothing else cancels them; a
    client that leaves is ClientLeft). The request ends there by itself, saying so
    to the client and the watcher; let through, the cancellation would get the
    client uvicorn's 500, or a cut, and the user "Exception in ASGI application".
    Taken as asyncio asks of code that takes a cancellation: uncancelled."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def close_unanswered(
    status: int, code: str, why: str, outlet: Outlet, send: Send, elapsed: Stopwatch
) -> None:
    """The request closed before upstream answered: the proxy's own `status` to the
    client, saying `why`."""
    why += "; the proxy closed the request"
    error = proxy_error(status, code, f"toolstream-tui proxy: {why}")
    await answer_instead(error, why, outlet, send, elapsed)


async def answer_instead(
    error: tuple[int, bytes], why: str, outlet: Outlet, send: Send, elapsed: Stopwatch
) -> None:
    """The proxy's own error to the client, in place of upstream's answer."""
    status, payload = error
    outlet.put(TransportError(why, elapsed()))
    outlet.put(Note(f"the client got a {status} from the proxy"))
    await send_json(send, status, payload)
    outlet.put(ResponseEnd(elapsed(), len(payload)))


def upstream_request(exchange: Exchange, config: ProxyConfig) -> HttpRequest:
    """The request as the HTTP source describes one (for its error messages)."""
    return HttpRequest(
        url=exchange.url,
        method=exchange.method,
        headers=exchange.headers,
        timeout=config.connect_timeout,
    )


async def send_json(
    send: Send, status: int, payload: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


# -- the server --------------------------------------------------------------------


class _Quiet(logging.Filter):
    """Drops the lines uvicorn writes when the proxy cuts a client on purpose, or
    cuts the streams still going once the drain is over (each request says so)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(UPGRADE_LINES):
            return False
        return message != DELIBERATE_CUT and not message.endswith(DRAIN_OVER)


class _OneLine(logging.Formatter):
    """uvicorn's messages as one line each, never with a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        return f"toolstream-tui proxy: {record.getMessage()}"


def quiet_uvicorn_logging() -> None:
    logger = logging.getLogger("uvicorn")
    if any(isinstance(f, _Quiet) for f in logger.filters):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    handler.addFilter(_Quiet())
    logger.addFilter(_Quiet())
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False


class ClientConnection(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 connection, parsed by llhttp (in C: with h11, the burst of
    heads read and written when many requests start at once held up every
    stream's first events), with what uvicorn leaves out:

    - closed when a request's head has not come whole within `head_timeout`
      seconds of the connection opening or of the last response ending: uvicorn
      waits forever for a head that arrives in pieces, and a thousand clients that
      send half a request (slowloris) would hold a thousand connections, up to
      the limit past which everyone gets a 503;
    - answered 431 and closed once the reads of a head not yet whole pass
      `max_head_bytes`, after the response going out, if any, has ended (a head
      that came whole is measured by the app);
    - the target handed on as it came, as h11 did: llhttp's URL parser drops the
      host of an absolute-form target, which the app must see to refuse it."""

    head_timeout = HEADER_TIMEOUT_S
    max_head_bytes = MAX_HEADER_BYTES
    _head_deadline: asyncio.TimerHandle | None = None
    _head_bytes = 0  # what the reads of the head not yet whole brought; -1: it is whole

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_a_head()

    def data_received(self, data: bytes) -> None:
        if self._head_bytes >= 0:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._head_bytes > self.max_head_bytes:
            self._refuse_the_head()

    def on_headers_complete(self) -> None:
        target = self.url
        if not target.startswith(b"/"):
            self.url = b"/"  # llhttp's URL parser takes the origin form only
        super().on_headers_complete()
        raw_path, _, query = target.partition(b"?")
        self.scope["raw_path"], self.scope["query_string"] = raw_path, query
        self._head_bytes = -1

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0  # the next head starts in the next read

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._head_bytes > self.max_head_bytes:
            self._refuse_the_head()
        self._wait_for_a_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        super().connection_lost(exc)

    def _wait_for_a_head(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        self._head_deadline = self.loop.call_later(self.head_timeout, self._head_late)

    def _head_late(self) -> None:
        # As uvicorn's own shutdown tells an idle connection from a busy one.
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()

    def _refuse_the_head(self) -> None:
        """431, and the connection closed; while a response is still going out,
        the reading waits and the answer follows the response's end."""
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self.flow.pause_reading()
            return
        status, body = headers_too_large(self.max_head_bytes)
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.close()


def client_connection(head_timeout: float, max_head_bytes: int) -> type[ClientConnection]:
    limits = {"head_timeout": head_timeout, "max_head_bytes": max_head_bytes}
    return type("ClientConnection", (ClientConnection,), limits)


class Forwarder:
    """uvicorn serving `ForwardingAsgiApp` on the given socket, on a thread of its own; the
    main thread waits for a signal, or for the watching process to go away."""

    def __init__(self, config: ProxyConfig, sock: socket.socket, pipe_fd: int) -> None:
        self.config = config
        self.sock = sock
        self.pipe_fd = pipe_fd
        self.feed = PipeFeed(config.watch_buffer_bytes)
        self.server = uvicorn.Server(self._uvicorn_config())
        self.app: ForwardingAsgiApp | None = None
        self.recording_tasks: set[asyncio.Task[None]] = set()

    def _uvicorn_config(self) -> uvicorn.Config:
        config = self.config
        return uvicorn.Config(
            self._dispatch,
            http=client_connection(config.header_timeout, config.max_header_bytes),
            interface="asgi3",
            ws="none",
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,  # the client sees upstream's headers, not ours
            date_header=False,
            proxy_headers=False,
            limit_concurrency=MAX_CONNECTIONS,
            # Typed int, used as asyncio.timeout's delay: --drain 0.5 means half a second.
            timeout_graceful_shutdown=config.shutdown_grace,  # type: ignore[arg-type]
        )

    async def _dispatch(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """The ASGI entry point; the app itself is made on the server's loop, with
        the httpx transport it uses."""
        assert self.app is not None
        await self.app(scope, receive, send)

    async def serve(self) -> None:
        config = self.config
        await self.feed.open(self.pipe_fd)
        try:
            transport = transport_for(parse_upstream(config.upstream), config.max_header_bytes)
            async with transport:
                self.app = ForwardingAsgiApp(config, transport, self.feed.put, self._recordings())
                await self.server.serve(sockets=[self.sock])
        finally:
            # Past the drain, uvicorn cancels the requests still streaming and returns:
            # each says so on the pipe before its last flush.
            if cut := self.server.server_state.tasks:
                await asyncio.wait(cut, timeout=FLUSH_TIMEOUT_S)
            if self.recording_tasks:  # each ends with its request, which uvicorn has ended
                await asyncio.wait(self.recording_tasks, timeout=FLUSH_TIMEOUT_S)
            await self.feed.flush(FLUSH_TIMEOUT_S)

    def _recordings(self) -> StartRecording | None:
        """With --record-dir, what starts each request's recording: here, where every
        byte passes, so that a watcher that lags or dies leaves it whole."""
        if self.config.record_dir is None:
            return None
        from .recording import ExchangeRecording  # the core's reading, only when recording

        record_dir = Path(self.config.record_dir)

        def start(request_id: int, exchange: Exchange) -> tuple[Recording | None, list[str]]:
            warnings: list[str] = []
            recording = ExchangeRecording.start(record_dir, request_id, exchange, warnings.append)
            if recording is not None:
                self.recording_tasks.add(recording.task)
                recording.task.add_done_callback(self.recording_tasks.discard)
            return recording, warnings

        return start

    def _serve_on_uvloop(self) -> None:
        """uvloop's loop: each forwarded chunk costs the loop's machinery (socket
        reads and writes, waking tasks) several times over, and uvloop's is in C
        (bench/proxy.py: the forwarder's CPU per paced event fell by about a fifth)."""
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(self.serve())

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT (a second one stops at once) or until the
        watching process closes our stdin."""
        signals: list[int] = []
        # The handler only appends: it runs on the main thread between any two
        # bytecodes, and setting a threading.Event there deadlocks when the main
        # thread was inside that Event's wait (it holds the lock the handler needs).
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda number, _frame: signals.append(number))
        watcher_gone = threading.Event()

        def until_the_watcher_goes() -> None:
            wait_for_eof(0)
            watcher_gone.set()

        threading.Thread(target=until_the_watcher_goes, daemon=True).start()
        serving = threading.Thread(target=self._serve_on_uvloop, daemon=True)
        serving.start()
        while serving.is_alive() and not signals and not watcher_gone.is_set():
            time.sleep(STOP_POLL_S)
        if watcher_gone.is_set() and not signals:
            # Killed, or stopped without stopping us: its screen and summary are gone,
            # and a proxy nobody watches is not what was asked for. The requests in
            # flight still end for their clients.
            say_if_heard(WATCHER_GONE.format(drain=self.config.shutdown_grace))
        self.server.should_exit = True
        # uvicorn gives streaming requests the grace period, then the pipe its flush;
        # past both, nothing is worth outliving the watching process for.
        give_up_at = time.monotonic() + self.config.shutdown_grace + FLUSH_TIMEOUT_S + 1
        while serving.is_alive() and len(signals) < 2 and time.monotonic() < give_up_at:
            serving.join(STOP_POLL_S)
        self.server.force_exit = True
        # Returning ends the process, the daemon threads with it.


def wait_for_eof(fd: int) -> None:
    """Until `fd` is closed at the other end. With os.read, not sys.stdin: a daemon
    thread blocked inside a buffered reader makes the interpreter's shutdown abort
    ("Fatal Python error: _enter_buffered_busy") when it closes stdin."""
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):
            pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolstream-tui proxy (forwarder)")
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--pipe-fd", type=int, required=True)
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    # A background process group of the terminal's session: a terminal set to
    # `tostop` would stop us at our first line on stderr (or fail it once the
    # watching process is gone), and the clients' streams with us.
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    quiet_uvicorn_logging()
    tune_garbage_collector()
    give_large_blocks_back_at_once()
    prepare_descriptor_table()  # before Forwarder.run starts its threads
    config = ProxyConfig(**json.loads(args.config), token=os.environ.pop(TOKEN_ENV, None))
    sock = socket.socket(fileno=args.listen_fd)
    try:
        Forwarder(config, sock, args.pipe_fd).run()
    except Exception as exc:  # one line, never a traceback
        say_if_heard(f"toolstream-tui proxy: the forwarder failed: {type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
