"""The proxy's forwarding side: a small ASGI app served by uvicorn on a thread of
its own, forwarding each request to the one upstream with httpx and streaming the
answer back read by read, bytes untouched.

Every read is also put on the request's `Tap`, which hands it to a consumer on
another event loop (see `proxy_log.ProxyLog`) without ever waiting: whatever the
consumer does (falls behind, blocks, fails), the client's stream is the same."""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import json
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from .base import BodyChunk, ResponseHead, SourceItem, Stopwatch, TransportError
from .http import HttpRequest, describe_transport_error
from .secrets import Redactor, secrets_in

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
MAX_REQUEST_BYTES = 64 << 20  # a request with a few images inlined as base64 fits
MAX_HEADER_BYTES = 64 << 10  # the request line and headers together
MAX_CONNECTIONS = 1000  # past this, new connections get uvicorn's 503
SHUTDOWN_GRACE_S = 5  # requests still streaming at shutdown get this long to end
CONNECT_TIMEOUT_S = 60.0
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

RawHeaders = list[tuple[bytes, bytes]]
Send = Callable[[dict[str, Any]], Any]
Receive = Callable[[], Any]


class UpstreamError(ValueError):
    """The --upstream URL cannot be used."""


def parse_upstream(text: str) -> httpx.URL:
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UpstreamError(f"--upstream {text!r} is not a URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise UpstreamError(f"--upstream {text!r} must be an http:// or https:// URL with a host")
    if url.query or url.fragment:
        raise UpstreamError(f"--upstream {text!r} must not carry a query or a fragment")
    return url


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstream: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_header_bytes: int = MAX_HEADER_BYTES
    connect_timeout: float = CONNECT_TIMEOUT_S
    idle_timeout: float | None = None  # cut an upstream silent this long (None: never)
    shutdown_grace: int = SHUTDOWN_GRACE_S


# -- what the forwarder hands the consumer -------------------------------------------


@dataclass(frozen=True, slots=True)
class Exchange:
    """A request as the proxy received and forwarded it. The headers still hold the
    client's secrets: the consumer redacts before keeping or showing anything."""

    method: str
    path: str  # as the client asked for it, query included
    url: str  # where it was forwarded
    headers: dict[str, str]
    body: bytes
    started_at: float  # wall clock, for display
    started: float  # time.monotonic(), for a live duration


@dataclass(frozen=True, slots=True)
class Note:
    """Something about the request that is not in the response (a client that left,
    a refusal): shown on its row."""

    text: str


@dataclass(frozen=True, slots=True)
class TapEnd:
    """The forwarder is done with the request: `t` seconds after forwarding began,
    `forwarded` body bytes sent to the client."""

    t: float
    forwarded: int


TapItem = SourceItem | Note | TapEnd


class Tap:
    """One request's copy of what the forwarder saw. `put` only appends to a deque:
    no lock, no system call, no wake-up of another thread, so it costs the
    forwarder next to nothing and can neither wait nor fail. The consumer looks
    for pending items on a timer of its own (see `ProxyLog`); one that is gone or
    has abandoned the tap only means nobody is watching."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.pending: deque[TapItem] = deque()
        self.abandoned = False  # set by the consumer when it stops reading
        self._ended = False

    def put(self, item: TapItem) -> None:
        if self.abandoned or self._ended:
            return
        self._ended = isinstance(item, TapEnd)
        self.pending.append(item)

    async def items(self, ready: asyncio.Event) -> AsyncIterator[TapItem]:
        """What the forwarder put, in order, up to and including the `TapEnd`;
        waits on `ready`, which the consumer sets when it sees items pending."""
        while True:
            while self.pending:
                item = self.pending.popleft()
                yield item
                if isinstance(item, TapEnd):
                    return
            ready.clear()
            if not self.pending:
                await ready.wait()


TapSink = Callable[[Tap], None]


# -- the ASGI app ------------------------------------------------------------------


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
        if name == "connection"
        for token in value.split(",")
    )


def end_to_end(
    headers: list[tuple[str, str]], also_dropped: frozenset[str]
) -> list[tuple[str, str]]:
    dropped = HOP_BY_HOP | also_dropped | connection_tokens(headers)
    return [(name, value) for name, value in headers if name not in dropped]


class ProxyApp:
    """The ASGI app: every HTTP request goes to `upstream` + its path, nowhere else."""

    def __init__(
        self,
        config: ProxyConfig,
        client: httpx.AsyncClient,
        loop: asyncio.AbstractEventLoop,
        sink: TapSink,
    ) -> None:
        self.config = config
        self.upstream = parse_upstream(config.upstream)
        self._base = str(self.upstream).rstrip("/")
        self._client = client
        self._loop = loop
        self._sink = sink

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        tap: Tap | None = None
        try:
            tap = await self._handle(scope, receive, send)
        except Exception as exc:  # a bug of ours must not reach the client as a traceback
            if tap is not None:
                tap.put(TransportError(f"proxy failure: {type(exc).__name__}: {exc}", 0.0))
            logging.getLogger("uvicorn.error").warning(
                "proxy failure on a request: %s: %s", type(exc).__name__, exc
            )

    async def _handle(self, scope: dict[str, Any], receive: Receive, send: Send) -> Tap:
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
        if head_bytes > self.config.max_header_bytes:
            refusal = proxy_error(
                431,
                "headers_too_large",
                f"the request line and headers are over the proxy's limit of "
                f"{self.config.max_header_bytes} bytes; not forwarded",
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
        tap = self._open_tap(exchange)
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
        return tap

    def _open_tap(self, exchange: Exchange) -> Tap:
        tap = Tap(exchange)
        try:
            self._loop.call_soon_threadsafe(self._sink, tap)
        except RuntimeError:  # the consumer's loop is closed: nobody is watching
            tap.abandoned = True
        return tap

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
        self, send: Send, tap: Tap, refusal: tuple[int, bytes], elapsed: Stopwatch
    ) -> None:
        status, payload = refusal
        message = json.loads(payload)["error"]["message"]
        tap.put(Note(f"refused with {status}: {message}"))
        tap.put(TransportError(message, elapsed()))
        await send_json(send, status, payload)
        tap.put(TapEnd(elapsed(), len(payload)))

    async def _forward(
        self,
        exchange: Exchange,
        headers: list[tuple[str, str]],
        tap: Tap,
        receive: Receive,
        send: Send,
        elapsed: Stopwatch,
    ) -> None:
        request = httpx.Request(
            exchange.method, exchange.url, headers=headers, content=exchange.body
        )
        try:
            response = await self._client.send(request, stream=True)
        except (httpx.HTTPError, OSError) as exc:
            await self._unreachable(exchange, exc, tap, send, elapsed)
            return
        relay = Relay(response, send, tap, elapsed, self.config.idle_timeout, exchange)
        try:
            await relay.run(receive)
        finally:
            await response.aclose()
            tap.put(TapEnd(elapsed(), relay.forwarded))

    async def _unreachable(
        self, exchange: Exchange, exc: Exception, tap: Tap, send: Send, elapsed: Stopwatch
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


async def send_json(send: Send, status: int, payload: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


class Relay:
    """Streams one upstream response to the client, read by read, while watching for
    the client to leave; each read goes on the tap after it was sent on."""

    def __init__(
        self,
        response: httpx.Response,
        send: Send,
        tap: Tap,
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
        copying = asyncio.ensure_future(self._copy())
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
        self.tap.put(TransportError(message, self.elapsed()))

    async def _client_left(self, receive: Receive) -> None:
        """Returns when the client is gone (uvicorn also says so once the response is
        complete, which `_copy` has then already seen)."""
        while (await receive())["type"] != "http.disconnect":
            pass
        if self.complete:
            await asyncio.Event().wait()  # the response ended normally: wait to be cancelled

    async def _copy(self) -> None:
        response = self.response
        head = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in response.headers.raw
        ]
        head = [(name.lower(), value) for name, value in head]
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
        try:
            async for chunk in response.aiter_raw():
                t = self.elapsed()
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
                self.forwarded += len(chunk)
                self.tap.put(BodyChunk(chunk, t))
                # Reads already buffered come without a pause: yield once, so a client
                # that left is noticed before the next write rather than after many.
                await asyncio.sleep(0)
        except (httpx.HTTPError, OSError) as exc:
            # Returning without completing the response makes uvicorn close the
            # connection: the client sees the same cut the proxy saw.
            self.tap.put(TransportError(self._describe(exc), self.elapsed()))
            return
        self.complete = True
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

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


# -- the server --------------------------------------------------------------------


class _Quiet(logging.Filter):
    """Drops the line uvicorn writes when the proxy cuts a client on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != DELIBERATE_CUT


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


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (raises OSError: address in use, no such address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


class ProxyServer:
    """Serves `ProxyApp` with uvicorn on a thread of its own. Each request's tap is
    handed to `sink`, called on `loop` (the consumer's event loop)."""

    _ids = itertools.count(1)

    def __init__(self, config: ProxyConfig, sink: TapSink, loop: asyncio.AbstractEventLoop) -> None:
        parse_upstream(config.upstream)
        self.config = config
        self._sink = sink
        self._loop = loop
        self._sock: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._app: ProxyApp | None = None
        self.failure: str | None = None

    @property
    def port(self) -> int:
        if self._sock is None:
            raise RuntimeError("ProxyServer is not started")
        return self._sock.getsockname()[1]

    @property
    def url(self) -> str:
        return http_url(self.config.host, self.port)

    def start(self) -> ProxyServer:
        """Bind (raises OSError), then serve in the background: connections made from
        here on are queued by the kernel until uvicorn accepts them."""
        quiet_uvicorn_logging()
        self._sock = bind(self.config.host, self.config.port)
        self._server = uvicorn.Server(self._uvicorn_config())
        self._thread = threading.Thread(
            target=self._run, name=f"toolstream-proxy-{next(self._ids)}", daemon=True
        )
        self._thread.start()
        return self

    def _uvicorn_config(self) -> uvicorn.Config:
        config = self.config
        return uvicorn.Config(
            self._dispatch,
            http="h11",
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
            timeout_graceful_shutdown=config.shutdown_grace,
        )

    async def _dispatch(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """The ASGI entry point; the app itself is made on the server's loop, with
        the httpx client it uses."""
        assert self._app is not None
        await self._app(scope, receive, send)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported by the caller, never as a traceback
            self.failure = f"{type(exc).__name__}: {exc}"

    async def _serve(self) -> None:
        config = self.config
        timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.idle_timeout,
            write=config.connect_timeout,
            pool=None,
        )
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
            self._app = ProxyApp(config, client, self._loop, self._sink)
            assert self._server is not None and self._sock is not None
            await self._server.serve(sockets=[self._sock])

    def stop(self, force: bool = False) -> None:
        """Ask the server to stop: it stops accepting, then waits up to the grace
        period for streaming requests (at once with `force`)."""
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = self._server.force_exit or force

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the server thread; True when it has ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()
