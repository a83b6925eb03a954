"""Anthropic Messages dialect: content blocks keyed by their `index`.

A tool_use block's arguments are the concatenated `input_json_delta.partial_json`
fragments; the `{}` placeholder in `content_block_start` is not prepended, and a
non-empty start `input` with no deltas is the arguments (one fragment, stamped with
the event that carried it). The stop_reason arrives in `message_delta`; the finish
is `message_stop`.

`message_start` may already hold complete blocks (programmatic tool calling sends
a whole tool_use there, with its `stop_reason`, and no block events): as the
official SDK starts its message from `message_start.message`, those blocks are
the first ones, at their position in `content`, and later deltas for the same
index continue them; a `stop_reason` there counts until a `message_delta` gives
another. A block's `caller` (which tool made the call) is kept on the call.
"""

from __future__ import annotations

from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import Caller, CallSlot
from .base import Dialect, as_dict, as_int, as_list, as_text, compact_json, excerpt

MESSAGE_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)
TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use"})
TEXT_DELTAS = {
    "text_delta": ("text", Channel.CONTENT),
    "thinking_delta": ("thinking", Channel.REASONING),
}
START_TEXT = {"text": ("text", Channel.CONTENT), "thinking": ("thinking", Channel.REASONING)}
SILENT_DELTAS = frozenset({"signature_delta", "citations_delta"})


class Block:
    __slots__ = (
        "got_delta",
        "input_settled",
        "kind",
        "slot",
        "start_event",
        "start_input",
        "start_t",
        "stopped",
        "whole",
    )

    def __init__(
        self,
        kind: str,
        slot: CallSlot | None = None,
        start_input: Any = None,
        *,
        start_event: int = 0,
        start_t: float = 0.0,
    ) -> None:
        self.kind = kind
        self.slot = slot
        self.start_input = start_input
        self.got_delta = False
        self.stopped = False
        self.input_settled = False  # the start input was taken (or passed over) once
        self.whole = False  # arrived complete in message_start: no block events are due
        self.start_event = start_event  # the wire event that carried the start input, and when
        self.start_t = start_t


class AnthropicMessagesDialect(Dialect):
    name = "anthropic"
    anomaly_kinds = frozenset(
        {
            "block-index-reused",
            "block-not-stopped",
            "block-stopped-twice",
            "data-after-stop",
            "delta-after-stop",
            "delta-type-mismatch",
            "delta-without-start",
            "start-input-with-deltas",
            "stop-reason-missing",
            "stop-without-start",
        }
    )

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        if event.event in MESSAGE_EVENTS:
            return True
        kind = payload.get("type") if payload is not None else None
        # Anthropic nests its error object; Responses puts code and message on top.
        nested_error = kind == "error" and isinstance(as_dict(payload).get("error"), dict)
        return kind in MESSAGE_EVENTS or nested_error

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        return body.get("type") in ("message", "error")

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        kind = body.get("type")
        return isinstance(kind, str) and kind in MESSAGE_EVENTS

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._blocks: dict[int, Block] = {}
        self._message_started = False
        self._message_stopped = False

    def handle(self, event: SSEEvent) -> None:
        typed = self.typed_payload(event)
        if typed is None:
            return
        kind, payload = typed
        if self._message_stopped and kind != "ping":
            self.note("data-after-stop", None, f"{kind} arrived after message_stop")
        handler = {
            "message_start": self._on_message_start,
            "ping": self._ignore,
            "content_block_start": self._on_block_start,
            "content_block_delta": self._on_block_delta,
            "content_block_stop": self._on_block_stop,
            "message_delta": self._on_message_delta,
            "message_stop": self._on_message_stop,
            "error": self._on_error,
        }.get(kind)
        if handler is None:
            self.note("unknown-event", None, f"event type {kind!r} ignored")
            return
        handler(payload)

    def on_completion(self, body: Any) -> None:
        """A non-streaming `message`: blocks arrive complete."""
        body = as_dict(body)
        if body.get("type") == "error":
            self._on_error(body)
            return
        for index, block in enumerate(as_list(body.get("content"))):
            block = as_dict(block)
            self._open_block(index, block)
            self._close_block(index, self._blocks[index])
        self.state.finish(body.get("stop_reason"), "complete response")

    def settle(self, hint: Any = None) -> None:
        """The stream is over: a start input never taken (the stream was cut before
        its block stopped) is kept as the arguments it was."""
        for index, block in self._blocks.items():
            if not block.stopped:
                self._settle_start_input(index, block)

    # -- blocks -----------------------------------------------------------------
    def _on_message_start(self, payload: dict[str, Any]) -> None:
        """The message as it starts: usually empty, but it may hold whole blocks
        and a stop_reason (the SDK reads only the first message_start)."""
        if self._message_started:
            return
        self._message_started = True
        message = as_dict(payload.get("message"))
        for index, block in enumerate(as_list(message.get("content"))):
            self._open_block(index, as_dict(block), "message_start")
            self._blocks[index].whole = True
        reason = message.get("stop_reason")
        if isinstance(reason, str):
            self._check_stop_reason(reason)
            self.state.set_finish_reason(reason)

    def _on_block_start(self, payload: dict[str, Any]) -> None:
        index = as_int(payload.get("index"))
        if index is None:
            self.note("unexpected-shape", None, "content_block_start without an integer index")
            return
        self._open_block(index, as_dict(payload.get("content_block")))

    def _open_block(self, index: int, block: dict[str, Any], inside: str | None = None) -> None:
        """A block starts (`inside`: the event that carried it whole, if any)."""
        kind = str(block.get("type"))
        previous = self._blocks.get(index)
        if previous is not None and not previous.stopped:
            if not previous.whole:
                lane = _lane(previous, index)
                self.note("block-not-stopped", lane, f"block {index} never stopped")
            self._close_block(index, previous)
        if kind in TOOL_BLOCKS:
            lane = self.free_lane(index)
            call_id, name = as_text(block.get("id")), as_text(block.get("name"))
            slot = self.state.start_call(lane, call_id, name, self.t)
            slot.caller = self._caller(block.get("caller"), lane)
            slot.started_in = inside
            self.check_index_range(index, lane, "content block index")
            self._blocks[index] = Block(
                kind, slot, block.get("input"), start_event=self.event, start_t=self.t
            )
        else:
            lane = index
            self._blocks[index] = Block(kind)
            field, channel = START_TEXT.get(kind, ("", Channel.CONTENT))
            if field and isinstance(block.get(field), str):
                self.state.append_text(channel, block[field])
        if previous is not None:
            self.note("block-index-reused", lane, f"content block {index} started again")

    def _caller(self, caller: Any, lane: int) -> Caller | None:
        if caller is None:
            return None
        if not isinstance(caller, dict):
            self.note(
                "unexpected-shape",
                lane,
                f"caller is not an object: {excerpt(compact_json(caller))}",
            )
            return None
        return Caller(as_text(caller.get("type")), as_text(caller.get("tool_id")))

    def _on_block_delta(self, payload: dict[str, Any]) -> None:
        index = as_int(payload.get("index"))
        delta = as_dict(payload.get("delta"))
        delta_type = str(delta.get("type"))
        block = self._blocks.get(index) if index is not None else None
        if block is None:
            block = self._adopt_unstarted_block(index, delta_type)
        elif block.stopped:
            self.note("delta-after-stop", _lane(block, index), f"{delta_type} after block stop")
        if delta_type == "input_json_delta":
            self._append_input(block, index, delta.get("partial_json"))
        elif delta_type in TEXT_DELTAS:
            field, channel = TEXT_DELTAS[delta_type]
            if isinstance(delta.get(field), str):
                self.state.append_text(channel, delta[field])
        elif delta_type not in SILENT_DELTAS:
            self.note("unknown-delta", index, f"delta type {delta_type!r} ignored")

    def _adopt_unstarted_block(self, index: int | None, delta_type: str) -> Block:
        """A delta for a block that never started: keep what it carries anyway."""
        lane = self.free_lane(index) if index is not None else self.state.next_free_index()
        if delta_type != "input_json_delta":
            block = Block("text")
        else:
            block = Block("tool_use", self.state.start_call(lane, None, None, self.t))
            if index is not None:
                self.check_index_range(index, lane, "content block index")
        if index is not None:
            self._blocks[index] = block
        self.note("delta-without-start", lane, f"{delta_type} for block {index} that never started")
        return block

    def _append_input(self, block: Block, index: int | None, partial: Any) -> None:
        if block.slot is None:
            self.note("delta-type-mismatch", index, f"input_json_delta for a {block.kind} block")
            return
        if not isinstance(partial, str):
            self.note("arguments-object", block.slot.index, "partial_json is not a string")
            partial = compact_json(partial)
        block.got_delta = True
        self.state.append_fragment(block.slot, partial, self.event, self.t)

    def _on_block_stop(self, payload: dict[str, Any]) -> None:
        index = as_int(payload.get("index"))
        block = self._blocks.get(index) if index is not None else None
        if block is None:
            self.note("stop-without-start", index, f"content_block_stop for unknown block {index}")
            return
        if block.stopped:
            self.note("block-stopped-twice", _lane(block, index), f"block {index} stopped again")
        self._close_block(index, block)

    def _close_block(self, index: int | None, block: Block) -> None:
        block.stopped = True
        self._settle_start_input(index, block)

    def _settle_start_input(self, index: int | None, block: Block) -> None:
        """A non-empty start input is the arguments unless deltas followed (the SDK
        then parses the deltas alone); taken once, when the block ends."""
        if block.input_settled or block.slot is None or block.start_input in (None, {}):
            return
        block.input_settled = True
        if block.got_delta:
            where = block.slot.started_in or "content_block_start"
            self.note(
                "start-input-with-deltas",
                block.slot.index,
                f"{where} carried an input and deltas followed; the deltas were used",
            )
        else:
            text = compact_json(block.start_input)
            self.state.append_fragment(block.slot, text, block.start_event, block.start_t)

    # -- message ----------------------------------------------------------------
    def _on_message_delta(self, payload: dict[str, Any]) -> None:
        reason = as_dict(payload.get("delta")).get("stop_reason")
        if isinstance(reason, str):
            self._check_stop_reason(reason)
            self.state.set_finish_reason(reason)

    def _check_stop_reason(self, reason: str) -> None:
        has_tools = any(block.slot for block in self._blocks.values())
        if reason == "tool_use" and not has_tools:
            self.note(
                "finish-tools-without-calls", None, 'stop_reason "tool_use" with no tool_use block'
            )
        if reason == "end_turn" and has_tools:
            self.note(
                "finish-stop-with-tools", None, 'stop_reason "end_turn" on a turn with tool calls'
            )

    def _on_message_stop(self, payload: dict[str, Any]) -> None:
        self._message_stopped = True
        for index, block in self._blocks.items():
            if not block.stopped:
                if not block.whole:
                    lane = _lane(block, index)
                    self.note("block-not-stopped", lane, f"block {index} never stopped")
                self._close_block(index, block)
        if self.state.finish_reason is None:
            self.note("stop-reason-missing", None, "message_stop without a stop_reason")
        self.state.finish(self.state.finish_reason, "message_stop")

    def _on_error(self, payload: dict[str, Any]) -> None:
        error = as_dict(payload.get("error"))
        detail = f"{error.get('type', 'error')}: {error.get('message', compact_json(payload))}"
        self.note("error-event", None, detail)
        self.state.fail(f"error in stream: {detail}")

    def _ignore(self, payload: dict[str, Any]) -> None:
        pass


def _lane(block: Block, index: int | None) -> int | None:
    return block.slot.index if block.slot is not None else index
