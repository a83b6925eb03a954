"""AWS Bedrock's ConverseStream and InvokeModelWithResponseStream event streams.

Both arrive as AWS event-stream frames (core/eventstream.py), one event per frame,
named by the frame's `:event-type`; each payload may carry a padding field `p`,
which means nothing.

ConverseStream: `messageStart`, then content blocks keyed by `contentBlockIndex`
(`contentBlockStart` only for a tool use, with its `toolUseId` and `name`; text and
reasoning blocks begin with their first `contentBlockDelta`), `contentBlockStop`,
`messageStop` with the `stopReason` (the finish), and `metadata` (usage) after it.
A tool's arguments are its `delta.toolUse.input` strings, appended.

InvokeModelWithResponseStream: `chunk` events whose `bytes` are the base64 of the
model provider's own event; Anthropic's are handed to the Anthropic dialect.

An exception frame (`throttlingException`, `modelStreamErrorException`, …) ends
the stream with its message.

The dialect is told by the event-stream media type at the head, else by the first
frame's event type, which no other dialect uses.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import CallSlot, StreamState
from ..strict_json import loads
from .anthropic import MESSAGE_EVENTS, AnthropicMessagesDialect
from .base import Dialect, as_dict, as_int, as_list, as_text, compact_json, excerpt

CONVERSE_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
CHUNK = "chunk"
ANTHROPIC_TYPES = MESSAGE_EVENTS | {"error"}
# What the event-stream framer names frames that are not events.
ERROR_PREFIXES = ("exception:", "error:")
TEXT_DELTAS = {"text": Channel.CONTENT}
# Delta members that carry nothing shown: a reasoning block's signature or redacted
# (encrypted) content, citations, tool results, images.
SILENT_DELTAS = frozenset({"citation", "toolResult", "image"})
SILENT_REASONING = frozenset({"signature", "redactedContent"})
EVENTSTREAM_MEDIA = "application/vnd.amazon.eventstream"


class Block:
    __slots__ = ("slot", "stopped")

    def __init__(self, slot: CallSlot | None = None) -> None:
        self.slot = slot  # a tool use's call; None for text and reasoning
        self.stopped = False


class BedrockDialect(Dialect):
    name = "bedrock"
    anomaly_kinds = frozenset(
        {
            "arguments-object",
            "block-index-reused",
            "block-not-stopped",
            "block-stopped-twice",
            "chunk-undecodable",
            "data-after-stop",
            "delta-after-stop",
            "delta-type-mismatch",
            "delta-without-start",
            "finish-stop-with-tools",
            "finish-tools-without-calls",
            "id-missing",
            "index-missing",
            "name-missing",
            "stop-reason-missing",
            "stop-without-start",
        }
    )

    @classmethod
    def claims_head(cls, media_type: str, headers: Mapping[str, str]) -> bool:
        return media_type == EVENTSTREAM_MEDIA

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        name = event.event
        return name in CONVERSE_EVENTS or name == CHUNK or name.startswith(ERROR_PREFIXES)

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        return isinstance(as_dict(body.get("output")).get("message"), dict)

    def __init__(self, state: StreamState) -> None:
        super().__init__(state)
        self._blocks: dict[int, Block] = {}
        self._stopped = False  # messageStop arrived
        self._anthropic: AnthropicMessagesDialect | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "messageStart": self._ignore,
            "contentBlockStart": self._on_block_start,
            "contentBlockDelta": self._on_block_delta,
            "contentBlockStop": self._on_block_stop,
            "messageStop": self._on_message_stop,
            "metadata": self._ignore,
        }

    def handle(self, event: SSEEvent) -> None:
        name = event.event
        if name.startswith(ERROR_PREFIXES):
            self._on_exception(name, event.data)
            return
        if name == CHUNK:
            self._on_chunk(event)
            return
        handler = self._handlers.get(name)
        if handler is None:
            self.note("unknown-event", None, f"event type {excerpt(name, 60)!r} ignored")
            return
        payload = self.payload(event)
        if payload is None:
            return
        if self._stopped and name != "metadata":
            self.note("data-after-stop", None, f"{name} arrived after messageStop")
        handler(payload)

    def on_completion(self, body: Any) -> None:
        """A non-streaming Converse response: `output.message.content[]` blocks."""
        body = as_dict(body)
        content = as_list(as_dict(as_dict(body.get("output")).get("message")).get("content"))
        for block in content:
            self._on_complete_block(as_dict(block))
        reason = as_text(body.get("stopReason"))
        self._check_stop_reason(reason)
        self.state.finish(reason, "complete response")

    def _on_complete_block(self, block: dict[str, Any]) -> None:
        if isinstance(block.get("text"), str):
            self.state.append_text(Channel.CONTENT, block["text"])
        reasoning = as_dict(as_dict(block.get("reasoningContent")).get("reasoningText"))
        if isinstance(reasoning.get("text"), str):
            self.state.append_text(Channel.REASONING, reasoning["text"])
        if "toolUse" in block:
            tool = as_dict(block["toolUse"])
            slot = self._start_tool(self.state.next_free_index(), tool)
            if tool.get("input") is not None:
                self.state.append_fragment(slot, compact_json(tool["input"]), self.event, self.t)

    def on_end(self) -> None:
        if self._anthropic is not None:
            self._anthropic.on_end()

    def settle(self, hint: Any = None) -> None:
        if self._anthropic is not None:
            self._anthropic.settle(hint)

    # -- content blocks -------------------------------------------------------------
    def _index(self, payload: dict[str, Any], what: str) -> int | None:
        index = as_int(payload.get("contentBlockIndex"))
        if index is None:
            self.note("index-missing", None, f"{what} without an integer contentBlockIndex")
        return index

    def _on_block_start(self, payload: dict[str, Any]) -> None:
        index = self._index(payload, "contentBlockStart")
        start = as_dict(payload.get("start"))
        previous = self._blocks.get(index) if index is not None else None
        if previous is not None:
            lane = _lane(previous, index)
            self.note("block-index-reused", lane, f"content block {index} started again")
        if "toolUse" not in start:
            block = Block()  # a tool result or an image: nothing this tool shows
        else:
            lane = self.free_lane(index) if index is not None else self.state.next_free_index()
            block = Block(self._start_tool(lane, as_dict(start["toolUse"])))
            if index is not None:
                self.check_index_range(index, lane, "contentBlockIndex")
        if index is not None:
            self._blocks[index] = block

    def _start_tool(self, lane: int, tool: dict[str, Any]) -> CallSlot:
        call_id, name = as_text(tool.get("toolUseId")), as_text(tool.get("name"))
        slot = self.state.start_call(lane, call_id, name, self.t)
        if call_id is None:
            self.note("id-missing", lane, "the tool use has no toolUseId")
        if name is None:
            self.note("name-missing", lane, "the tool use has no name")
        return slot

    def _on_block_delta(self, payload: dict[str, Any]) -> None:
        if self._took_tool_input(payload):
            return
        index = self._index(payload, "contentBlockDelta")
        delta = as_dict(payload.get("delta"))
        block = self._block_for_delta(index, delta)
        for key, value in delta.items():
            if key == "toolUse":
                self._append_input(block, index, as_dict(value).get("input"))
            elif key == "reasoningContent":
                self._append_reasoning(as_dict(value))
            elif key in TEXT_DELTAS and isinstance(value, str):
                self.state.append_text(TEXT_DELTAS[key], value)
            elif key not in SILENT_DELTAS:
                self.note("unknown-delta", index, f"delta member {excerpt(key, 60)!r} ignored")

    def _took_tool_input(self, payload: dict[str, Any]) -> bool:
        """The usual delta, in fewer steps (once per fragment): a string of tool input
        for an open tool block. Anything else is left to the general path."""
        index, delta = payload.get("contentBlockIndex"), payload.get("delta")
        if type(index) is not int or type(delta) is not dict or len(delta) != 1:
            return False
        block, tool = self._blocks.get(index), delta.get("toolUse")
        if block is None or block.slot is None or block.stopped or type(tool) is not dict:
            return False
        fragment = tool.get("input")
        if type(fragment) is not str:
            return False
        self.state.append_fragment(block.slot, fragment, self.event, self.t)
        return True

    def _block_for_delta(self, index: int | None, delta: dict[str, Any]) -> Block:
        """The delta's block; text and reasoning blocks begin with their first delta,
        a tool's input without its start is kept in a lane of its own."""
        block = self._blocks.get(index) if index is not None else None
        if block is not None:
            if block.stopped:
                lane = _lane(block, index)
                self.note("delta-after-stop", lane, f"a delta for block {index} after its stop")
            return block
        block = Block()
        if "toolUse" in delta:
            lane = self.free_lane(index) if index is not None else self.state.next_free_index()
            block.slot = self.state.start_call(lane, None, None, self.t)
            self.note("delta-without-start", lane, f"tool input for block {index}, never started")
        if index is not None:
            self._blocks[index] = block
        return block

    def _append_input(self, block: Block, index: int | None, fragment: Any) -> None:
        if block.slot is None:
            self.note("delta-type-mismatch", index, f"tool input for block {index}, not a tool")
            return
        if not isinstance(fragment, str):
            self.note("arguments-object", block.slot.index, "toolUse.input is not a string")
            fragment = compact_json(fragment)
        self.state.append_fragment(block.slot, fragment, self.event, self.t)

    def _append_reasoning(self, reasoning: dict[str, Any]) -> None:
        for key, value in reasoning.items():
            if key == "text" and isinstance(value, str):
                self.state.append_text(Channel.REASONING, value)
            elif key not in SILENT_REASONING:
                shown = excerpt(key, 60)
                self.note("unknown-delta", None, f"reasoningContent member {shown!r} ignored")

    def _on_block_stop(self, payload: dict[str, Any]) -> None:
        index = self._index(payload, "contentBlockStop")
        block = self._blocks.get(index) if index is not None else None
        if block is None:
            self.note("stop-without-start", index, f"contentBlockStop for unknown block {index}")
            return
        if block.stopped:
            self.note("block-stopped-twice", _lane(block, index), f"block {index} stopped again")
        block.stopped = True

    # -- the message ------------------------------------------------------------------
    def _on_message_stop(self, payload: dict[str, Any]) -> None:
        self._stopped = True
        for index, block in self._blocks.items():
            if not block.stopped:
                self.note("block-not-stopped", _lane(block, index), f"block {index} never stopped")
                block.stopped = True
        reason = as_text(payload.get("stopReason"))
        if reason is None:
            self.note("stop-reason-missing", None, "messageStop without a stopReason")
        self._check_stop_reason(reason)
        self.state.finish(reason, "messageStop")

    def _check_stop_reason(self, reason: str | None) -> None:
        has_tools = bool(self.state.calls)
        if reason == "tool_use" and not has_tools:
            self.note("finish-tools-without-calls", None, 'stopReason "tool_use" with no tool use')
        if reason == "end_turn" and has_tools:
            self.note("finish-stop-with-tools", None, 'stopReason "end_turn" with tool uses')

    def _on_exception(self, name: str, data: str) -> None:
        kind = name.partition(":")[2] or name.partition(":")[0]
        try:
            body = loads(data)
        except ValueError:
            body = None
        fields = as_dict(body)
        message = fields.get("message", fields.get("Message"))
        detail = f"{kind}: {message if isinstance(message, str) else excerpt(data)}"
        if "originalStatusCode" in fields or "originalMessage" in fields:
            status, said = fields.get("originalStatusCode", "?"), fields.get("originalMessage", "")
            detail += f" (the model's own error: {status} {said})"
        self.note("error-event", None, detail)
        self.state.fail(f"error in stream: {detail}")

    # -- InvokeModelWithResponseStream ------------------------------------------------
    def _on_chunk(self, event: SSEEvent) -> None:
        payload = self.payload(event)
        if payload is None:
            return
        encoded = payload.get("bytes")
        if not isinstance(encoded, str):
            self.note("unexpected-shape", None, f"chunk {event.number} has no base64 bytes")
            return
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            self.note("chunk-undecodable", None, f"chunk bytes are not base64: {excerpt(encoded)}")
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.note("chunk-undecodable", None, f"chunk bytes are not UTF-8: {excerpt(encoded)}")
            return
        self._to_anthropic(SSEEvent(event.number, "", text, None, None))

    def _to_anthropic(self, event: SSEEvent) -> None:
        """A provider event decoded from a chunk: Anthropic's go to its dialect."""
        try:
            decoded = loads(event.data)
        except ValueError:
            decoded = None  # the Anthropic dialect names it
        kind = decoded.get("type") if isinstance(decoded, dict) else None
        if isinstance(decoded, dict) and not (isinstance(kind, str) and kind in ANTHROPIC_TYPES):
            shown = excerpt(compact_json(kind), 60)
            self.note("unknown-event", None, f"a chunk of type {shown} (not Anthropic's) ignored")
            return
        if self._anthropic is None:
            self._anthropic = AnthropicMessagesDialect(self.state)
        self._anthropic.on_event(event, self.t)

    def _ignore(self, payload: dict[str, Any]) -> None:
        pass


def _lane(block: Block, index: int | None) -> int | None:
    return block.slot.index if block.slot is not None else index
