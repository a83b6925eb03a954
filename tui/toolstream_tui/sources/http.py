"""Streams a response over HTTP with httpx; each read is yielded as it arrives."""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
from httpx_sse import aconnect_sse

from ..process import plain_reason
from .base import (
    BodyChunk,
    Clock,
    RequestSent,
    ResponseHead,
    SourceItems,
    Stopwatch,
    TransportError,
    monotonic,
)
from .decoding import ACCEPTED, BodyDecoder, UnsupportedEncoding
from .secrets import Redactor, safe_headers, secrets_in


@dataclass(frozen=True, slots=True)
class HttpRequest:
    url: str
    method: str = "GET"
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    timeout: float = 60.0  # the connection, the response head, and each read of the body
    # Given (--idle-timeout), it bounds the body's silences instead of `timeout`
    # (items are ended at it by `pump.idle_limited`; here reads are just not cut
    # sooner): a wait longer than --timeout would otherwise never be reached.
    idle_timeout: float | None = None


HTTP_SCHEMES = ("http", "https")


def url_problem(url: str) -> str | None:
    """Why `url` cannot be requested, in plain words; None when it can. Checked before
    anything else reads the URL, so no URL parser's exception reaches a user."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises when the port is out of range
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        return plain_reason(exc)
    if parts.scheme.lower() not in HTTP_SCHEMES:
        return "it must begin with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    return None


def describe_transport_error(exc: Exception, request: HttpRequest) -> str:
    url = request.url
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connect timeout after {request.timeout:g}s: {url}"
    if isinstance(exc, httpx.ReadTimeout):
        return f"read timeout: no data for {request.timeout:g}s from {url}"
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout after {request.timeout:g}s: {url}"
    if isinstance(exc, TimeoutError):  # `head_within`
        return f"no response within {request.timeout:g}s from {url}"
    if isinstance(exc, httpx.ConnectError):
        causes = list(_causes(exc))
        tls = next((cause for cause in causes if isinstance(cause, ssl.SSLError)), None)
        if tls is not None:
            return f"TLS failure connecting to {url}: {tls}"
        if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
            return f"connection refused: {url}"
        # The socket layer's words ("name or service not known"), not the wrapper's.
        reason = next((c for c in causes if isinstance(c, OSError) and c.strerror), exc)
        return f"cannot connect to {url}: {plain_reason(reason)}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection closed mid-response by {url}: {exc}"
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        doing = "reading the response from" if isinstance(exc, httpx.ReadError) else "sending to"
        return f"connection lost while {doing} {url}: {_socket_reason(exc)}"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return f"invalid URL {url!r}: {plain_reason(exc)}"
    cause: BaseException = exc
    while isinstance(cause, BaseExceptionGroup):  # from the socket layer: say what is inside
        cause = cause.exceptions[0]
    return f"cannot request {url}: {plain_reason(cause)}"


def _socket_reason(exc: Exception) -> str:
    """The socket layer's words ("connection reset by peer"), else the exception's
    own; never its class name alone (httpx's ReadError often says nothing)."""
    reason = next((c for c in _causes(exc) if isinstance(c, OSError) and c.strerror), None)
    if reason is not None:
        return plain_reason(reason)
    return " ".join(str(exc).split()) or "the connection broke"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes and contexts, and members of exception groups."""
    pending, visited = [exc], set()
    while pending:
        current = pending.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(link for link in (current.__cause__, current.__context__) if link)


def redacted_request(request: HttpRequest, redactor: Redactor) -> RequestSent:
    """The request as recordings and reports keep it: every secret replaced."""
    body = request.body.decode("utf-8", errors="replace") if request.body else None
    return RequestSent(
        method=request.method,
        url=redactor.url(request.url),
        headers=redactor.headers(request.headers),
        body=redactor.text(body) if body is not None else None,
    )


def trusting_no_certificate() -> ssl.SSLContext:
    """TLS that verifies as usual but trusts no certificate authority: for a plain
    HTTP server of our own, where loading the system's certificates (a twentieth
    of a second) would be wasted. A redirect to HTTPS then fails to verify."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class HttpSource:
    def __init__(
        self,
        request: HttpRequest,
        clock: Clock = monotonic,
        dialect: str | None = None,
        *,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        """`dialect`: the one the watch reads the stream as, when it is given (the
        redaction of echoed secrets reads it the same way). `verify`: how TLS
        certificates are checked (httpx's `verify`)."""
        self.request = request
        self.verify = verify
        self.redactor = Redactor(secrets_in(request.url, request.headers), dialect)
        self.label = self.redactor.url(request.url)
        self._clock = clock

    def items(self) -> SourceItems:
        return self.redactor.stream(self._items())

    def sent(self) -> RequestSent:
        return redacted_request(self.request, self.redactor)

    async def _items(self) -> SourceItems:
        elapsed = Stopwatch(self._clock)
        request = self.request
        yield self.sent()
        problem = url_problem(request.url)
        if problem:
            yield TransportError(f"invalid URL {request.url!r}: {problem}", elapsed())
            return
        idle = request.idle_timeout is not None
        timeout = httpx.Timeout(request.timeout, read=None if idle else request.timeout)
        headers = dict(request.headers)
        if not any(name.lower() == "accept-encoding" for name in headers):
            headers["Accept-Encoding"] = ACCEPTED  # only what BodyDecoder decodes
        try:
            async with (
                httpx.AsyncClient(
                    timeout=timeout, follow_redirects=True, verify=self.verify
                ) as client,
                # With reads left unbounded, the head still comes within --timeout.
                asyncio.timeout(request.timeout if idle else None) as head_within,
                aconnect_sse(
                    client, request.method, request.url, headers=headers, content=request.body
                ) as event_source,
            ):
                head_within.reschedule(None)
                response = event_source.response
                yield ResponseHead(
                    status=response.status_code,
                    content_type=response.headers.get("content-type", ""),
                    reason=response.reason_phrase,
                    url=self.redactor.url(str(response.url)),
                    headers=self.redactor.headers(safe_headers(response.headers)),
                    redirects=tuple(self.redactor.url(str(hop.url)) for hop in response.history),
                    t=elapsed(),
                )
                decoder = BodyDecoder(response.headers.get("content-encoding", ""))
                async for raw in response.aiter_raw():
                    for piece in decoder.decode(raw):
                        yield BodyChunk(piece, elapsed())
                for piece in decoder.flush():
                    yield BodyChunk(piece, elapsed())
        except (UnsupportedEncoding, zlib.error) as exc:
            yield TransportError(f"cannot decode the body from {self.label}: {exc}", elapsed())
        except Exception as exc:  # whatever the transport raises ends the stream in one line
            yield TransportError(describe_transport_error(exc, request), elapsed())
