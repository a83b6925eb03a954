"""OpenAI Responses dialect: output items keyed by `output_index`.

A function_call item's lane is its output_index, its id the item's `call_id`
(the `fc_…` item id is kept too). Its arguments are the concatenated
`function_call_arguments.delta` events, or `.done`'s when only `.done` carries
them. The finish is `response.completed`, `.incomplete` or `.failed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .dialect import Dialect, as_dict, as_int, as_list, as_text, compact_json, preview
from .events import Channel
from .sse import SSEEvent
from .state import CallSlot

TEXT_EVENTS = {
    "response.output_text.delta": Channel.CONTENT,
    "response.refusal.delta": Channel.REFUSAL,
    "response.reasoning_summary_text.delta": Channel.REASONING,
    "response.reasoning_text.delta": Channel.REASONING,
}


@dataclass(slots=True)
class Item:
    kind: str
    item_id: str | None
    slot: CallSlot | None = None
    got_delta: bool = False
    arguments_done: bool = False
    done: bool = False
    mismatch_noted: bool = False


class OpenAIResponsesDialect(Dialect):
    name = "openai-responses"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._items: dict[int, Item] = {}
        self._by_item_id: dict[str, Item] = {}
        self._sequence: int | None = None
        self._response_ended = False

    def handle(self, event: SSEEvent) -> None:
        typed = self.typed_payload(event)
        if typed is None:
            return
        kind, payload = typed
        self._check_sequence(payload)
        if self._response_ended:
            self.note("data-after-completed", None, f"{kind} arrived after the response ended")
        if kind in TEXT_EVENTS:
            if isinstance(payload.get("delta"), str):
                self.state.append_text(TEXT_EVENTS[kind], payload["delta"])
            return
        handler = {
            "response.output_item.added": self._on_item_added,
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.output_item.done": self._on_item_done,
            "response.completed": self._on_completed,
            "response.incomplete": self._on_incomplete,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }.get(kind)
        if handler is not None:
            handler(payload)
        elif not kind.startswith("response."):
            self.note("unknown-event", None, f"event type {kind!r} ignored")

    def on_completion(self, body: Any) -> None:
        """A non-streaming `response` object: its output items are complete."""
        body = as_dict(body)
        if body.get("error"):
            self._on_error(body)
            return
        for output_index, item in enumerate(as_list(body.get("output"))):
            item = as_dict(item)
            self._add_item(output_index, item)
            self._finish_item(self._items[output_index], item)
            for part in as_list(item.get("content")):
                part = as_dict(part)
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    self.state.append_text(Channel.CONTENT, part["text"])
        self.state.finish(_final_status(body), "complete response")

    # -- items ------------------------------------------------------------------
    def _on_item_added(self, payload: dict[str, Any]) -> None:
        output_index = as_int(payload.get("output_index"))
        if output_index is None:
            self.note("unexpected-shape", None, "output_item.added without an output_index")
            return
        self._add_item(output_index, as_dict(payload.get("item")))

    def _add_item(self, output_index: int, item: dict[str, Any]) -> None:
        reused = output_index in self._items
        kind = str(item.get("type"))
        entry = Item(kind, as_text(item.get("id")))
        lane = output_index
        if kind == "function_call":
            lane = self.free_lane(output_index)
            entry.slot = self.state.start_call(
                lane, as_text(item.get("call_id")), as_text(item.get("name")), self.t, entry.item_id
            )
            self.check_index_range(output_index, lane, "output_index")
        if reused:
            self.note("output-index-reused", lane, f"output_index {output_index} added again")
        self._items[output_index] = entry
        if entry.item_id:
            self._by_item_id[entry.item_id] = entry

    def _find(self, payload: dict[str, Any], what: str) -> Item:
        """The item an event refers to; an unknown one is adopted so nothing is lost."""
        item_id = payload.get("item_id")
        output_index = as_int(payload.get("output_index"))
        found = self._by_item_id.get(item_id) if isinstance(item_id, str) else None
        if found is None and output_index is not None:
            found = self._items.get(output_index)
        if found is not None:
            return found
        key = output_index if output_index is not None else max(self._items, default=-1) + 1
        self._add_item(key, {"type": "function_call", "id": item_id})
        adopted = self._items[key]
        lane = adopted.slot.index if adopted.slot is not None else key
        self.note("delta-without-item", lane, f"{what} for item {item_id!r} that was never added")
        return adopted

    def _on_arguments_delta(self, payload: dict[str, Any]) -> None:
        item = self._find(payload, "arguments delta")
        if item.slot is None:
            self.note("delta-type-mismatch", None, f"arguments delta for a {item.kind} item")
            return
        if item.done or item.arguments_done:
            self.note(
                "delta-after-done", item.slot.index, "arguments delta after the item was done"
            )
        delta = payload.get("delta")
        if not isinstance(delta, str):
            self.note("arguments-object", item.slot.index, "delta is not a string; serialised")
            delta = compact_json(delta)
        item.got_delta = True
        self.state.append_fragment(item.slot, delta, self.event, self.t)

    def _on_arguments_done(self, payload: dict[str, Any]) -> None:
        item = self._find(payload, "arguments done")
        self._settle_arguments(item, payload.get("arguments"), "function_call_arguments.done")
        item.arguments_done = True

    def _on_item_done(self, payload: dict[str, Any]) -> None:
        output_index = as_int(payload.get("output_index"))
        item = self._items.get(output_index) if output_index is not None else None
        if item is None:
            self.note("done-without-item", output_index, "output_item.done for an unknown item")
            return
        self._finish_item(item, as_dict(payload.get("item")))

    def _finish_item(self, item: Item, body: dict[str, Any]) -> None:
        if item.slot is not None:
            self._settle_arguments(item, body.get("arguments"), "output_item.done")
        item.done = True

    def _settle_arguments(self, item: Item, arguments: Any, source: str) -> None:
        """Final arguments from a done event: used when no delta came, compared otherwise."""
        if item.slot is None or arguments is None:
            return
        if not isinstance(arguments, str):
            arguments = compact_json(arguments)
        slot = item.slot
        if not item.got_delta and slot.length == 0:
            self.state.append_fragment(slot, arguments, self.event, self.t)
        elif arguments != slot.arguments_raw and not item.mismatch_noted:
            item.mismatch_noted = True
            self.note(
                "done-mismatch",
                slot.index,
                f"{source} says {preview(arguments, 80)!r}; the deltas joined to "
                f"{preview(slot.arguments_raw, 80)!r} (deltas kept)",
            )

    # -- the response -----------------------------------------------------------
    def _on_completed(self, payload: dict[str, Any]) -> None:
        self._end_response(_final_status(as_dict(payload.get("response"))) or "completed")

    def _on_incomplete(self, payload: dict[str, Any]) -> None:
        self._end_response(_final_status(as_dict(payload.get("response"))) or "incomplete")

    def _on_failed(self, payload: dict[str, Any]) -> None:
        response = as_dict(payload.get("response"))
        error = as_dict(response.get("error"))
        message = error.get("message") or "the response failed"
        self.note("error-event", None, f"response.failed: {message}")
        self.state.fail(f"response failed: {message}")
        self._end_response("failed")

    def _end_response(self, status: str) -> None:
        self._response_ended = True
        self.state.finish(status, "response end")

    def _on_error(self, payload: dict[str, Any]) -> None:
        error = as_dict(payload.get("error")) or payload
        code = error.get("code") or "error"
        detail = f"{code}: {error.get('message', compact_json(payload))}"
        self.note("error-event", None, detail)
        self.state.fail(f"error in stream: {detail}")

    def _check_sequence(self, payload: dict[str, Any]) -> None:
        number = as_int(payload.get("sequence_number"))
        if number is None:
            return
        expected = 0 if self._sequence is None else self._sequence + 1
        if number != expected:
            self.note("sequence-gap", None, f"sequence_number {number} where {expected} was due")
        self._sequence = number


def _final_status(response: dict[str, Any]) -> str | None:
    status = response.get("status")
    if status == "incomplete":
        reason = as_dict(response.get("incomplete_details")).get("reason")
        return f"incomplete:{reason}" if reason else "incomplete"
    return status if isinstance(status, str) else None
