"""What every source yields: the response head, body chunks with their arrival
times, and transport failures. Times are seconds since the source started,
read from an injectable clock so tests and snapshots are deterministic."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

Clock = Callable[[], float]
monotonic: Clock = time.monotonic


@dataclass(frozen=True, slots=True)
class RequestSent:
    """The request as it went out, secrets already redacted (kept in recordings)."""

    method: str
    url: str
    headers: dict[str, str]
    body: str | None


@dataclass(frozen=True, slots=True)
class ResponseHead:
    status: int
    content_type: str
    reason: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    redirects: tuple[str, ...] = ()  # the URLs that answered with a redirect, in order
    t: float | None = None  # arrival, where the source knows it


@dataclass(frozen=True, slots=True)
class BodyChunk:
    data: bytes
    t: float


TRANSPORT = "transport"  # the connection failed or broke
IDLE_TIMEOUT = "idle-timeout"  # no data for --idle-timeout seconds: we stopped waiting
UNREADABLE = "unreadable"  # a recording cannot be read: the source itself is broken
STOP_KINDS = frozenset({TRANSPORT, IDLE_TIMEOUT, UNREADABLE})

# A source that never waits (a replay at speed 0, a local server) gives the event
# loop a turn this often: keys and redraws wait at most this long for the pump, and
# the loop's own cost is paid per turn, not per read (200k reads are 200k turns).
TURN_SECONDS = 0.004


@dataclass(frozen=True, slots=True)
class TransportError:
    """The stream stopped before its end: `kind` says why (one of `STOP_KINDS`),
    `message` is one line a user can act on."""

    message: str
    t: float
    kind: str = TRANSPORT


SourceItem = RequestSent | ResponseHead | BodyChunk | TransportError


def plain_reason(exc: BaseException) -> str:
    """Why something failed, as plain words on one line for the end of a message:
    "no such file or directory", not "[Errno 2] No such file or directory: 'x'"."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    text = " ".join(text.split()) or type(exc).__name__
    return text[:1].lower() + text[1:]


class Source(Protocol):
    label: str

    def items(self) -> AsyncIterator[SourceItem]: ...


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
