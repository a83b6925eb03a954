"""What every dialect decoder shares: the entry points a session calls, the
anomaly shortcut, and JSON payload decoding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..diff import first_difference
from ..events import Channel
from ..fields import write_object
from ..sse import SSEEvent
from ..state import CallSlot, StreamState
from ..strict_json import compact, loads


def compact_json(value: Any) -> str:
    """Serialised for the raw view (values decoded by strict_json always fit)."""
    try:
        return compact(value)
    except RecursionError:  # nested past what json (or repr) can walk: the wire event has it
        return f"({type(value).__name__} nested too deep to show)"


def excerpt(text: str, limit: int = 200) -> str:
    """The start of a text quoted in a message, saying how long the whole was."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


MISMATCH_CONTEXT = 30  # characters shown on each side of where two words part


def mismatch_detail(what: str, source: str, against: str, final: str, earlier: str) -> str:
    """How a server's final word (`final`, from `source`) parts from what came
    before it (`earlier`, described by `against`): where, and the text around it."""
    at = first_difference(final, earlier) or 0
    return (
        f"{what}: {source} differs from {against} at char {at}: "
        f"{_around(final, at)!r} against {_around(earlier, at)!r}; {source} is used"
    )


def _around(text: str, at: int) -> str:
    start = max(0, at - MISMATCH_CONTEXT)
    head = "…" if start else ""
    tail = "…" if at + MISMATCH_CONTEXT < len(text) else ""
    return head + text[start : at + MISMATCH_CONTEXT] + tail


MAX_INDEX = 2**63 - 1  # the largest a server's 64-bit integer holds


def index_in_range(index: int) -> bool:
    """Can a wire index (a position in a list of calls or blocks) be a lane number?"""
    return 0 <= index <= MAX_INDEX


class Dialect:
    """Turns one provider's events into calls on `StreamState`.

    Each framing (SSE, NDJSON lines, JSON-array elements, AWS event-stream frames) hands
    its events over as `SSEEvent`s: `event` is the SSE `event:` line or the frame's event
    type, `data` the payload text. A dialect says which streams are its own with the
    `claims_*` class methods (see `detect`)."""

    name = "?"
    anomaly_kinds: frozenset[str] = frozenset()  # kinds only this dialect names
    # False while the events being handled hold no run of 19 digits (the session sets
    # it from the framer for each batch): `payload` then decodes them without looking
    long_digit_runs = True

    @classmethod
    def claims_head(cls, media_type: str, headers: Mapping[str, str]) -> bool:
        """Does the response head alone (lower-cased media type and header names) tell
        that the stream is this dialect's?"""
        return False

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        """Does this early event tell that the stream is this dialect's? `payload` is
        the event's data decoded, when it is a JSON object."""
        return False

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        """Is this complete (non-streaming) JSON body this dialect's?"""
        return False

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        """Is this JSON body one of this dialect's stream events, not a complete
        response (a stream cut after its first event, saved or sent as one body)?"""
        return False

    def __init__(self, state: StreamState) -> None:
        self.state = state
        self.event = 0  # number of the SSE event being handled
        self.t = 0.0

    @property
    def current(self) -> Dialect:
        """The dialect doing the work (a detector hands over once it knows)."""
        return self

    def on_open(self, content_type: str, headers: Mapping[str, str]) -> None:
        """The response head arrived (a detector may tell the dialect from it)."""

    def on_event(self, event: SSEEvent, t: float) -> None:
        self.event, self.t = event.number, t
        self.handle(event)

    def handle(self, event: SSEEvent) -> None:
        raise NotImplementedError

    def takes_as_chunk(self, body: Any) -> bool:
        """Is this body, one JSON value, an event of a stream (see `claims_chunk`)?"""
        return isinstance(body, dict) and self.claims_chunk(body)

    def on_completion(self, body: Any) -> None:
        """A complete, non-streaming response body."""
        raise NotImplementedError

    def on_end(self) -> None:
        """The body ended without a transport or in-band error."""

    def settle(self, hint: Any = None) -> None:
        """The stream is over; a dialect still undecided decides now (from `hint`, a
        JSON body, when there is one), a decided one settles what it deferred."""

    def append_text_fields(
        self, source: dict[str, Any], fields: tuple[tuple[str, Channel], ...], where: str = ""
    ) -> None:
        """Each text field of `source` onto its channel; one that is not text is noted
        (`where`: how the detail names the object, e.g. `content.`)."""
        for field, channel in fields:
            value = source.get(field)
            if isinstance(value, str):
                self.state.append_text(channel, value)
            elif value is not None:
                self.note("unexpected-shape", None, f"{where}{field} is not a string")

    def append_whole_arguments(self, slot: CallSlot, arguments: Any) -> None:
        """Arguments that arrived whole, decoded (an object, or any value), as one
        fragment of compact JSON. An object's fields are found as it is written."""
        try:
            written = write_object(arguments) if type(arguments) is dict else None
        except RecursionError:  # nested too deep to write: compact_json says so
            written = None
        if written is None:
            self.state.append_fragment(slot, compact_json(arguments), self.event, self.t)
        else:
            self.state.append_written(slot, *written, self.event, self.t)
        slot.whole = True

    def note(self, kind: str, index: int | None, detail: str) -> None:
        self.state.note(kind, index, detail, self.event)

    def free_lane(self, index: int) -> int:
        """The lane of a new call sent at wire `index`: the index itself while it is
        in range and free, else the next free lane."""
        if index_in_range(index) and index not in self.state.calls:
            return index
        return self.state.next_free_index()

    def check_index_range(self, index: int, lane: int, field: str) -> None:
        """After starting the call in `lane`: note a wire index that cannot be a lane."""
        if not index_in_range(index):
            shown = excerpt(str(index), 40)
            self.note(
                "index-out-of-range",
                lane,
                f"{field} {shown} is out of range (0 to 2**63-1); call in lane {lane}",
            )

    def payload(self, event: SSEEvent) -> dict[str, Any] | None:
        """The event's data as a JSON object, or None (noted) when it is not one."""
        try:
            value = loads(event.data, self.long_digit_runs)
        except ValueError:
            self.note("data-not-json", None, f"event {event.number}: {excerpt(event.data)!r}")
            return None
        if not isinstance(value, dict):
            self.note("unexpected-shape", None, f"data is not an object: {excerpt(event.data)}")
            return None
        return value

    def typed_payload(self, event: SSEEvent) -> tuple[str, dict[str, Any]] | None:
        """For dialects whose events carry a `type`: the type (from the data, else
        the `event:` line) and the payload; a disagreement between the two is noted."""
        payload = self.payload(event)
        if payload is None:
            return None
        data_type = payload.get("type")
        if event.event and isinstance(data_type, str) and data_type != event.event:
            self.note(
                "event-type-mismatch",
                None,
                f"event: {event.event} carries data of type {data_type!r}",
            )
        kind = data_type if isinstance(data_type, str) else event.event
        if data_type is not None and not isinstance(data_type, str):
            self.note("unexpected-shape", None, f"event {event.number}: type is not a string")
        return kind, payload


def gap_detail(what: str, index: int, highest: int) -> str | None:
    """How a new index skipped numbers after the highest one so far (-1: none yet),
    or None when it did not."""
    if index <= highest + 1:
        return None
    if highest < 0:
        return f"{what} {index} as the first {what}"
    return f"{what} {index} after {what} {highest}"


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_text(value: Any) -> str | None:
    """An id or name as text: strings as they are, numbers spelled out, anything
    else (objects, lists, empty strings) as missing."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
