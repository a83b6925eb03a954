"""What every source yields: the response head, body chunks with their arrival
times, and transport failures. Times are seconds since the source started,
read from an injectable clock so tests and snapshots are deterministic."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol

from ..core.records import FrozenRecord

Clock = Callable[[], float]
monotonic: Clock = time.monotonic


class RequestSent(FrozenRecord):
    """The request as it went out, secrets already redacted (kept in recordings)."""

    __slots__ = ("body", "headers", "method", "url")

    def __init__(self, method: str, url: str, headers: dict[str, str], body: str | None) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body

    def as_dict(self) -> dict[str, Any]:
        """As a recording keeps it."""
        return {
            "method": self.method,
            "url": self.url,
            "headers": dict(self.headers),
            "body": self.body,
        }


class ResponseHead(FrozenRecord):
    __slots__ = ("content_type", "headers", "reason", "redirects", "status", "t", "url")

    def __init__(
        self,
        status: int,
        content_type: str,
        reason: str = "",
        url: str = "",
        headers: dict[str, str] | None = None,
        redirects: tuple[str, ...] = (),
        t: float | None = None,
    ) -> None:
        self.status = status
        self.content_type = content_type
        self.reason = reason
        self.url = url
        self.headers = {} if headers is None else headers
        self.redirects = redirects  # the URLs that answered with a redirect, in order
        self.t = t  # arrival, where the source knows it


class BodyChunk(FrozenRecord):
    __slots__ = ("data", "t")

    def __init__(self, data: bytes, t: float) -> None:
        self.data = data
        self.t = t


TRANSPORT = "transport"  # the connection failed or broke
IDLE_TIMEOUT = "idle-timeout"  # no data for --idle-timeout seconds: we stopped waiting
UNREADABLE = "unreadable"  # a recording cannot be read: the source itself is broken
LIMIT = "limit"  # the watch stopped reading at --max-bytes or --max-event-bytes (in a bundle)
CLIENT_GONE = "client-gone"  # the proxy's client hung up: the rest never came by
WATCH_GAP = "watch-gap"  # the proxy's watcher fell behind and was sent no more of it
STOP_KINDS = frozenset({TRANSPORT, IDLE_TIMEOUT, UNREADABLE, LIMIT, CLIENT_GONE, WATCH_GAP})

# A source that never waits (a replay at speed 0, a local server) gives the event
# loop a turn this often: keys and redraws wait at most this long for the pump, and
# the loop's own cost is paid per turn, not per read (200k reads are 200k turns).
TURN_SECONDS = 0.004


class TransportError(FrozenRecord):
    """The stream stopped before its end: `kind` says why (one of `STOP_KINDS`),
    `message` is one line a user can act on."""

    __slots__ = ("kind", "message", "t")

    def __init__(self, message: str, t: float, kind: str = TRANSPORT) -> None:
        self.message = message
        self.t = t
        self.kind = kind


SourceItem = RequestSent | ResponseHead | BodyChunk | TransportError
# What a source's `items()` gives: an async generator, so that a reader that stops
# early can close it (`contextlib.aclosing`) and the source lets its connection go.
SourceItems = AsyncGenerator[SourceItem, None]


class Source(Protocol):
    label: str

    def items(self) -> SourceItems: ...


class Stopwatch:
    """Seconds since start, from an injectable clock."""

    def __init__(self, clock: Clock = monotonic) -> None:
        self._clock = clock
        self._start = clock()

    def __call__(self) -> float:
        return self._clock() - self._start

    def at(self, reading: float) -> float:
        """Seconds from the start to an earlier reading of the same clock."""
        return reading - self._start
