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
import ctypes
import ctypes.util
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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
import uvloop
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..process import prepare_descriptor_table, tune_garbage_collector
from ..sources.base import (
    IDLE_TIMEOUT,
    TRANSPORT,
    BodyChunk,
    Clock,
    ResponseHead,
    Stopwatch,
    TransportError,
)
from ..sources.http import HttpRequest, describe_transport_error
from ..sources.pacing import InputFirstPacer
from ..sources.secrets import Redactor, secrets_in
from .server import (
    HEADER_TIMEOUT_S,
    TAP_CAP_BYTES,
    TOKEN_ENV,
    ClientGone,
    Exchange,
    Note,
    ProxyConfig,
    TapEnd,
    TapItem,
    WatchGap,
    frame,
    parse_upstream,
)
from .upstream import UpstreamBody, transport_for

MAX_CONNECTIONS = 4096  # past this, new connections get uvicorn's 503
FLUSH_TIMEOUT_S = 10.0  # at the end, how long to wait for the watcher to take what is left
FLUSH_POLL_S = 0.01
TAP_BATCH_S = 0.01  # the watcher's screen redraws far less often than this
TAP_BATCH_BYTES = 256 * 1024
LAGGED_BYTES = 8 << 20  # held past this, the allocator is trimmed once the watcher caught up
STOP_POLL_S = 0.05  # how soon the main thread sees a signal or the watcher gone
READ_AHEAD_BYTES = 1 << 20  # read from upstream while the client is slower, up to this
SETUP_SLICE_S = 0.002  # of each pass of the loop, what starting requests may take
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Set again by httpx from the URL and the body, or meaningless once the body is read.
NOT_FORWARDED = frozenset({"host", "content-length", "expect"})
DELIBERATE_CUT = "ASGI callable returned without completing response."
PROXY_CHALLENGE = b'Bearer realm="toolstream-tui proxy"'
DRAIN_OVER = "timeout graceful shutdown exceeded"
# What uvicorn says of an upgrade it will not make; the proxy's 501 says it to the client.
UPGRADE_LINES = ("Unsupported upgrade request.", "No supported WebSocket library detected.")
WATCHER_GONE = (
    "toolstream-tui proxy: the watching process is gone; the forwarder takes no new "
    "connections, lets the requests in flight end (up to {drain:g} s) and exits"
)

Send = Callable[[dict[str, Any]], Any]
Receive = Callable[[], Any]
Feed = Callable[[int, "TapItem | Exchange"], None]
StartRecording = Callable[[int, Exchange], "tuple[Recording | None, list[str]]"]


class Recording(Protocol):
    """Where a request is recorded as it passes (`requests.ExchangeRecording`)."""

    path: Path
    task: asyncio.Task[None]

    def put(self, item: TapItem) -> None: ...


class Outlet:
    """One request's items, numbered, for the watching process (and its recording,
    which gets every item, however far behind the watcher is)."""

    def __init__(self, request_id: int, feed: Feed) -> None:
        self.request_id = request_id
        self._feed = feed
        self.recording: Recording | None = None

    def put(self, item: TapItem | Exchange) -> None:
        if self.recording is not None and not isinstance(item, Exchange):
            self.recording.put(item)
        self._feed(self.request_id, item)


class BodyTooLarge(Exception):
    pass


class ClientLeft(Exception):
    pass


def proxy_error(status: int, code: str, message: str) -> tuple[int, bytes]:
    error = {"message": message, "type": "proxy_error", "code": code}
    return status, json.dumps({"error": error}, ensure_ascii=False).encode()


def connection_tokens(headers: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Header names a `Connection` header lists: hop-by-hop for this connection only."""
    return frozenset(
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    )


def upgrade_asked(headers: list[tuple[str, str]]) -> str | None:
    """The protocol a request asks to switch to (`Upgrade`, named in `Connection`)."""
    if "upgrade" not in connection_tokens(headers):
        return None
    return next((value for name, value in headers if name.lower() == "upgrade"), None)


def end_to_end(
    headers: list[tuple[str, str]], also_dropped: frozenset[str]
) -> list[tuple[str, str]]:
    """`headers` but the hop-by-hop ones, names as they came (compared lowercased)."""
    dropped = HOP_BY_HOP | also_dropped | connection_tokens(headers)
    return [(name, value) for name, value in headers if name.lower() not in dropped]


class ProxyApp:
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
        self._ids = itertools.count(1)
        # Many requests at once (an agent's parallel calls) each cost far more to
        # start than a chunk costs to forward: they take turns, so that the chunks
        # of the streams already running go on between them.
        self.setups = InputFirstPacer(SETUP_SLICE_S)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        tap = Outlet(next(self._ids), self._feed)
        try:
            await self._handle(scope, receive, send, tap)
        except Exception as exc:  # a bug of ours must not reach the client as a traceback
            why = f"proxy failure: {type(exc).__name__}: {exc}"
            tap.put(TransportError(why, 0.0))  # ignored once the request has ended
            tap.put(TapEnd(0.0, 0))
            logging.getLogger("uvicorn.error").warning("%s", why)

    async def _handle(
        self, scope: dict[str, Any], receive: Receive, send: Send, tap: Outlet
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
        # uvicorn's h11 bounds a head that arrives in pieces; one that came whole is
        # measured here.
        head_bytes = len(path) + sum(len(name) + len(value) + 4 for name, value in headers)
        if not self._authorized(headers):
            refusal = proxy_error(
                407,
                "proxy_token_required",
                "this proxy takes requests with its token only: send "
                "'Proxy-Authorization: Bearer <the --token value>'; not forwarded",
            )
        elif head_bytes > self.config.max_header_bytes:
            refusal = proxy_error(
                431,
                "headers_too_large",
                f"the request line and headers are over the proxy's limit of "
                f"{self.config.max_header_bytes} bytes; not forwarded",
            )
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
        if refusal is None and (method == "CONNECT" or target is None):
            refusal = proxy_error(
                400,
                "not_forwarded",
                f"the proxy forwards only to {self._base}; {path!r} is not a path there",
            )
        exchange = Exchange(
            method, path, str(target or self._base), dict(forwarded), body, started_at, started
        )
        self._record(exchange, tap)
        elapsed = Stopwatch()
        if left:
            message = "the client disconnected before sending its whole request; not forwarded"
            tap.put(Note(message))
            tap.put(TransportError(message, elapsed()))
            tap.put(TapEnd(elapsed(), 0))
        elif refusal is not None:
            await self._refuse(send, tap, refusal, elapsed)
        else:
            await self._forward(exchange, forwarded, tap, receive, send, elapsed)

    def _record(self, exchange: Exchange, tap: Outlet) -> None:
        """Puts the exchange on the tap, recorded from here on when asked."""
        if self._start_recording is None:
            tap.put(exchange)
            return
        recording, warnings = self._start_recording(tap.request_id, exchange)
        path = None if recording is None else str(recording.path)
        tap.put(dataclasses.replace(exchange, recording=path))
        tap.recording = recording
        for warning in warnings:
            tap.put(Note(warning))

    def _authorized(self, headers: list[tuple[str, str]]) -> bool:
        token = self.config.token
        if token is None:
            return True
        expected = f"Bearer {token}".encode()
        given = [value for name, value in headers if name.lower() == "proxy-authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0].encode(), expected)

    def _target(self, path: str) -> httpx.URL | None:
        """The upstream URL for a request target, or None unless it is a plain path
        (an absolute-form or authority-form target would name another host)."""
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
        self, send: Send, tap: Outlet, refusal: tuple[int, bytes], elapsed: Stopwatch
    ) -> None:
        status, payload = refusal
        message = json.loads(payload)["error"]["message"]
        tap.put(Note(f"refused with {status}: {message}"))
        tap.put(TransportError(message, elapsed()))
        challenge = [(b"proxy-authenticate", PROXY_CHALLENGE)] if status == 407 else []
        await send_json(send, status, payload, challenge)
        tap.put(TapEnd(elapsed(), len(payload)))

    async def _forward(
        self,
        exchange: Exchange,
        headers: list[tuple[str, str]],
        tap: Outlet,
        receive: Receive,
        send: Send,
        elapsed: Stopwatch,
    ) -> None:
        request = httpx.Request(
            exchange.method,
            exchange.url,
            headers=headers,
            content=exchange.body,
            extensions={"timeout": self._timeout},
        )
        try:
            await self.setups.take()  # at once while the slice lasts
            response = await self._answer(request, receive)
            response.request = request
        except TimeoutError:
            await self._no_answer(tap, send, elapsed)
            return
        except ClientLeft:
            message = (
                "the client disconnected before upstream answered; the proxy closed the request"
            )
            tap.put(Note(message))
            tap.put(ClientGone(message, elapsed()))
            tap.put(TapEnd(elapsed(), 0))
            return
        except (httpx.HTTPError, OSError) as exc:
            await self._unreachable(exchange, exc, tap, send, elapsed)
            return
        relay = Relay(response, send, tap, elapsed, self.config.idle_timeout, exchange)
        try:
            await relay.run(receive)
        except asyncio.CancelledError:  # the drain at shutdown is over
            message = (
                f"the proxy shut down while the response streamed (--drain "
                f"{self.config.shutdown_grace:g} s was over): the client got it cut after "
                f"{relay.forwarded} bytes"
            )
            tap.put(Note(message))
            tap.put(TransportError(message, elapsed()))
            raise
        finally:
            await response.aclose()
            tap.put(TapEnd(elapsed(), relay.forwarded))

    async def _answer(self, request: httpx.Request, receive: Receive) -> httpx.Response:
        """Upstream's response head. Raises TimeoutError past --timeout (it bounds the
        wait for the head as well as the connect: an upstream that accepts and never
        answers must not hold the client), ClientLeft when the client goes first (the
        upstream request is closed then, not when its answer comes)."""
        answering = asyncio.ensure_future(self._transport.handle_async_request(request))
        leaving = asyncio.ensure_future(client_gone(receive))
        try:
            done, _ = await asyncio.wait(
                {answering, leaving},
                timeout=self.config.connect_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            leaving.cancel()
            if not answering.done():
                answering.cancel()
                await asyncio.gather(answering, return_exceptions=True)
        if answering in done:
            return answering.result()
        if leaving in done:
            raise ClientLeft
        raise TimeoutError

    async def _no_answer(self, tap: Outlet, send: Send, elapsed: Stopwatch) -> None:
        why = (
            f"upstream sent no response within {self.config.connect_timeout:g} s (--timeout); "
            "the proxy closed the request"
        )
        status, payload = proxy_error(504, "upstream_timeout", f"toolstream-tui proxy: {why}")
        tap.put(TransportError(why, elapsed()))
        tap.put(Note("the client got a 504 from the proxy"))
        await send_json(send, status, payload)
        tap.put(TapEnd(elapsed(), len(payload)))

    async def _unreachable(
        self, exchange: Exchange, exc: Exception, tap: Outlet, send: Send, elapsed: Stopwatch
    ) -> None:
        redactor = Redactor(secrets_in(exchange.url, exchange.headers))
        why = redactor.text(describe_transport_error(exc, upstream_request(exchange, self.config)))
        status, payload = proxy_error(
            502, "upstream_unreachable", f"toolstream-tui proxy: upstream unreachable: {why}"
        )
        tap.put(TransportError(why, elapsed()))
        tap.put(Note("the client got a 502 from the proxy"))
        await send_json(send, status, payload)
        tap.put(TapEnd(elapsed(), len(payload)))


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


async def client_gone(receive: Receive) -> None:
    """Returns when uvicorn says the client is gone (the request body already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class Relay:
    """Streams one upstream response to the client as it arrives (what each read
    brought, at once), while watching for the client to leave; each batch goes
    on the tap after it was sent on."""

    def __init__(
        self,
        response: httpx.Response,
        send: Send,
        tap: Outlet,
        elapsed: Stopwatch,
        idle_timeout: float | None,
        exchange: Exchange,
    ) -> None:
        self.response = response
        self.send = send
        self.tap = tap
        self.elapsed = elapsed
        self.idle_timeout = idle_timeout
        self.exchange = exchange
        self.forwarded = 0
        self.complete = False

    async def run(self, receive: Receive) -> None:
        reads = batches_of(self.response)
        try:
            await self._start()
            # What came with the head goes on now, not a turn of the loop later:
            # while many requests start at once, each turn is long.
            if (batch := reads.take_held()) is not None:
                await self._pass_on(batch)
            await self._copy_until_the_client_leaves(reads, receive)
        finally:
            await reads.stop()

    async def _copy_until_the_client_leaves(self, reads: Batches, receive: Receive) -> None:
        copying = asyncio.ensure_future(self._copy(reads))
        watching = asyncio.ensure_future(self._client_left(receive))
        done, _ = await asyncio.wait({copying, watching}, return_when=asyncio.FIRST_COMPLETED)
        if copying in done:
            watching.cancel()
            copying.result()
            return
        copying.cancel()
        await asyncio.gather(copying, return_exceptions=True)
        message = (
            f"the client disconnected after {self.forwarded} bytes; "
            "the proxy closed the upstream request"
        )
        self.tap.put(Note(message))
        self.tap.put(ClientGone(message, self.elapsed()))

    async def _client_left(self, receive: Receive) -> None:
        """Returns when the client is gone (uvicorn also says so once the response is
        complete, which `_copy` has then already seen)."""
        await client_gone(receive)
        if self.complete:
            await asyncio.Event().wait()  # the response ended normally: wait to be cancelled

    async def _start(self) -> None:
        response = self.response
        head = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in response.headers.raw
        ]
        self.tap.put(
            ResponseHead(
                status=response.status_code,
                content_type=response.headers.get("content-type", ""),
                reason=response.reason_phrase,
                headers=dict(response.headers),
                t=self.elapsed(),
            )
        )
        await self.send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [
                    (name.encode("latin-1"), value.encode("latin-1"))
                    for name, value in end_to_end(head, frozenset())
                ],
            }
        )

    async def _copy(self, reads: Batches) -> None:
        try:
            while (batch := await reads.take()) is not None:
                await self._pass_on(batch)
        except (httpx.HTTPError, OSError) as exc:
            # Returning without completing the response makes uvicorn close the
            # connection: the client sees the same cut the proxy saw.
            idle = isinstance(exc, httpx.ReadTimeout) and self.idle_timeout is not None
            kind = IDLE_TIMEOUT if idle else TRANSPORT
            self.tap.put(TransportError(self._describe(exc), self.elapsed(), kind))
            return
        self.complete = True
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pass_on(self, batch: tuple[bytes, float]) -> None:
        data, arrived = batch
        await self.send({"type": "http.response.body", "body": data, "more_body": True})
        self.forwarded += len(data)
        self.tap.put(BodyChunk(data, self.elapsed.at(arrived)))

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, httpx.ReadTimeout) and self.idle_timeout is not None:
            return (
                f"no data from upstream for {self.idle_timeout:g} s (--idle-timeout); "
                "the proxy cut the stream"
            )
        redactor = Redactor(secrets_in(self.exchange.url, self.exchange.headers))
        return redactor.text(
            describe_transport_error(exc, HttpRequest(url=self.exchange.url, timeout=0))
        )


class Batches(Protocol):
    """A response's body as the relay takes it: all that arrived since the last
    take, in one piece, with the moment (time.monotonic) its first byte came.
    httpx yields one piece per HTTP chunk, and a server that writes each SSE event
    as a chunk puts hundreds in one socket read; forwarding each on its own cost a
    client write, a tap frame and the h11 work of both (the proxy read the stub at
    --speed 0 at a quarter of the direct speed). What one read brought goes on in
    one write, and nothing waits for more: a batch is what had arrived when the
    relay was free."""

    def take_held(self) -> tuple[bytes, float] | None:
        """Takes what has arrived, without waiting; None if nothing has."""

    async def take(self) -> tuple[bytes, float] | None:
        """Waits for a batch; None once the body is over. Raises what ended the
        reading, if it failed, after the bytes that came before it."""

    async def stop(self) -> None:
        """Stop reading ahead (the relay is over), before the response is closed."""


def batches_of(response: httpx.Response) -> Batches:
    """The forwarder's own transport holds what arrives on the connection, taken
    straight from it: a task reading ahead in between cost every chunk one more
    turn of the loop. A body from httpx's transport (through an environment
    proxy) is read ahead by a task."""
    if isinstance(response.stream, UpstreamBody):
        return response.stream
    return UpstreamReads(response)


class UpstreamReads:
    """`Batches` of any httpx response, read by a task of its own."""

    def __init__(
        self, response: httpx.Response, clock: Clock = time.monotonic, limit: int = READ_AHEAD_BYTES
    ) -> None:
        self._clock = clock
        self._limit = limit
        self._pieces: list[bytes] = []
        self._size = 0
        self._first_arrived = 0.0
        self._arrived = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._error: Exception | None = None
        self._over = False
        self._task = asyncio.ensure_future(self._read(response))

    async def _read(self, response: httpx.Response) -> None:
        try:
            async for piece in response.aiter_raw():
                if not self._pieces:
                    self._first_arrived = self._clock()
                self._pieces.append(piece)
                self._size += len(piece)
                self._arrived.set()
                if self._size >= self._limit:  # a slow client: upstream waits, as without us
                    self._room.clear()
                    await self._room.wait()
        except Exception as exc:  # raised by `take`, after the bytes that came before it
            self._error = exc
        finally:
            self._over = True
            self._arrived.set()

    def take_held(self) -> tuple[bytes, float] | None:
        if not self._pieces:
            return None
        data = b"".join(self._pieces)
        self._pieces, self._size = [], 0
        self._room.set()
        return data, self._first_arrived

    async def take(self) -> tuple[bytes, float] | None:
        while not self._pieces:
            if self._over:
                if self._error is not None:
                    raise self._error
                return None
            self._arrived.clear()
            await self._arrived.wait()
        return self.take_held()

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


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


@dataclasses.dataclass(slots=True)
class Gap:
    """A request's body from the read at `t` on, not kept for a lagging watcher."""

    t: float
    dropped: int = 0
    announced: bool = False  # the WatchGap has gone to the watcher


class HeadTimedH11(H11Protocol):
    """uvicorn's HTTP/1.1 connection, closed when a request's head has not come
    whole within `head_timeout` seconds of the connection opening or of the last
    response ending: uvicorn waits forever for a head that arrives in pieces, and
    a thousand clients that send half a request (slowloris) would hold a thousand
    connections, up to the limit past which everyone gets a 503."""

    head_timeout = HEADER_TIMEOUT_S
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_a_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
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


def head_timed(seconds: float) -> type[HeadTimedH11]:
    return type("HeadTimedH11", (HeadTimedH11,), {"head_timeout": seconds})


def release_freed_memory() -> None:
    """Give the pages the allocator keeps free back to the system (glibc's
    malloc_trim; elsewhere nothing). A backlog held for a lagging watcher is freed
    once it caught up, but glibc keeps the pages of the forwarder's thread arena:
    the soak at 256 streams left the forwarder 55 MB bigger each cycle. Run off the
    loop: it walks every arena."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)


class PipeFeed(asyncio.Protocol):
    """Frames to the watching process down a pipe, written by the forwarder's own
    loop: a write never waits (asyncio keeps what the pipe cannot take yet), and
    once the watching process is gone, nothing more is written. The frames put
    within TAP_BATCH_S go in one write (sooner past TAP_BATCH_BYTES): each write
    costs a system call here and a wake-up there, ~90 us on this machine's 2 cores,
    which paid per chunk of 64 streams was most of a core; each item carries the
    time its bytes arrived, so the batching moves no figure the watcher shows.

    While the watcher lags (the pipe full, the transport paused), the frames wait
    here and go in one write once the transport has written all it held: adding
    to a transport's part-written buffer copies all of it (CPython's bytearray
    moves its contents when it grows after a cut at the front), which on a 21 MB
    stream read at full speed was half the forwarder's CPU.

    What it holds for a watcher that does not read (stopped, stuck on a long
    frame) is capped at `cap` bytes of frames: past it, a request's body is no
    longer kept for the watcher, from that read to its end (a core cannot read
    past a hole), and the request's next other item is preceded by a `WatchGap`
    with the bytes dropped. The items that are not body (a request's head, its
    end) are always kept: a few hundred bytes a request."""

    def __init__(self, cap: int = TAP_CAP_BYTES) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self.gone = False
        self.cap = cap
        # One growing buffer, not a list of frames: hundreds of thousands of small
        # frames held for a lagging watcher left the allocator's arenas fragmented
        # (the soak's forwarder grew by a fifth a cycle at 256 streams).
        self._frames = bytearray()
        self._timer: asyncio.TimerHandle | None = None
        self._paused = False
        self._gaps: dict[int, Gap] = {}  # requests whose body the watcher no longer gets
        self._lagged = False  # it held a backlog since the allocator was last trimmed

    async def open(self, fd: int) -> None:
        pipe = open(fd, "wb", buffering=0)  # noqa: SIM115 - the transport closes it
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_write_pipe(lambda: self, pipe)
        # Paused as soon as it holds anything, resumed once it holds nothing.
        self.transport.set_write_buffer_limits(high=1, low=0)

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._frames:
            self._write()
        elif self._lagged:  # the watcher has caught up with a backlog
            self._lagged = False
            # A thread of its own that ends: the executor's would outlive the trim.
            threading.Thread(target=release_freed_memory, daemon=True).start()

    @property
    def held(self) -> int:
        """Bytes of frames not yet in the pipe."""
        transport = self.transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return len(self._frames) + buffered

    def put(self, request_id: int, item: TapItem | Exchange) -> None:
        if self.transport is None or self.gone:
            return
        gap = self._gaps.get(request_id)
        if type(item) is BodyChunk:
            if gap is None and self.held + len(item.data) <= self.cap:
                self._hold(frame(request_id, item))
            else:
                gap = gap or self._gaps.setdefault(request_id, Gap(item.t))
                gap.dropped += len(item.data)
            return
        if type(item) is Exchange and self.held + len(item.body) > self.cap:
            self._hold(frame(request_id, dataclasses.replace(item, body=b"")))
            note = f"the request body ({len(item.body)} bytes) was not kept for the watcher"
            self._hold(frame(request_id, Note(note + ", which had fallen behind")))
            return
        if gap is not None and not gap.announced:
            gap.announced = True
            self._hold(frame(request_id, WatchGap(gap.dropped, gap.t)))
        if type(item) is TapEnd:
            self._gaps.pop(request_id, None)
        self._hold(frame(request_id, item))

    def _hold(self, data: bytes) -> None:
        if not self._frames and not self._paused:
            self._timer = asyncio.get_running_loop().call_later(TAP_BATCH_S, self._write)
        self._frames += data
        if self._paused and len(self._frames) > LAGGED_BYTES:
            self._lagged = True
        if len(self._frames) >= TAP_BATCH_BYTES and not self._paused:
            self._write()

    def _write(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._paused:
            return  # resume_writing writes them
        frames, self._frames = self._frames, bytearray()  # never changed once written
        if self.transport is not None and not self.gone and frames:
            self.transport.write(frames)

    async def flush(self, timeout: float) -> None:
        """Until what is kept has been written (or the reader is gone, or `timeout`)."""
        transport = self.transport
        if transport is None:
            return
        self._write()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.gone and (self._frames or transport.get_write_buffer_size()):
                    await asyncio.sleep(FLUSH_POLL_S)
        transport.close()


class Forwarder:
    """uvicorn serving `ProxyApp` on the given socket, on a thread of its own; the
    main thread waits for a signal, or for the watching process to go away."""

    def __init__(self, config: ProxyConfig, sock: socket.socket, tap_fd: int) -> None:
        self.config = config
        self.sock = sock
        self.tap_fd = tap_fd
        self.feed = PipeFeed(config.tap_cap_bytes)
        self.server = uvicorn.Server(self._uvicorn_config())
        self.app: ProxyApp | None = None
        self.recording_tasks: set[asyncio.Task[None]] = set()

    def _uvicorn_config(self) -> uvicorn.Config:
        config = self.config
        return uvicorn.Config(
            self._dispatch,
            http=head_timed(config.header_timeout),
            interface="asgi3",
            ws="none",
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,  # the client sees upstream's headers, not ours
            date_header=False,
            proxy_headers=False,
            h11_max_incomplete_event_size=config.max_header_bytes,
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
        await self.feed.open(self.tap_fd)
        try:
            transport = transport_for(parse_upstream(config.upstream), config.max_header_bytes)
            async with transport:
                self.app = ProxyApp(config, transport, self.feed.put, self._recordings())
                await self.server.serve(sockets=[self.sock])
        finally:
            # Past the drain, uvicorn cancels the requests still streaming and returns:
            # each says so on the tap before the tap's last flush.
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
        from .requests import ExchangeRecording  # the core's reading, only when recording

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
        threading.Thread(target=lambda: (wait_for_eof(0), watcher_gone.set()), daemon=True).start()
        serving = threading.Thread(target=self._serve_on_uvloop, daemon=True)
        serving.start()
        while serving.is_alive() and not signals and not watcher_gone.is_set():
            time.sleep(STOP_POLL_S)
        if watcher_gone.is_set() and not signals:
            # Killed, or stopped without stopping us: its screen and summary are gone,
            # and a proxy nobody watches is not what was asked for. The requests in
            # flight still end for their clients.
            print(WATCHER_GONE.format(drain=self.config.shutdown_grace), file=sys.stderr)
        self.server.should_exit = True
        # uvicorn gives streaming requests the grace period, then the tap its flush;
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
    parser.add_argument("--tap-fd", type=int, required=True)
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    quiet_uvicorn_logging()
    tune_garbage_collector()
    prepare_descriptor_table()  # before Forwarder.run starts its threads
    config = ProxyConfig(**json.loads(args.config), token=os.environ.pop(TOKEN_ENV, None))
    sock = socket.socket(fileno=args.listen_fd)
    try:
        Forwarder(config, sock, args.tap_fd).run()
    except Exception as exc:  # one line, never a traceback
        print(
            f"toolstream-tui proxy: the forwarder failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
