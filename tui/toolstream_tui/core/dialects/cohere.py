"""Cohere's v2 chat stream (`POST /v2/chat`): SSE events whose `event:` line names
the type the data repeats in `type`; every payload sits under `delta.message`.

- `tool-call-start` opens a call at its `index` (the lane, while free) with
  `tool_calls.id` and `tool_calls.function.name`; `tool-call-delta` appends
  `tool_calls.function.arguments`; `tool-call-end` closes it. Arguments that never
  came are `{}`.
- `tool-plan-delta` is the plan the model writes before its calls (`tool_plan`):
  it is shown on the reasoning channel, as the model's thinking before acting.
- `content-delta` carries `content.text` (the answer) or `content.thinking`
  (reasoning, when the request enabled thinking).
- `citation-start` / `citation-end` point into text already received: accepted
  and left out of the answer.
- `message-end` is the finish, with `finish_reason` (COMPLETE, TOOL_CALL,
  MAX_TOKENS, STOP_SEQUENCE, TIMEOUT, ERROR). An `error` in it, or the reason
  ERROR, is an error in the stream. A stream that ends before it is truncated.

A non-streaming response (`message` with `content`, `tool_plan`, `tool_calls`,
and a `finish_reason`) is read the same way, its calls arriving whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import CallSlot
from .base import Dialect, as_dict, as_int, as_list, as_text, compact_json

# Cohere's own event types; the AI SDK's UI stream uses other hyphenated names.
COHERE_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
    }
)
QUIET_EVENTS = frozenset({"message-start", "content-end", "citation-start", "citation-end"})
TEXT_FIELDS = (("text", Channel.CONTENT), ("thinking", Channel.REASONING))
ERROR_REASON = "ERROR"


class Call:
    __slots__ = ("ended", "slot")

    def __init__(self, slot: CallSlot) -> None:
        self.slot = slot
        self.ended = False


class CohereDialect(Dialect):
    name = "cohere"
    anomaly_kinds = frozenset(
        {
            "arguments-object",
            "block-not-stopped",
            "data-after-stop",
            "delta-after-stop",
            "delta-without-start",
            "finish-stop-with-tools",
            "finish-tools-without-calls",
            "id-missing",
            "index-missing",
            "index-reused",
            "name-missing",
            "stop-reason-missing",
        }
    )

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        kind = payload.get("type") if payload is not None else None
        return event.event in COHERE_EVENTS or kind in COHERE_EVENTS

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        message = body.get("message")
        return isinstance(message, dict) and "finish_reason" in body and "choices" not in body

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        kind = body.get("type")
        return isinstance(kind, str) and kind in COHERE_EVENTS

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._calls: dict[int, Call] = {}  # by wire index
        self._latest: Call | None = None
        self._ended = False
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "tool-plan-delta": self._on_tool_plan,
            "content-start": self._on_content,
            "content-delta": self._on_content,
            "tool-call-start": self._on_call_start,
            "tool-call-delta": self._on_call_delta,
            "tool-call-end": self._on_call_end,
            "message-end": self._on_message_end,
        }

    def handle(self, event: SSEEvent) -> None:
        typed = self.typed_payload(event)
        if typed is None:
            return
        kind, payload = typed
        if self._ended:
            self.note("data-after-stop", None, f"{kind} arrived after message-end")
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(payload)
        elif kind not in QUIET_EVENTS and kind != "debug":
            self.note("unknown-event", None, f"event type {kind!r} ignored")

    def on_completion(self, body: Any) -> None:
        body = as_dict(body)
        message = as_dict(body.get("message"))
        for part in as_list(message.get("content")):
            self.append_text_fields(as_dict(part), TEXT_FIELDS, "content.")
        if isinstance(message.get("tool_plan"), str):
            self.state.append_text(Channel.REASONING, message["tool_plan"])
        for call in as_list(message.get("tool_calls")):
            call = as_dict(call)
            slot = self._open(self.state.next_free_index(), call)
            self._append_arguments(slot, as_dict(call.get("function")).get("arguments"))
        self._end_message({"finish_reason": body.get("finish_reason")}, "complete response")

    # -- text -------------------------------------------------------------------
    def _on_tool_plan(self, payload: dict[str, Any]) -> None:
        plan = _message(payload).get("tool_plan")
        if isinstance(plan, str):
            self.state.append_text(Channel.REASONING, plan)

    def _on_content(self, payload: dict[str, Any]) -> None:
        self.append_text_fields(as_dict(_message(payload).get("content")), TEXT_FIELDS, "content.")

    # -- tool calls ---------------------------------------------------------------
    def _on_call_start(self, payload: dict[str, Any]) -> None:
        tool_call = as_dict(_message(payload).get("tool_calls"))
        index = as_int(payload.get("index"))
        if index is None:
            lane = self.state.next_free_index()
            self.note("index-missing", lane, f"tool-call-start without an index; lane {lane}")
        else:
            lane = self.free_lane(index)
            if index in self._calls:
                self.note("index-reused", lane, f"tool-call-start at index {index} again")
        slot = self._open(lane, tool_call)
        call = Call(slot)
        if index is not None:
            self.check_index_range(index, lane, "tool call index")
            self._calls[index] = call
        self._latest = call
        self._append_arguments(slot, as_dict(tool_call.get("function")).get("arguments"))

    def _open(self, lane: int, tool_call: dict[str, Any]) -> CallSlot:
        call_id = as_text(tool_call.get("id"))
        name = as_text(as_dict(tool_call.get("function")).get("name"))
        slot = self.state.start_call(lane, call_id, name, self.t)
        if call_id is None:
            self.note("id-missing", lane, "the call started without an id")
        if name is None:
            self.note("name-missing", lane, "the call started without a function name")
        return slot

    def _on_call_delta(self, payload: dict[str, Any]) -> None:
        call = self._call_of(payload, "tool-call-delta")
        function = as_dict(as_dict(_message(payload).get("tool_calls")).get("function"))
        if call is None:
            index = as_int(payload.get("index"))
            lane = self.free_lane(index) if index is not None else self.state.next_free_index()
            call = Call(self.state.start_call(lane, None, None, self.t))
            if index is not None:
                self._calls[index] = call
            self._latest = call
            detail = f"tool-call-delta for index {index}, which never started"
            self.note("delta-without-start", lane, detail)
        elif call.ended:
            self.note("delta-after-stop", call.slot.index, "tool-call-delta after tool-call-end")
        self._append_arguments(call.slot, function.get("arguments"))

    def _on_call_end(self, payload: dict[str, Any]) -> None:
        call = self._call_of(payload, "tool-call-end")
        if call is not None:
            call.ended = True

    def _call_of(self, payload: dict[str, Any], kind: str) -> Call | None:
        """The call an event's `index` names; without one, the latest call (noted)."""
        index = as_int(payload.get("index"))
        if index is not None:
            return self._calls.get(index)
        if self._latest is not None:
            self.note("index-missing", self._latest.slot.index, f"{kind} without an index")
        return self._latest

    def _append_arguments(self, slot: CallSlot, arguments: Any) -> None:
        if arguments is None:
            return
        if not isinstance(arguments, str):
            self.note("arguments-object", slot.index, "arguments arrived as a JSON value")
            arguments = compact_json(arguments)
        self.state.append_fragment(slot, arguments, self.event, self.t)

    # -- the end --------------------------------------------------------------------
    def _on_message_end(self, payload: dict[str, Any]) -> None:
        self._ended = True
        for call in self._calls.values():
            if not call.ended:
                self.note("block-not-stopped", call.slot.index, "no tool-call-end for the call")
        self._end_message(as_dict(payload.get("delta")), "message-end")

    def _end_message(self, delta: dict[str, Any], trigger: str) -> None:
        reason = as_text(delta.get("finish_reason"))
        error = delta.get("error")
        if error or reason == ERROR_REASON:
            detail = _error_detail(error)
            self.note("error-event", None, detail)
            self.state.fail(f"error in stream: {detail}")
            self.state.set_finish_reason(reason)  # no finish: a call under way stays unparsed
            return
        if reason is None:
            self.note("stop-reason-missing", None, f"{trigger} without a finish_reason")
        else:
            self._check_reason(reason)
        self.state.finish(reason, trigger)

    def _check_reason(self, reason: str) -> None:
        if reason == "TOOL_CALL" and not self.state.calls:
            self.note("finish-tools-without-calls", None, 'finish_reason "TOOL_CALL" with no call')
        if reason == "COMPLETE" and self.state.calls:
            self.note(
                "finish-stop-with-tools", None, 'finish_reason "COMPLETE" on a turn with tool calls'
            )


def _message(payload: dict[str, Any]) -> dict[str, Any]:
    return as_dict(as_dict(payload.get("delta")).get("message"))


def _error_detail(error: Any) -> str:
    if not error:
        return f"finish_reason {ERROR_REASON}"
    return error if isinstance(error, str) else compact_json(error)
