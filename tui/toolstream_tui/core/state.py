"""The per-index accumulator: one slot per tool call, text channels, anomalies,
and the stream's end state. Dialect decoders drive it through its methods; each
method records the `StreamEvent`s it caused in `outbox` for the consumer.

Arguments are appended fragment by fragment (never assigned) and parsed once,
strictly, when the finish arrives.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from .events import (
    Anomaly,
    AnomalyRecorded,
    CallIdentified,
    CallParsed,
    CallStarted,
    Channel,
    DialectDetected,
    FinishSeen,
    FragmentAppended,
    Status,
    StreamEnded,
    StreamEvent,
    TextAppended,
)
from .schema import DeclaredTools, SchemaError
from .strict_json import loads

STALL_SECONDS = 1.0  # by default, a silence longer than this is a stall
TRUNCATED_CALL_ERROR = "stream ended before the finish; arguments are incomplete"
_FIRST_VALUE = json.JSONDecoder()
INTERRUPTED_CALL_ERROR = "stream failed before the finish; arguments are incomplete"


@dataclass(slots=True)
class CallSlot:
    index: int
    call_id: str | None
    name: str | None
    started_at: float
    item_id: str | None = None  # OpenAI Responses: the fc_… output item id
    named_at: float | None = None  # when the function name first arrived
    fragments: list[str] = field(default_factory=list)
    fragment_events: list[int] = field(default_factory=list)
    fragment_times: list[float] = field(default_factory=list)
    length: int = 0
    parsed: bool = False
    arguments: Any = None
    error: str | None = None
    error_position: int | None = None
    schema_errors: list[SchemaError] = field(default_factory=list)
    _raw: str | None = None

    @property
    def arguments_raw(self) -> str:
        if self._raw is None or len(self._raw) != self.length:
            self._raw = "".join(self.fragments)
        return self._raw

    def holds_complete_json(self) -> bool:
        try:
            loads(self.arguments_raw)
        except ValueError:
            return False
        return True

    def merged_json_fragment(self) -> tuple[int, int] | None:
        """If the buffer holds a complete JSON value followed by more text (the `}{`
        of two calls merged into one slot): where the value ends, and the number of
        the first fragment that carried text past it."""
        raw = self.arguments_raw
        start = len(raw) - len(raw.lstrip())
        try:
            _, end = _FIRST_VALUE.raw_decode(raw, start)
        except (ValueError, RecursionError):
            return None
        if not raw[end:].strip():
            return None
        extra = end + len(raw[end:]) - len(raw[end:].lstrip())
        return end, bisect_right(list(accumulate(map(len, self.fragments))), extra) + 1

    def parse(self) -> None:
        raw = self.arguments_raw
        self.parsed = True
        self.error = self.error_position = None
        self.schema_errors = []
        if raw.strip() == "":
            self.arguments = {}
            return
        try:
            self.arguments = loads(raw)
        except ValueError as exc:
            self.arguments = None
            self.error = f"invalid JSON arguments: {exc}"
            self.error_position = getattr(exc, "pos", None)


@dataclass(slots=True)
class StreamState:
    source: str
    dialect: str
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, CallSlot] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    status: Status = Status.STREAMING
    finish_reason: str | None = None
    finish_trigger: str | None = None
    error: str | None = None
    http_status: int | None = None
    body: str | None = None
    body_chars: int | None = None  # the whole body's length (`body` may keep only its start)
    trailing: str = ""
    trailing_chars: int = 0  # the unterminated event's length (`trailing` may keep its start)
    events: int = 0
    bytes_received: int = 0
    last_data_at: float = 0.0  # arrival time of the latest read
    response_at: float | None = None  # when the response head arrived
    read_times: list[float] = field(default_factory=list)  # arrival of every read
    first_text_at: float | None = None  # content text, not reasoning or refusal
    last_text_at: float | None = None
    text_deltas: int = 0
    finish_at: float | None = None
    outbox: list[StreamEvent] = field(default_factory=list)
    live: bool = True  # emit per-event detail (wire and text events); headless needs none
    fragment_events: bool = True
    tools: DeclaredTools | None = None  # what the request declared, when it is known
    stall_threshold: float = STALL_SECONDS
    _anomaly_keys: dict[tuple[str, int | None], Anomaly] = field(default_factory=dict)

    # -- text ---------------------------------------------------------------
    def append_text(self, channel: Channel, text: str) -> None:
        if not text:
            return
        self.channel_parts(channel).append(text)
        if channel is Channel.CONTENT:
            if self.first_text_at is None:
                self.first_text_at = self.last_data_at
            self.last_text_at = self.last_data_at
            self.text_deltas += 1
        if self.live:
            self.outbox.append(TextAppended(channel, text))

    def channel_parts(self, channel: Channel) -> list[str]:
        return {
            Channel.CONTENT: self.text,
            Channel.REASONING: self.reasoning,
            Channel.REFUSAL: self.refusal,
        }[channel]

    # -- calls --------------------------------------------------------------
    def next_free_index(self) -> int:
        index = 0
        while index in self.calls:
            index += 1
        return index

    def start_call(
        self,
        index: int,
        call_id: str | None,
        name: str | None,
        t: float,
        item_id: str | None = None,
    ) -> CallSlot:
        slot = CallSlot(index=index, call_id=call_id, name=name, started_at=t, item_id=item_id)
        slot.named_at = t if name else None
        self.calls[index] = slot
        self.outbox.append(CallStarted(index, call_id, name, t, item_id))
        if self.finish_trigger is not None:
            self.note(
                "call-after-finish", index, f"call {index} started after the finish", self.events
            )
        return slot

    def identify(self, slot: CallSlot, call_id: str | None, name: str | None) -> None:
        """Set an id or name that the call's first fragment lacked."""
        if call_id:
            slot.call_id = call_id
        if name:
            slot.name = name
            if slot.named_at is None:
                slot.named_at = self.last_data_at
        self.outbox.append(CallIdentified(slot.index, slot.call_id, slot.name))

    def append_fragment(self, slot: CallSlot, text: str, event: int, t: float) -> None:
        if not text:
            return
        slot.fragments.append(text)  # CallSlot.append, inlined: this runs per fragment
        slot.fragment_events.append(event)
        slot.fragment_times.append(t)
        slot.length += len(text)
        if self.fragment_events:
            self.outbox.append(FragmentAppended(slot.index, len(slot.fragments), text, event, t))
        if slot.parsed:
            slot.parsed = False
            self.note(
                "fragment-after-finish",
                slot.index,
                f"fragment {len(slot.fragments)} arrived after the finish; parsed again at the end",
                event,
            )

    # -- anomalies ----------------------------------------------------------
    def note(
        self, kind: str, index: int | None, detail: str, event: int | None, count: int = 1
    ) -> None:
        known = self._anomaly_keys.get((kind, index))
        if known is not None:
            known.count += count
            return
        anomaly = Anomaly(kind, index, detail, event, count)
        self._anomaly_keys[(kind, index)] = anomaly
        self.anomalies.append(anomaly)
        self.outbox.append(AnomalyRecorded(anomaly))

    # -- finish and end -----------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.finish_trigger is not None

    def finish(self, reason: str | None, trigger: str) -> None:
        """A finish trigger arrived: parse every call's buffer, once."""
        if self.finished:
            if reason is not None and self.finish_reason is None:
                self.finish_reason = reason
            return
        self.finish_reason = reason if reason is not None else self.finish_reason
        self.finish_trigger = trigger
        self.finish_at = self.last_data_at
        self.outbox.append(FinishSeen(reason, trigger))
        self._parse_pending_calls()

    def set_finish_reason(self, reason: str | None) -> None:
        """Record why the model stopped, ahead of the finish trigger (Anthropic sends
        the stop_reason in message_delta, the finish in message_stop)."""
        if reason is not None:
            self.finish_reason = reason

    def declare_tools(self, tools: DeclaredTools | None) -> None:
        self.tools = tools
        for problem in tools.problems if tools else ():
            self.note("tool-declaration-invalid", None, problem, None)

    def set_dialect(self, name: str) -> None:
        self.dialect = name
        self.outbox.append(DialectDetected(name))

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message

    def end(self, trailing: str = "") -> None:
        """The byte stream is over: settle the status."""
        self.trailing = trailing
        if self.error is not None:
            self.status = Status.ERROR
            self._mark_calls_unfinished(INTERRUPTED_CALL_ERROR)
        elif self.finished:
            self.status = Status.FINISHED
            self._parse_pending_calls()
        else:
            self.status = Status.TRUNCATED
            self._mark_calls_unfinished(TRUNCATED_CALL_ERROR)
            for slot in self.calls.values():
                self._check_merged_json(slot)
        self.outbox.append(StreamEnded(self.status, self.finish_reason, self.error, trailing))

    def _check_merged_json(self, slot: CallSlot) -> None:
        merged = slot.merged_json_fragment()
        if merged is None:
            return
        end, fragment = merged
        self.note(
            "fragment-after-complete-json",
            slot.index,
            f"fragment {fragment} arrived after the arguments already formed complete JSON "
            f"(ending at char {end}); two calls merged into one?",
            slot.fragment_events[fragment - 1],
            count=len(slot.fragments) - fragment + 1,
        )

    def _mark_calls_unfinished(self, reason: str) -> None:
        for slot in self.calls.values():
            if not slot.parsed:
                slot.error = reason

    def _parse_pending_calls(self) -> None:
        for index in sorted(self.calls):
            slot = self.calls[index]
            if not slot.parsed:
                slot.parse()
                if slot.error is not None:
                    self._check_merged_json(slot)
                else:
                    self._check_parsed(slot)
                self.outbox.append(
                    CallParsed(index, slot.arguments, slot.error, slot.error_position)
                )

    def _check_parsed(self, slot: CallSlot) -> None:
        """Parsed arguments: an object, of a declared tool, that its schema accepts?"""
        last_event = slot.fragment_events[-1] if slot.fragment_events else None
        if not isinstance(slot.arguments, dict):
            kind = "null" if slot.arguments is None else type(slot.arguments).__name__
            self.note(
                "arguments-not-object",
                slot.index,
                f"arguments parse to {kind}, not an object; a tool expects an object",
                last_event,
            )
        if self.tools is None or slot.name is None:  # a nameless call is named-missing already
            return
        if not self.tools.declares(slot.name):
            declared = ", ".join(map(repr, self.tools.schemas)) or "none"
            self.note(
                "unknown-tool",
                slot.index,
                f"call to {slot.name!r}, which the request did not declare (declared: {declared})",
                last_event,
            )
            return
        slot.schema_errors = self.tools.check(slot.name, slot.arguments)
        if slot.schema_errors:
            first = slot.schema_errors[0]
            self.note(
                "schema-mismatch",
                slot.index,
                f"{len(slot.schema_errors)} schema error(s); first at {first.path}: "
                f"{first.message}",
                last_event,
            )

    def drain(self) -> list[StreamEvent]:
        events, self.outbox = self.outbox, []
        return events

    @property
    def all_calls_parsed(self) -> bool:
        return all(slot.parsed and slot.error is None for slot in self.calls.values())

    @property
    def all_calls_valid(self) -> bool:
        """Every call parsed, and no declared schema rejected its arguments."""
        return self.all_calls_parsed and not any(slot.schema_errors for slot in self.calls.values())
