"""The typed events the stream core emits, in the order things happened.

A consumer (the headless report, the Textual app) can rebuild everything it
shows from these events plus the `StreamState` they were applied to.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from enum import StrEnum
from typing import Any, NamedTuple

from .records import Record


class Channel(StrEnum):
    CONTENT = "content"
    REASONING = "reasoning"
    REFUSAL = "refusal"


class Status(StrEnum):
    STREAMING = "streaming"
    FINISHED = "finished"
    TRUNCATED = "truncated"
    ERROR = "error"


class Anomaly(Record):
    """A deviation from the textbook stream. Repeats of the same kind on the same
    call are counted, not listed again."""

    __slots__ = ("count", "counts", "detail", "event", "index", "kind", "stamps")
    compared = ("kind", "index", "detail", "event", "count", "stamps", "counts")

    def __init__(
        self, kind: str, index: int | None, detail: str, event: int | None = None, count: int = 1
    ) -> None:
        self.kind = kind
        self.index = index
        self.detail = detail
        self.event = event
        self.count = count
        # The wire event at which each sighting was known (the end counts as the event
        # after the last), and the count after it: so a display can show any moment.
        self.stamps: array[int] = array("q")
        self.counts: array[int] = array("q")

    def as_counted_at(self, stamp: int) -> Anomaly:
        """This anomaly as it stood at wire event `stamp`: its count then (its
        sightings are the same arrays, not copies)."""
        copy = Anomaly(self.kind, self.index, self.detail, self.event, self.count_upto(stamp))
        copy.stamps, copy.counts = self.stamps, self.counts
        return copy

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


class ResponseOpened(Record):
    __slots__ = ("content_type", "mode", "status")

    def __init__(self, status: int, content_type: str, mode: str) -> None:
        self.status = status
        self.content_type = content_type
        # A stream's framing ("sse", "ndjson", "json-array", "eventstream"), "json" (a
        # complete response), "sniff" (untyped: told by its first bytes), "error" or "body".
        self.mode = mode


class DialectDetected(Record):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


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


class CallStarted(Record):
    __slots__ = ("call_id", "index", "item_id", "name", "t")

    def __init__(
        self,
        index: int,
        call_id: str | None,
        name: str | None,
        t: float,
        item_id: str | None = None,
    ) -> None:
        self.index = index
        self.call_id = call_id
        self.name = name
        self.t = t
        self.item_id = item_id


class CallIdentified(Record):
    """An id or name arrived after the call's first fragment."""

    __slots__ = ("call_id", "index", "name")

    def __init__(self, index: int, call_id: str | None, name: str | None) -> None:
        self.index = index
        self.call_id = call_id
        self.name = name


class FragmentAppended(NamedTuple):
    lane: int
    number: int  # 1-based fragment number within the call
    text: str
    event: int
    t: float


class CallParsed(Record):
    """The call's complete arguments were parsed (or failed to) at the finish."""

    __slots__ = ("arguments", "error", "error_position", "index")

    def __init__(
        self, index: int, arguments: Any, error: str | None, error_position: int | None
    ) -> None:
        self.index = index
        self.arguments = arguments
        self.error = error
        self.error_position = error_position


class AnomalyRecorded(Record):
    __slots__ = ("anomaly",)

    def __init__(self, anomaly: Anomaly) -> None:
        self.anomaly = anomaly


class FinishSeen(Record):
    """A finish trigger arrived; every call is parsed right after this event."""

    __slots__ = ("reason", "trigger")

    def __init__(self, reason: str | None, trigger: str) -> None:
        self.reason = reason
        self.trigger = trigger  # "finish_reason", "[DONE]" or "end of stream"


class StreamEnded(Record):
    __slots__ = ("error", "finish_reason", "status", "trailing")

    def __init__(
        self, status: Status, finish_reason: str | None, error: str | None, trailing: str = ""
    ) -> None:
        self.status = status
        self.finish_reason = finish_reason
        self.error = error
        self.trailing = trailing


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
