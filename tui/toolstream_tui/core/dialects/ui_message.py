"""The Vercel AI SDK's UI message stream (what `useChat` reads): SSE `data:` lines,
each a JSON chunk with a hyphenated `type`, ended by `data: [DONE]`. A server
marks it with the `x-vercel-ai-ui-message-stream: v1` header.

Tool calls are keyed by `toolCallId` and take lanes in the order they start. A
call's fragments are its `tool-input-delta`s; `tool-input-available` then gives
the parsed `input`, the server's final word (what the SDK's message holds). When
no delta came, that input is the call's one fragment; when it parses to another
value than the joined deltas, it becomes the call's final arguments and a
`done-mismatch` says where the two part (the deltas stay visible). An input sent as
text (`inputEncoding: "text"`) is a string: the arguments are that string. The
finish is the `finish` chunk, with an optional `finishReason`; `data: [DONE]`
follows it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import CallSlot
from ..strict_json import loads
from .base import Dialect, as_dict, as_text, compact_json, excerpt, mismatch_detail
from .chat import DONE

HEADER = "x-vercel-ai-ui-message-stream"
FINISH = "finish"
# Chunk types no other dialect sends (Cohere's are hyphenated too, but others:
# `message-start`, `content-delta`, `tool-call-start`).
CLAIMED_TYPES = frozenset(
    {
        "start",
        "start-step",
        "finish-step",
        "text-start",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "tool-output-error",
    }
)
# Chunks that carry nothing for the answer (sources, files, data parts, metadata,
# tool execution) and are read without a word.
QUIET_TYPES = frozenset(
    {
        "start",
        "start-step",
        "finish-step",
        "message-metadata",
        "source-url",
        "source-document",
        "file",
        "reasoning-file",
        "custom",
        "tool-output-available",
        "tool-output-denied",
        "tool-approval-request",
        "tool-approval-response",
        "steering-message",
    }
)
TEXT_CHANNELS = {"text": Channel.CONTENT, "reasoning": Channel.REASONING}


def _is_chunk(payload: dict[str, Any]) -> bool:
    """One of this protocol's chunks (it has no other JSON: no complete response)."""
    kind = payload.get("type")
    if not isinstance(kind, str):
        return False
    if kind in CLAIMED_TYPES:
        return True
    # Plain names other streams could use count only with this protocol's fields.
    if kind == "text-delta":
        return isinstance(payload.get("id"), str) and isinstance(payload.get("delta"), str)
    if kind == "error":
        return isinstance(payload.get("errorText"), str)
    return False


class ToolInput:
    __slots__ = ("got_delta", "settled", "slot", "text_input")

    def __init__(self, slot: CallSlot) -> None:
        self.slot = slot
        self.text_input = False  # `inputEncoding: "text"`: the deltas are plain text
        self.got_delta = False
        self.settled = False  # tool-input-available or tool-input-error arrived


class UIMessageStreamDialect(Dialect):
    name = "ai-sdk-ui"
    anomaly_kinds = frozenset(
        {
            "arguments-object",
            "call-id-reused",
            "data-after-done",
            "data-after-finish",
            "delta-after-done",
            "delta-without-start",
            "done-mismatch",
            "done-missing",
            "finish-missing",
            "finish-tools-without-calls",
            "name-changed",
            "step-reset",
            "stream-aborted",
            "tool-input-error",
            "tool-output-error",
        }
    )

    @classmethod
    def claims_head(cls, media_type: str, headers: Mapping[str, str]) -> bool:
        return HEADER in headers

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        return payload is not None and _is_chunk(payload)

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        return _is_chunk(body)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._calls: dict[str | None, ToolInput] = {}
        self._open_parts: dict[str, set[str | None]] = {"text": set(), "reasoning": set()}
        self._finished = False
        self._done = False
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "text-start": lambda p: self._on_part_start("text", p),
            "text-delta": lambda p: self._on_part_delta("text", p),
            "text-end": lambda p: self._on_part_end("text", p),
            "reasoning-start": lambda p: self._on_part_start("reasoning", p),
            "reasoning-delta": lambda p: self._on_part_delta("reasoning", p),
            "reasoning-end": lambda p: self._on_part_end("reasoning", p),
            "tool-input-start": self._on_input_start,
            "tool-input-delta": self._on_input_delta,
            "tool-input-available": self._on_input_available,
            "tool-input-error": self._on_input_error,
            "tool-output-error": self._on_output_error,
            "reset-step": self._on_reset_step,
            "abort": self._on_abort,
            "finish": self._on_finish,
            "error": self._on_error,
        }

    def handle(self, event: SSEEvent) -> None:
        data = event.data
        if data[-1:] == "]" and data.strip() == DONE:
            self._on_done_marker()
            return
        if self._done:
            self.note("data-after-done", None, f"event {event.number} arrived after [DONE]")
        typed = self.typed_payload(event)
        if typed is None:
            return
        kind, payload = typed
        if self._finished:
            self.note("data-after-finish", None, f"{kind} arrived after the finish chunk")
        self._dispatch(kind, payload)

    def _dispatch(self, kind: str, payload: dict[str, Any]) -> None:
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(payload)
        elif kind not in QUIET_TYPES and not kind.startswith("data-"):
            self.note("unknown-event", None, f"chunk type {kind!r} ignored")

    def on_completion(self, body: Any) -> None:
        """A UI message stream is never one JSON body; a chunk sent as one is read
        as that chunk."""
        self.note("unexpected-shape", None, "a complete JSON body, not a UI message stream")
        body = as_dict(body)
        if isinstance(body.get("type"), str):
            self._dispatch(body["type"], body)

    def on_end(self) -> None:
        if self._finished and not self._done:
            self.note("done-missing", None, "a finish chunk but no data: [DONE] before the end")

    # -- text and reasoning parts -----------------------------------------------------
    def _on_part_start(self, part: str, payload: dict[str, Any]) -> None:
        self._open_parts[part].add(as_text(payload.get("id")))

    def _on_part_delta(self, part: str, payload: dict[str, Any]) -> None:
        part_id = as_text(payload.get("id"))
        if part_id not in self._open_parts[part]:
            self.note("delta-without-start", None, f"{part}-delta for part {part_id!r} not open")
        delta = payload.get("delta")
        if not isinstance(delta, str):
            self.note("unexpected-shape", None, f"{part}-delta whose delta is not a string")
            return
        self.state.append_text(TEXT_CHANNELS[part], delta)

    def _on_part_end(self, part: str, payload: dict[str, Any]) -> None:
        self._open_parts[part].discard(as_text(payload.get("id")))

    # -- tool inputs ----------------------------------------------------------------
    def _start(self, call_id: str | None, name: str | None) -> ToolInput:
        lane = self.state.next_free_index()
        entry = ToolInput(self.state.start_call(lane, call_id, name, self.t))
        self._calls[call_id] = entry
        return entry

    def _on_input_start(self, payload: dict[str, Any]) -> None:
        call_id = as_text(payload.get("toolCallId"))
        earlier = self._calls.get(call_id)
        entry = self._start(call_id, as_text(payload.get("toolName")))
        entry.text_input = payload.get("inputEncoding") == "text"
        if earlier is not None:
            self.note(
                "call-id-reused",
                entry.slot.index,
                f"tool-input-start for toolCallId {call_id!r} again (lane {earlier.slot.index} "
                f"before); a new lane",
            )

    def _known(self, payload: dict[str, Any], what: str) -> ToolInput:
        """The call a chunk names; one never started is started so nothing is lost."""
        call_id = as_text(payload.get("toolCallId"))
        entry = self._calls.get(call_id)
        if entry is None:
            entry = self._start(call_id, as_text(payload.get("toolName")))
            if what == "tool-input-delta":
                detail = f"tool-input-delta for toolCallId {call_id!r} that never started"
                self.note("delta-without-start", entry.slot.index, detail)
        return entry

    def _on_input_delta(self, payload: dict[str, Any]) -> None:
        entry = self._known(payload, "tool-input-delta")
        if entry.settled:
            self.note("delta-after-done", entry.slot.index, "tool-input-delta after its input")
        delta = payload.get("inputTextDelta")
        if not isinstance(delta, str):
            self.note("arguments-object", entry.slot.index, "inputTextDelta is not a string")
            delta = compact_json(delta)
        entry.got_delta = True
        self.state.append_fragment(entry.slot, delta, self.event, self.t)

    def _on_input_available(self, payload: dict[str, Any]) -> None:
        entry = self._known(payload, "tool-input-available")
        self._check_name(entry, payload, "tool-input-available")
        entry.settled = True
        if "input" not in payload:
            self.note("unexpected-shape", entry.slot.index, "tool-input-available without input")
            return
        final, slot = payload["input"], entry.slot
        if not entry.got_delta and slot.length == 0:
            self.state.append_fragment(slot, compact_json(final), self.event, self.t)
        elif entry.text_input:
            self._settle_text_input(slot, final)
        else:
            self._settle_json_input(slot, final)

    def _settle_json_input(self, slot: CallSlot, final: Any) -> None:
        """The deltas stand when they parse (once, here) to the final input's value;
        else the final input is the answer, and where the two part is noted."""
        try:
            streamed = {} if slot.arguments_raw.strip() == "" else loads(slot.arguments_raw)
        except ValueError:
            earlier, against = slot.arguments_raw, "the joined deltas"
        else:
            if _same_value(streamed, final):
                return
            earlier, against = compact_json(streamed), "the joined deltas (compacted)"
        slot.final_raw = compact_json(final)
        detail = mismatch_detail("input", "tool-input-available", against, slot.final_raw, earlier)
        self.note("done-mismatch", slot.index, detail)

    def _settle_text_input(self, slot: CallSlot, final: Any) -> None:
        """A text-encoded input (`inputEncoding: "text"`) is a string, not JSON: the
        arguments are that string, as JSON, so they parse to it."""
        slot.final_raw = compact_json(final)
        streamed = slot.arguments_raw
        if final != streamed:
            shown = final if isinstance(final, str) else slot.final_raw
            detail = mismatch_detail(
                "input", "tool-input-available", "the joined deltas", shown, streamed
            )
            self.note("done-mismatch", slot.index, detail)

    def _on_input_error(self, payload: dict[str, Any]) -> None:
        """The SDK refused the call's input (unparsable, unknown tool, failed schema):
        the call keeps what streamed, or the input the chunk carries."""
        entry = self._known(payload, "tool-input-error")
        self._check_name(entry, payload, "tool-input-error")
        entry.settled = True
        error_text = payload.get("errorText")
        detail = error_text if isinstance(error_text, str) else compact_json(payload)
        self.note("tool-input-error", entry.slot.index, excerpt(detail))
        raw = payload.get("input")
        if not entry.got_delta and entry.slot.length == 0 and "input" in payload:
            # An input that did not parse arrives as the text the model sent.
            text = raw if isinstance(raw, str) else compact_json(raw)
            self.state.append_fragment(entry.slot, text, self.event, self.t)

    def _check_name(self, entry: ToolInput, payload: dict[str, Any], source: str) -> None:
        name = as_text(payload.get("toolName"))
        slot = entry.slot
        if name is None or name == slot.name:
            return
        if slot.name is None:
            self.state.identify(slot, None, name)
            return
        detail = f"{source} names {name!r}, the call started as {slot.name!r} (kept)"
        self.note("name-changed", slot.index, detail)

    def _on_output_error(self, payload: dict[str, Any]) -> None:
        entry = self._calls.get(as_text(payload.get("toolCallId")))
        error_text = payload.get("errorText")
        detail = error_text if isinstance(error_text, str) else compact_json(payload)
        self.note("tool-output-error", None if entry is None else entry.slot.index, excerpt(detail))

    # -- steps and the end ------------------------------------------------------------
    def _on_reset_step(self, payload: dict[str, Any]) -> None:
        self.note("step-reset", None, "reset-step: the SDK drops the step's parts; kept here")

    def _on_abort(self, payload: dict[str, Any]) -> None:
        reason = payload.get("reason")
        detail = f"abort: {reason}" if isinstance(reason, str) else "abort"
        self.note("stream-aborted", None, excerpt(detail))

    def _on_finish(self, payload: dict[str, Any]) -> None:
        reason = payload.get("finishReason")
        reason = reason if isinstance(reason, str) else None
        if reason == "tool-calls" and not self._calls:
            self.note(
                "finish-tools-without-calls", None, 'finishReason "tool-calls" with no tool input'
            )
        self._finished = True
        self.state.finish(reason, FINISH)

    def _on_error(self, payload: dict[str, Any]) -> None:
        error_text = payload.get("errorText")
        detail = error_text if isinstance(error_text, str) else compact_json(payload)
        self.note("error-event", None, excerpt(detail))
        self.state.fail(f"error in stream: {excerpt(detail)}")

    def _on_done_marker(self) -> None:
        if self._done:
            self.note("data-after-done", None, "data: [DONE] again")
        elif not self._finished and self.state.error is None:
            self.note("finish-missing", None, "data: [DONE] arrived with no finish chunk")
        self._done = True


def _same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values, as JavaScript reads them: numbers by value (1 and 1.0
    alike), a boolean never equal to a number, objects whatever their key order."""
    try:
        return same_json(a, b)
    except RecursionError:
        return compact_json(a) == compact_json(b)


def same_json(a: Any, b: Any) -> bool:
    """See `_same_value` (this one may run out of stack on deep values)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same_json, a, b))
    return type(a) is type(b) and a == b
