"""Streams a response over HTTP with httpx; each read is yielded as it arrives."""

from __future__ import annotations

import ssl
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import httpx
from httpx_sse import aconnect_sse

from .base import (
    BodyChunk,
    Clock,
    RequestSent,
    ResponseHead,
    SourceItem,
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
    timeout: float = 60.0


def describe_transport_error(exc: Exception, request: HttpRequest) -> str:
    url = request.url
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connect timeout after {request.timeout:g}s: {url}"
    if isinstance(exc, httpx.ReadTimeout):
        return f"read timeout: no data for {request.timeout:g}s from {url}"
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout after {request.timeout:g}s: {url}"
    if isinstance(exc, httpx.ConnectError):
        causes = list(_causes(exc))
        tls = next((cause for cause in causes if isinstance(cause, ssl.SSLError)), None)
        if tls is not None:
            return f"TLS failure connecting to {url}: {tls}"
        if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
            return f"connection refused: {url}"
        return f"cannot connect to {url}: {exc or type(exc).__name__}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection closed mid-response by {url}: {exc}"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return f"invalid URL {url!r}: {exc}"
    return f"{type(exc).__name__} from {url}: {exc}"


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


class HttpSource:
    def __init__(
        self, request: HttpRequest, clock: Clock = monotonic, dialect: str | None = None
    ) -> None:
        """`dialect`: the one the watch reads the stream as, when it is given (the
        redaction of echoed secrets reads it the same way)."""
        self.request = request
        self.redactor = Redactor(secrets_in(request.url, request.headers), dialect)
        self.label = self.redactor.url(request.url)
        self._clock = clock

    def items(self) -> AsyncIterator[SourceItem]:
        return self.redactor.stream(self._items())

    def sent(self) -> RequestSent:
        request, redactor = self.request, self.redactor
        body = request.body.decode("utf-8", errors="replace") if request.body else None
        return RequestSent(
            method=request.method,
            url=self.label,
            headers=redactor.headers(request.headers),
            body=redactor.text(body) if body is not None else None,
        )

    async def _items(self) -> AsyncIterator[SourceItem]:
        elapsed = Stopwatch(self._clock)
        request = self.request
        yield self.sent()
        timeout = httpx.Timeout(request.timeout)
        headers = dict(request.headers)
        if not any(name.lower() == "accept-encoding" for name in headers):
            headers["Accept-Encoding"] = ACCEPTED  # only what BodyDecoder decodes
        try:
            async with (
                httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client,
                aconnect_sse(
                    client, request.method, request.url, headers=headers, content=request.body
                ) as event_source,
            ):
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
        except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
            yield TransportError(describe_transport_error(exc, request), elapsed())
        except (UnsupportedEncoding, zlib.error) as exc:
            yield TransportError(f"cannot decode the body from {self.label}: {exc}", elapsed())
