"""How the proxy's forwarder reaches upstream: an httpx transport whose responses
are parsed by llhttp (httptools, in C) instead of h11.

A server that streams writes each SSE event as an HTTP chunk of its own, and
h11 handles each in Python: ~9 us a chunk through httpx, so the forwarder spent
0.2 s of CPU reading the stub's 6 MB stream, longer than the stub took to write
it, and every client read the stream more slowly through the proxy than
directly. llhttp hands over each chunk for a function call, and everything one
read brought goes on as one piece.

The forwarder keeps httpx's responses, timeouts and errors (the ones the HTTP
source describes) and, where the environment names a proxy for the upstream,
httpx's own transport; its requests are `Outgoing`, with the headers an
httpx.Request would have sent. A request goes upstream as the agent sent it,
written by h11. Every byte that arrived before a connection closed is
handed over before the error that says so."""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import AsyncIterator, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, cast

import h11
import httptools
import httpx

KEEP_ALIVE_S = 5.0  # an idle connection is used again within this long (httpx's default)
READ_AHEAD_BYTES = 256 * 1024  # held unread before upstream is asked to wait
Key = tuple[bytes, bytes, int | None]  # scheme, host, port: what a connection reaches


class HeadTooLarge(Exception):
    pass


class PastTheResponse(Exception):
    """Bytes after the response's end: not an answer to anything we asked."""


class UpstreamConnection(asyncio.Protocol):
    """One connection to upstream, one response at a time: its head, then its body
    as pieces, each piece all that had arrived since the last one was taken."""

    def __init__(self, key: Key, max_header_bytes: int) -> None:
        self.key = key
        self.max_header_bytes = max_header_bytes
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.closed_by_upstream = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._start(b"GET")

    def _start(self, method: bytes) -> None:
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.method = method
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_bytes = 0
        self.received = 0  # bytes of this response so far
        self.head_complete = False
        self.complete = False
        self.keep_alive = False  # set at the message's end
        self.error: httpx.TransportError | None = None
        self.pieces: list[bytes] = []
        self.size = 0
        self.held_since = 0.0  # when the oldest piece held arrived (time.monotonic)
        self.paused = False

    # -- sending --

    def send(self, request: Outgoing) -> None:
        """Writes `request`; the connection then waits for its response."""
        self._start(request.method.encode("ascii"))
        writer = h11.Connection(h11.CLIENT)
        head = h11.Request(method=request.method, target=request.target, headers=request.headers)
        body = request.body
        data = writer.send(head) + (writer.send(h11.Data(data=body)) if body else b"")
        if self.closed or self.transport is None:
            self.error = httpx.RemoteProtocolError(
                "Server disconnected without sending a response."
            )
            self.let_go()
            return
        self.transport.write(data + writer.send(h11.EndOfMessage()))

    # -- asyncio.Protocol --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        if self.complete:  # bytes nobody asked for: the connection is not to be trusted
            self.keep_alive = False
            self.close()
            return
        if self.error is not None:
            return
        self.received += len(data)
        if self.parser is None:  # the connection is over
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("upstream switched protocols"))
        except httptools.HttpParserError as exc:
            if self.complete:  # the response is whole; the connection is not to be trusted
                self.keep_alive = False
                self.close()
            else:
                self._fail(httpx.RemoteProtocolError(self._parse_failure(exc)))
        self._wake()

    def _parse_failure(self, exc: httptools.HttpParserError) -> str:
        if isinstance(exc.__context__, HeadTooLarge):
            return f"upstream's response head is over {self.max_header_bytes} bytes"
        return f"invalid response from upstream: {exc}"

    def eof_received(self) -> bool:
        return False  # the transport closes itself; connection_lost says what it meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed_by_upstream = not self.closed
        self.closed = True
        if not (self.complete or self.error is not None):
            if self.head_complete and exc is None and self._body_ends_at_close():
                self.complete = True
            elif exc is not None:
                error = httpx.ReadError(str(exc) or type(exc).__name__)
                error.__cause__ = exc
                self.error = error
            elif self.head_complete:
                self.error = httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                )
            else:
                self.error = httpx.RemoteProtocolError(
                    "Server disconnected without sending a response."
                )
        self.let_go()
        self._wake()

    def let_go(self) -> None:
        """Drop what refers back to this connection once it is over: the parser
        holds its methods and the transport holds it, and the cycles they made were
        freed only by a full collection, which the forwarder runs rarely (the soak's
        forwarder kept every upstream connection it had closed)."""
        self.transport = None
        self.parser = None

    # -- httptools' callbacks --

    def on_message_begin(self) -> None:
        if self.complete:
            raise PastTheResponse  # stops the parser

    def on_status(self, reason: bytes) -> None:
        self._count_head(reason)
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(name + value)
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        assert self.parser is not None  # it is the one calling
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # informational: the answer comes next
            self.reason, self.headers = b"", []
            return
        self.status, self.head_complete = status, True
        if self.method == b"HEAD":
            self.complete = True  # llhttp would wait for the body its length announces

    def on_body(self, body: bytes) -> None:
        if self.complete:
            return
        if not self.pieces:
            self.held_since = time.monotonic()
        self.pieces.append(body)
        self.size += len(body)
        if self.size > READ_AHEAD_BYTES and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        if self.head_complete:
            assert self.parser is not None  # it is the one calling
            self.complete = True
            # Asked now: once the message is over, llhttp answers for the next one.
            self.keep_alive = self.parser.should_keep_alive()

    # -- reading --

    async def head(self, timeout: float | None) -> None:
        while not self.head_complete:
            if self.error is not None:
                raise self._failure()
            await self._wait(timeout)

    async def take(self, timeout: float | None) -> tuple[bytes, float] | None:
        """What arrived since the last take and when its first byte came; None once
        the body is over."""
        while not self.pieces:
            if self.complete:
                return None
            if self.error is not None:
                raise self._failure()
            if timeout is None:  # the usual wait, without a frame of its own
                self._waiter = asyncio.get_running_loop().create_future()
                await self._waiter
            else:
                await self._wait(timeout)
        return self.take_held()

    def take_held(self) -> tuple[bytes, float] | None:
        """Like `take`, without waiting: None when nothing is held."""
        if not self.pieces:
            return None
        data = b"".join(self.pieces) if len(self.pieces) > 1 else self.pieces[0]
        self.pieces, self.size = [], 0
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data, self.held_since

    def _failure(self) -> httpx.TransportError:
        """The error to raise: a copy of the one kept, which, once raised, would hold
        this connection through the frames of its traceback (a cycle again)."""
        assert self.error is not None
        error = type(self.error)(*self.error.args)
        error.__cause__ = self.error.__cause__
        return error

    @property
    def reusable(self) -> bool:
        # After HEAD, llhttp still waits for the body the head announced.
        head_only = self.method == b"HEAD"
        return self.complete and self.keep_alive and not (self.closed or head_only or self.error)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True

    def _count_head(self, data: bytes) -> None:
        self.head_bytes += len(data) + 4
        if self.head_bytes > self.max_header_bytes:
            raise HeadTooLarge  # stops the parser, which raises what data_received reports

    def _body_ends_at_close(self) -> bool:
        """A body with neither a length nor chunks runs until the connection closes."""
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _fail(self, error: httpx.TransportError) -> None:
        self.error = error
        self.close()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, timeout: float | None) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        if timeout is None:  # without --idle-timeout: a timeout that never fires costs each read
            await self._waiter
            return
        try:
            async with asyncio.timeout(timeout):
                await self._waiter
        except TimeoutError:
            raise httpx.ReadTimeout(f"no data from upstream for {timeout:g} s") from None


class UpstreamBody(httpx.AsyncByteStream):
    """A response's body, read as httpx reads one, or batch by batch with when each
    batch's first byte arrived (the forwarder's way: the connection holds what
    arrives, up to READ_AHEAD_BYTES, so nothing else needs to read ahead)."""

    def __init__(
        self, connection: UpstreamConnection, pool: UpstreamTransport, timeout: float | None
    ) -> None:
        self._connection = connection
        self._pool = pool
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (batch := await self.take()) is not None:
            yield batch[0]

    def take_held(self) -> tuple[bytes, float] | None:
        """What has arrived and not been taken, without waiting; None if nothing."""
        return self._connection.take_held()

    def take(self) -> Coroutine[Any, Any, tuple[bytes, float] | None]:
        """What arrived since the last take (waiting for some), and the time.monotonic
        its first byte came; None once the body is over. (The connection's own
        coroutine: one frame fewer for each read.)"""
        return self._connection.take(self._timeout)

    async def stop(self) -> None:
        """Nothing reads ahead but the connection, which `aclose` releases."""

    async def aclose(self) -> None:
        self._pool.release(self._connection)


DEFAULT_PORTS = {"http": 80, "https": 443}


def environment_proxy(url: httpx.URL, environ: Mapping[str, str] = os.environ) -> str | None:
    """The proxy the environment names for `url` (`https_proxy`, `http_proxy` or
    `all_proxy`, lowercase before uppercase, as curl and urllib read them), unless
    `no_proxy` exempts its host; else None."""
    proxy = setting(environ, f"{url.scheme}_proxy") or setting(environ, "all_proxy")
    port = url.port or DEFAULT_PORTS.get(url.scheme)
    if not proxy or exempt_from_proxy(url.host, port, setting(environ, "no_proxy")):
        return None
    return proxy


def setting(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name) or environ.get(name.upper()) or ""


def exempt_from_proxy(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether `no_proxy` (comma-separated: `*`, hosts, domains with or without a
    leading dot, `host:port`) names `host` or a domain it is in."""
    host = host.lower()
    for entry in no_proxy.split(","):
        name = entry.strip().lower().lstrip(".")
        if name == "*":
            return True
        if name and (host == name or host.endswith("." + name) or f"{host}:{port}" == name):
            return True
    return False


def transport_for(upstream: httpx.URL, max_header_bytes: int) -> httpx.AsyncBaseTransport:
    """This module's transport, or httpx's own where the environment sends requests
    to `upstream` through a proxy: httpx knows how to go through one."""
    proxy = environment_proxy(upstream)
    if proxy is None:
        return UpstreamTransport(max_header_bytes)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    return httpx.AsyncHTTPTransport(proxy=proxy, limits=limits)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A request as it goes upstream: what an httpx.Request gives the connection,
    which the forwarder makes without one (see `outgoing`)."""

    method: str
    url: httpx.URL
    target: bytes  # the request line's: the URL's path and query
    headers: list[tuple[bytes, bytes]]
    body: bytes
    timeouts: dict[str, Any]


def outgoing(
    method: str,
    url: httpx.URL,
    headers: list[tuple[str, str]],
    body: bytes,
    timeouts: dict[str, Any],
) -> Outgoing:
    """The request httpx.Request(method, url, headers=headers, content=body) would
    send: the method in capitals, a Host header from the URL first and, for POST,
    PUT and PATCH without a body, a Content-Length of 0, unless the headers have
    them; a body's Content-Length last. Making the httpx.Request cost the forwarder
    a tenth of its own work on each request (its headers, built and searched
    again, for a transport that only reads them back)."""
    names = {name.lower() for name, _ in headers}
    raw = [(name.encode("ascii"), value.encode("ascii")) for name, value in headers]
    if body and "content-length" not in names:
        raw.append((b"Content-Length", str(len(body)).encode("ascii")))
        names.add("content-length")
    method = method.upper()
    first: list[tuple[bytes, bytes]] = []
    if "host" not in names and url.host:
        first.append((b"Host", url.netloc))
    framed = "content-length" in names or "transfer-encoding" in names
    if not framed and method in ("POST", "PUT", "PATCH"):
        first.append((b"Content-Length", b"0"))
    return Outgoing(method, url, url.raw_path, first + raw, body, timeouts)


class UpstreamTransport(httpx.AsyncBaseTransport):
    """Connections to upstream, used again while they are kept alive."""

    def __init__(self, max_header_bytes: int) -> None:
        self.max_header_bytes = max_header_bytes
        self._idle: dict[Key, list[UpstreamConnection]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        body = await request.aread()
        sending = Outgoing(
            request.method, request.url, request.url.raw_path, request.headers.raw, body, timeouts
        )
        response = await self.send(sending)
        response.request = request
        return response

    async def send(self, request: Outgoing) -> httpx.Response:
        """Upstream's response to `request`, its body still to be read."""
        url = request.url
        key = (url.raw_scheme, url.raw_host, url.port)
        timeouts = request.timeouts
        if (kept := self._idle_connection(key)) is not None:
            try:
                return await self._exchange(kept, request)
            except httpx.TransportError:
                # Upstream may close a kept connection as the request goes out on it:
                # one it closed with nothing back is tried once afresh, as browsers
                # do (never one that timed out: upstream may be working on it).
                if kept.received or not kept.closed_by_upstream:
                    raise
        connection = await self._connect(key, url, timeouts.get("connect"))
        return await self._exchange(connection, request)

    async def _exchange(self, connection: UpstreamConnection, request: Outgoing) -> httpx.Response:
        read_timeout = request.timeouts.get("read")
        try:
            connection.send(request)
            await connection.head(read_timeout)
        except h11.LocalProtocolError as exc:
            connection.close()
            raise httpx.LocalProtocolError(str(exc)) from exc
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            status_code=connection.status,
            headers=connection.headers,
            stream=UpstreamBody(connection, self, read_timeout),
            extensions={"reason_phrase": connection.reason, "http_version": b"HTTP/1.1"},
        )

    def release(self, connection: UpstreamConnection) -> None:
        """A response is over: its connection is kept for the next request, or closed."""
        if not connection.reusable:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.key, []).append(connection)

    def _idle_connection(self, key: Key) -> UpstreamConnection | None:
        idle = self._idle.get(key, [])
        while idle:
            connection = idle.pop()
            fresh = time.monotonic() - connection.idle_since < KEEP_ALIVE_S
            if fresh and not connection.closed:
                return connection
            connection.close()
        return None

    async def _connect(self, key: Key, url: httpx.URL, timeout: float | None) -> UpstreamConnection:
        tls = url.scheme == "https"
        if tls and self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        loop = asyncio.get_running_loop()
        connection = UpstreamConnection(key, self.max_header_bytes)
        port = url.port or (443 if tls else 80)
        try:
            async with asyncio.timeout(timeout):
                await loop.create_connection(
                    lambda: connection,
                    url.host,
                    port,
                    ssl=self._ssl if tls else None,
                    server_hostname=url.host if tls else None,
                )
        except TimeoutError:
            connection.let_go()
            raise httpx.ConnectTimeout(f"connect timeout after {timeout:g} s") from None
        except OSError as exc:
            connection.let_go()
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()
