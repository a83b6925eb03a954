"""The per-index accumulator: one slot per tool call, text channels, anomalies,
and the stream's end state. Dialect decoders drive it through its methods; each
method records the `StreamEvent`s it caused in `outbox` for the consumer.

Arguments are appended fragment by fragment (never assigned) and parsed once,
strictly, when the finish arrives.

Everything recorded is stamped with the wire event that carried it (`now`: the
SSE event being handled; 0 before the first; the event after the last once the
stream is over), so a display can show the stream as it stood after any event.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable
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
from .fields import FieldClock, WrittenObject
from .pieces import TextPieces
from .records import FrozenRecord, Record
from .schema import DeclaredTools, SchemaError
from .strict_json import loads, value_end
from .surrogates import (
    cannot_hold_surrogates,
    lone_places,
    may_decode_to_lone_surrogates,
    rejoin_pairs,
    spells_surrogate_escape,
)

STALL_SECONDS = 1.0  # by default, a silence longer than this is a stall
TRUNCATED_CALL_ERROR = "stream ended before the finish; arguments are incomplete"
INTERRUPTED_CALL_ERROR = "stream failed before the finish; arguments are incomplete"
CHANNELS = (Channel.CONTENT, Channel.REASONING, Channel.REFUSAL)
CHANNEL_CODES = {channel: code for code, channel in enumerate(CHANNELS)}


class Caller(FrozenRecord):
    """What made a call, as the wire says (Anthropic): the model itself (`direct`),
    or code run by the code-execution server tool (programmatic tool calling;
    `tool_id` names that tool's use)."""

    __slots__ = ("tool_id", "type")

    def __init__(self, type: str | None, tool_id: str | None = None) -> None:
        self.type = type
        self.tool_id = tool_id

    @property
    def is_direct(self) -> bool:
        return self.type == "direct"


class CallSlot(Record):
    __slots__ = (
        "_fields",
        "arguments",
        "call_id",
        "caller",
        "error",
        "error_position",
        "final_raw",
        "final_written",
        "id_event",
        "in_pieces",
        "index",
        "item_id",
        "name",
        "name_event",
        "named_at",
        "parsed",
        "pieces",
        "schema_errors",
        "settled_event",
        "started_at",
        "started_event",
        "started_in",
        "whole",
        "written",
    )

    def __init__(
        self,
        index: int,
        call_id: str | None,
        name: str | None,
        started_at: float,
        item_id: str | None = None,
        caller: Caller | None = None,
        started_in: str | None = None,
        named_at: float | None = None,
        pieces: TextPieces | None = None,
        parsed: bool = False,
        arguments: Any = None,
        error: str | None = None,
        error_position: int | None = None,
        schema_errors: list[SchemaError] | None = None,
        final_raw: str | None = None,
        started_event: int = 0,
        id_event: int | None = None,
        name_event: int | None = None,
        settled_event: int | None = None,
        written: WrittenObject | None = None,
        final_written: tuple[str, Any] | None = None,
    ) -> None:
        self.index = index
        self.call_id = call_id
        self.name = name
        self.started_at = started_at
        self.item_id = item_id  # OpenAI Responses: the fc_… output item id
        self.caller = caller  # Anthropic: who made the call, when the wire says
        # The event type that carried the whole call, when that was not the call's own
        # start (Anthropic: a tool_use block already complete in message_start).
        self.started_in = started_in
        self.named_at = named_at  # when the function name first arrived
        self.pieces = TextPieces() if pieces is None else pieces  # the argument fragments
        self.parsed = parsed
        self.arguments = arguments
        self.error = error
        self.error_position = error_position
        self.schema_errors = [] if schema_errors is None else schema_errors
        self.final_raw = final_raw  # the complete arguments the server restated at the end
        # The wire events at which the call began, got its id and its name, and was
        # parsed (or found unfinished at the end).
        self.started_event = started_event
        self.id_event = id_event
        self.name_event = name_event
        self.settled_event = settled_event
        # The arguments' first fragment, when it was an object written whole (see
        # `StreamState.append_written`)
        self.written = written
        # The final word and the object it was written from (see `restate`)
        self.final_written = final_written
        # The arguments came whole in one fragment (Gemini's `args`, Ollama's
        # `arguments`): complete when they arrived, whatever the stream did next.
        self.whole = False
        # The fragments are pieces, `path = value` lines each ending in one newline
        # (Vertex AI's partialArgs), not the arguments' own JSON text.
        self.in_pieces = False
        self._fields: FieldClock | None = None

    @property
    def length(self) -> int:
        return self.pieces.length

    @property
    def fragment_count(self) -> int:
        return len(self.pieces)

    @property
    def arguments_raw(self) -> str:
        """The fragments joined, with UTF-16 pairs cut between fragments rejoined."""
        text = self.pieces.text()
        return text if self.pieces.surely_no_surrogates() else rejoin_pairs(text)

    def fragments(self) -> list[str]:
        """Every fragment as a string (one object each: for tests and small calls)."""
        return list(self.pieces.pieces())

    def time_fields_with(self, clock: FieldClock) -> None:
        """Find the fields with `clock` (a call whose text is not JSON as it comes)."""
        self._fields = clock

    def fields(self) -> FieldClock:
        """When each top-level field became known, read up to the latest fragment
        (a scan that resumes where it stopped)."""
        if self._fields is None:
            written = self.written
            self._fields = FieldClock() if written is None else FieldClock.of_written(written)
        self._fields.follow(self.pieces, final=self.settled_event is not None)
        return self._fields

    @property
    def parsed_raw(self) -> str:
        """The text the arguments are parsed from: the server's final word when it
        gave one (OpenAI Responses), else the fragments as they arrived."""
        return self.arguments_raw if self.final_raw is None else self.final_raw

    def raw_texts(self) -> tuple[str, str]:
        """`arguments_raw` and `parsed_raw` with the fragments joined once: each join
        decodes the call's buffer and looks again for UTF-16 halves to rejoin."""
        streamed = self.arguments_raw
        return streamed, streamed if self.final_raw is None else self.final_raw

    def holds_complete_json(self) -> bool:
        """The arguments so far are a whole value; only whitespace is one too: at
        the finish it means `{}`, as nothing does."""
        raw = self.arguments_raw
        if not raw.strip():
            return True
        try:
            loads(raw)
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
            end = value_end(raw, start)
        except (ValueError, RecursionError):
            return None
        if not raw[end:].strip():
            return None
        extra = end + len(raw[end:]) - len(raw[end:].lstrip())
        return end, self.pieces.piece_at(extra) + 1

    def parse(self) -> None:
        self.parsed = True
        self.error = self.error_position = None
        self.schema_errors = []
        if self._parsed_as_written():
            return
        raw = self.parsed_raw
        if raw.strip() == "":
            self.arguments = {}
            return
        try:
            self.arguments = loads(raw)
        except ValueError as exc:
            self.arguments = None
            self.error = f"invalid JSON arguments: {exc}"
            self.error_position = getattr(exc, "pos", None)

    def restate(self, text: str, written_from: Any = None) -> None:
        """The server's final word on the arguments (`final_raw`). `written_from`: the
        object `text` was written from, where parsing `text` gives that object back,
        equal and of the same types: the parse at the finish takes it."""
        self.final_raw = text
        self.final_written = None if written_from is None else (text, written_from)

    def _parsed_as_written(self) -> bool:
        """Arguments whose text is still the one written from an object (the final
        word, see `restate`; or, without one, the buffer's only fragment, where
        `WrittenObject.exact`): parsing it gives that object, so it is the parse."""
        if self.final_raw is not None:
            final = self.final_written
            if final is None or final[0] is not self.final_raw:  # restated otherwise since
                return False
            self.arguments = final[1]
            return True
        written = self.written
        if written is None or not written.exact:
            return False
        if len(self.pieces) != 1:
            return False
        self.arguments = written.value
        return True


class StreamState(Record):
    __slots__ = (
        "_anomaly_keys",
        "_call_anomalies",
        "_next_free",
        "anomalies",
        "body",
        "body_chars",
        "bytes_received",
        "calls",
        "dialect",
        "dialect_event",
        "end_event",
        "error",
        "error_event",
        "events",
        "final_text",
        "finish_at",
        "finish_event",
        "finish_reason",
        "finish_reason_event",
        "finish_trigger",
        "first_text_at",
        "fragment_events",
        "http_status",
        "last_data_at",
        "last_text_at",
        "live",
        "now",
        "outbox",
        "read_bytes",
        "read_events",
        "read_times",
        "response_at",
        "source",
        "stall_threshold",
        "status",
        "text_channels",
        "text_deltas",
        "text_pieces",
        "tools",
        "trailing",
        "trailing_chars",
    )

    def __init__(
        self,
        source: str,
        dialect: str,
        text_pieces: TextPieces | None = None,
        text_channels: array[int] | None = None,
        final_text: str | None = None,
        calls: dict[int, CallSlot] | None = None,
        anomalies: list[Anomaly] | None = None,
        status: Status = Status.STREAMING,
        finish_reason: str | None = None,
        finish_trigger: str | None = None,
        error: str | None = None,
        http_status: int | None = None,
        body: str | None = None,
        body_chars: int | None = None,
        trailing: str = "",
        trailing_chars: int = 0,
        events: int = 0,
        bytes_received: int = 0,
        last_data_at: float = 0.0,
        response_at: float | None = None,
        read_times: array[float] | None = None,
        read_events: array[int] | None = None,
        read_bytes: array[int] | None = None,
        first_text_at: float | None = None,
        last_text_at: float | None = None,
        text_deltas: int = 0,
        finish_at: float | None = None,
        outbox: list[StreamEvent] | None = None,
        live: bool = True,
        fragment_events: bool = True,
        tools: DeclaredTools | None = None,
        stall_threshold: float = STALL_SECONDS,
        now: int = 0,
        dialect_event: int | None = None,
        finish_event: int | None = None,
        end_event: int | None = None,
        error_event: int | None = None,
        finish_reason_event: int | None = None,
    ) -> None:
        self.source = source
        self.dialect = dialect
        # every channel, in order
        self.text_pieces = TextPieces() if text_pieces is None else text_pieces
        self.text_channels = array("b") if text_channels is None else text_channels  # per piece
        self.final_text = final_text  # the content text as the server restated it at the end
        self.calls = {} if calls is None else calls
        self.anomalies = [] if anomalies is None else anomalies
        self.status = status
        self.finish_reason = finish_reason
        self.finish_trigger = finish_trigger
        self.error = error
        self.http_status = http_status
        self.body = body
        self.body_chars = body_chars  # the whole body's length (`body` may keep only its start)
        self.trailing = trailing
        # the unterminated event's length (`trailing` may keep its start)
        self.trailing_chars = trailing_chars
        self.events = events
        self.bytes_received = bytes_received
        self.last_data_at = last_data_at  # arrival time of the latest read
        self.response_at = response_at  # when the response head arrived
        self.read_times = array("d") if read_times is None else read_times  # every read
        self.read_events = array("q") if read_events is None else read_events  # events by its end
        self.read_bytes = array("q") if read_bytes is None else read_bytes  # bytes by its end
        self.first_text_at = first_text_at  # content text, not reasoning or refusal
        self.last_text_at = last_text_at
        self.text_deltas = text_deltas
        self.finish_at = finish_at
        self.outbox = [] if outbox is None else outbox
        self.live = live  # emit per-event detail (wire and text events); headless needs none
        self.fragment_events = fragment_events
        self.tools = tools  # what the request declared, when it is known
        self.stall_threshold = stall_threshold
        self.now = now  # the stamp of what is recorded now (see the module's docstring)
        self.dialect_event = dialect_event
        self.finish_event = finish_event
        self.end_event = end_event
        self.error_event = error_event
        self.finish_reason_event = finish_reason_event  # when `finish_reason` was first known
        self._anomaly_keys: dict[tuple[str, int | None], Anomaly] = {}
        self._call_anomalies: dict[int, list[Anomaly]] = {}
        self._next_free: int = 0  # every lane below it is taken

    # -- text ---------------------------------------------------------------
    def append_text(self, channel: Channel, text: str) -> None:
        if not text:
            return
        self.text_pieces.append(text, self.now, self.last_data_at)
        self.text_channels.append(CHANNEL_CODES[channel])
        if channel is Channel.CONTENT:
            if self.first_text_at is None:
                self.first_text_at = self.last_data_at
            self.last_text_at = self.last_data_at
            self.text_deltas += 1
        if self.live:
            self.outbox.append(TextAppended(channel, text))

    def channel_text(self, channel: Channel, upto: int | None = None) -> str:
        """The text of one channel (up to wire event `upto`)."""
        code = CHANNEL_CODES[channel]
        pieces, channels = self.text_pieces, self.text_channels
        count = len(pieces) if upto is None else pieces.count_upto(upto)
        if count and channels.count(code) == len(channels):
            return rejoin_pairs(pieces.slice(0, pieces.ends[count - 1]))
        return rejoin_pairs(
            "".join(
                pieces.slice(start, end)
                for start, end, of in self.text_runs(count)
                if of is channel
            )
        )

    def text_runs(self, count: int | None = None) -> list[tuple[int, int, Channel]]:
        """The text of the first `count` pieces as runs of one channel each:
        (start offset, end offset, channel)."""
        pieces, channels = self.text_pieces, self.text_channels
        count = len(pieces) if count is None else count
        runs: list[tuple[int, int, Channel]] = []
        first = 0
        while first < count:
            code = channels[first]
            last = first
            while last + 1 < count and channels[last + 1] == code:
                last += 1
            runs.append((pieces.start_of(first), pieces.ends[last], CHANNELS[code]))
            first = last + 1
        return runs

    @property
    def text(self) -> str:
        return self.channel_text(Channel.CONTENT)

    @property
    def reasoning(self) -> str:
        return self.channel_text(Channel.REASONING)

    @property
    def refusal(self) -> str:
        return self.channel_text(Channel.REFUSAL)

    def event_time(self, number: int) -> float | None:
        """When wire event `number` arrived (the read that completed it)."""
        if number < 1:
            return None
        read = bisect_left(self.read_events, number)
        return self.read_times[read] if read < len(self.read_times) else None

    # -- calls --------------------------------------------------------------
    def next_free_index(self) -> int:
        """The lowest lane not taken. Lanes are never given back, so every lane
        below the last answer stays taken: the search resumes there."""
        while self._next_free in self.calls:
            self._next_free += 1
        return self._next_free

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
        slot.started_event = self.now
        slot.id_event = self.now if call_id else None
        slot.name_event = self.now if name else None
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
            if slot.id_event is None:
                slot.id_event = self.now
        if name:
            slot.name = name
            if slot.named_at is None:
                slot.named_at = self.last_data_at
                slot.name_event = self.now
        self.outbox.append(CallIdentified(slot.index, slot.call_id, slot.name))

    def append_fragment(self, slot: CallSlot, text: str, event: int, t: float) -> None:
        if not text:
            return
        slot.pieces.append(text, event, t)
        if self.fragment_events:
            self.outbox.append(FragmentAppended(slot.index, len(slot.pieces), text, event, t))
        if slot.parsed:
            slot.parsed = False
            slot.settled_event = None
            self.note(
                "fragment-after-finish",
                slot.index,
                f"fragment {len(slot.pieces)} arrived after the finish; parsed again at the end",
                event,
            )

    def append_written(
        self, slot: CallSlot, text: str, written: WrittenObject, event: int, t: float
    ) -> None:
        """Arguments that arrived whole as an object, `text` written from it by
        `fields.write_object`: as the first fragment, the slot keeps what writing
        found (the fields; the value, which the parse at the finish takes while
        nothing else is appended)."""
        if not slot.pieces:
            slot.written = written
        self.append_fragment(slot, text, event, t)

    # -- anomalies ----------------------------------------------------------
    def note(
        self, kind: str, index: int | None, detail: str, event: int | None, count: int = 1
    ) -> None:
        known = self._anomaly_keys.get((kind, index))
        if known is not None:
            known.count += count
            known.sighted(self.now, count)
            return
        anomaly = Anomaly(kind, index, detail, event, count)
        anomaly.sighted(self.now, count)
        self._anomaly_keys[(kind, index)] = anomaly
        if index is not None:
            self._call_anomalies.setdefault(index, []).append(anomaly)
        self.anomalies.append(anomaly)
        self.outbox.append(AnomalyRecorded(anomaly))

    def call_anomalies(self, index: int) -> list[Anomaly]:
        return self._call_anomalies.get(index, [])

    # -- finish and end -----------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.finish_trigger is not None

    def finish(self, reason: str | None, trigger: str) -> None:
        """A finish trigger arrived: parse every call's buffer, once."""
        if self.finished:
            if reason is not None and self.finish_reason is None:
                self.finish_reason = reason
                self._stamp_finish_reason()
            return
        self.finish_reason = reason if reason is not None else self.finish_reason
        self._stamp_finish_reason()
        self.finish_trigger = trigger
        self.finish_at = self.last_data_at
        self.finish_event = self.now
        self.outbox.append(FinishSeen(reason, trigger))
        self._parse_pending_calls()

    def set_finish_reason(self, reason: str | None) -> None:
        """Record why the model stopped, ahead of the finish trigger (Anthropic sends
        the stop_reason in message_delta, the finish in message_stop)."""
        if reason is not None:
            self.finish_reason = reason
            self._stamp_finish_reason()

    def _stamp_finish_reason(self) -> None:
        if self.finish_reason is not None and self.finish_reason_event is None:
            self.finish_reason_event = self.now

    def declare_tools(self, tools: DeclaredTools | None) -> None:
        self.tools = tools
        for problem in tools.problems if tools else ():
            self.note("tool-declaration-invalid", None, problem, None)

    def set_dialect(self, name: str) -> None:
        self.dialect = name
        self.dialect_event = self.now
        self.outbox.append(DialectDetected(name))

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message
            self.error_event = self.now

    def closing(self) -> None:
        """The byte stream is over: what is recorded from now on is stamped with the
        event after the last."""
        self.now = self.events + 1

    @property
    def ended(self) -> bool:
        return self.end_event is not None

    def end(self, trailing: str = "") -> None:
        """The byte stream is over: settle the status."""
        self.closing()
        self.trailing = trailing
        if self.error is not None:
            self.status = Status.ERROR
            self._settle_unfinished_calls(INTERRUPTED_CALL_ERROR)
        elif self.finished:
            self.status = Status.FINISHED
            self._parse_pending_calls()
        else:
            self.status = Status.TRUNCATED
            self._settle_unfinished_calls(TRUNCATED_CALL_ERROR)
            for slot in self.calls.values():
                self._check_merged_json(slot)
        self._note_lone_surrogates()
        self.end_event = self.now
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
            slot.pieces.events[fragment - 1],
            count=len(slot.pieces) - fragment + 1,
        )

    def _note_lone_surrogates(self) -> None:
        """Name every text that ends the stream holding half a UTF-16 pair."""
        texts: dict[str, str | None] = {
            "text": self.text,
            "reasoning": self.reasoning,
            "refusal": self.refusal,
            "error": self.error,
        }
        found = lone_places(texts)
        if found:
            self.note("lone-surrogate", None, found[0], None, count=found[1])
        for index, slot in self.calls.items():
            raw = slot.arguments_raw
            texts = {
                "name": slot.name,
                "id": slot.call_id,
                "item id": slot.item_id,
            }
            if slot.caller is not None:
                texts |= {"caller": slot.caller.type, "caller tool id": slot.caller.tool_id}
            if _cannot_hold_surrogates(slot.pieces, raw, texts.values()):
                continue  # most calls, with one quick look each (a stream may hold 10,000)
            value = None  # the parsed arguments, walked only when they may hold one
            if not (slot.parsed and slot.error is None):
                texts["arguments"] = raw
            elif may_decode_to_lone_surrogates(raw):
                value = slot.arguments
            found = lone_places(texts, value)
            if found:
                self.note("lone-surrogate", index, found[0], None, count=found[1])

    def _settle_unfinished_calls(self, reason: str) -> None:
        """A stream that ended before its finish: a call whose arguments came whole
        is complete, and parsed; every other keeps its raw text, unparsed, `reason`."""
        for index in sorted(self.calls):
            slot = self.calls[index]
            if slot.parsed:
                continue
            if slot.whole and len(slot.pieces) == 1:
                self._parse_call(index, slot)
            else:
                slot.error = reason
                slot.settled_event = self.now

    def _parse_pending_calls(self) -> None:
        for index in sorted(self.calls):
            slot = self.calls[index]
            if not slot.parsed:
                self._parse_call(index, slot)

    def _parse_call(self, index: int, slot: CallSlot) -> None:
        slot.parse()
        slot.settled_event = self.now
        if slot.error is not None:
            self._check_merged_json(slot)
        else:
            self._check_parsed(slot)
        self.outbox.append(CallParsed(index, slot.arguments, slot.error, slot.error_position))

    def _check_parsed(self, slot: CallSlot) -> None:
        """Parsed arguments: an object, of a declared tool, that its schema accepts?"""
        last_event = slot.pieces.events[-1] if len(slot.pieces) else None
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


def _cannot_hold_surrogates(pieces: TextPieces, raw: str, texts: Iterable[str | None]) -> bool:
    """`cannot_hold_surrogates(raw, *texts)` for a call's arguments `raw`, joined from
    `pieces`: where their UTF-8 bytes tell that they hold no surrogate, the text is
    not encoded again to find out."""
    if pieces.surely_no_surrogates():
        return not spells_surrogate_escape(raw) and cannot_hold_surrogates("", *texts)
    return cannot_hold_surrogates(raw, *texts)
