"""The typed events the stream core emits, in the order things happened.

A consumer (the headless report, the Textual app) can rebuild everything it
shows from these events plus the `StreamState` they were applied to.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class Channel(StrEnum):
    CONTENT = "content"
    REASONING = "reasoning"
    REFUSAL = "refusal"


class Status(StrEnum):
    STREAMING = "streaming"
    FINISHED = "finished"
    TRUNCATED = "truncated"
    ERROR = "error"


@dataclass(slots=True)
class Anomaly:
    """A deviation from the textbook stream. Repeats of the same kind on the same
    call are counted, not listed again."""

    kind: str
    index: int | None
    detail: str
    event: int | None = None
    count: int = 1
    # The wire event at which each sighting was known (the end counts as the event
    # after the last), and the count after it: so a display can show any moment.
    stamps: array[int] = field(default_factory=lambda: array("q"))
    counts: array[int] = field(default_factory=lambda: array("q"))

    def sighted(self, stamp: int, count: int) -> None:
        if self.stamps and self.stamps[-1] == stamp:
            self.counts[-1] += count
        else:
            self.stamps.append(stamp)
            self.counts.append(self.count if not self.counts else self.counts[-1] + count)

    def count_upto(self, stamp: int) -> int:
        """How many times it had been seen by wire event `stamp` (0: not yet)."""
        seen = bisect_right(self.stamps, stamp)
        return self.counts[seen - 1] if seen else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "index": self.index,
            "detail": self.detail,
            "event": self.event,
            "count": self.count,
        }


@dataclass(slots=True)
class ResponseOpened:
    status: int
    content_type: str
    # A stream's framing ("sse", "ndjson", "json-array", "eventstream"), "json" (a
    # complete response), "sniff" (untyped: told by its first bytes), "error" or "body".
    mode: str


@dataclass(slots=True)
class DialectDetected:
    name: str


class WireEvent(NamedTuple):
    """One SSE event exactly as it arrived, for the raw log. (The events made once
    per SSE event are named tuples: cheapest to make, and of atoms only, so the
    garbage collector stops tracking them while they wait in a display queue.)"""

    number: int
    event: str
    data: str
    id: str | None
    t: float


class WireComment(NamedTuple):
    text: str
    t: float


class TextAppended(NamedTuple):
    channel: Channel
    text: str


@dataclass(slots=True)
class CallStarted:
    index: int
    call_id: str | None
    name: str | None
    t: float
    item_id: str | None = None


@dataclass(slots=True)
class CallIdentified:
    """An id or name arrived after the call's first fragment."""

    index: int
    call_id: str | None
    name: str | None


class FragmentAppended(NamedTuple):
    lane: int
    number: int  # 1-based fragment number within the call
    text: str
    event: int
    t: float


@dataclass(slots=True)
class CallParsed:
    """The call's complete arguments were parsed (or failed to) at the finish."""

    index: int
    arguments: Any
    error: str | None
    error_position: int | None


@dataclass(slots=True)
class AnomalyRecorded:
    anomaly: Anomaly


@dataclass(slots=True)
class FinishSeen:
    """A finish trigger arrived; every call is parsed right after this event."""

    reason: str | None
    trigger: str  # "finish_reason", "[DONE]" or "end of stream"


@dataclass(slots=True)
class StreamEnded:
    status: Status
    finish_reason: str | None
    error: str | None
    trailing: str = field(default="")


StreamEvent = (
    ResponseOpened
    | DialectDetected
    | WireEvent
    | WireComment
    | TextAppended
    | CallStarted
    | CallIdentified
    | FragmentAppended
    | CallParsed
    | AnomalyRecorded
    | FinishSeen
    | StreamEnded
)
