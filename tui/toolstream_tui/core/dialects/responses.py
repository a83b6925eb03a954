"""OpenAI Responses dialect: output items keyed by `output_index`.

A function_call item's lane is its output_index, its id the item's `call_id`
(the `fc_…` item id is kept too). Its fragments are the
`function_call_arguments.delta` events, or `.done`'s when only `.done` carries
them. The finish is `response.completed`, `.incomplete` or `.failed`.

The server restates every finished value: the arguments in
`function_call_arguments.done`, `output_item.done` and the final response's
`output`; the text in `output_text.done`, `content_part.done`, `output_item.done`
and the final response. The last of these words is the answer (as the official
SDK takes it); the deltas stay as they arrived, and a `done-mismatch` says where
the two part. Nothing after the response ended joins the answer.

An event names its item by `item_id` and `output_index`. Some servers (GitHub
Copilot) give one item a new id on every event; as the official SDK routes by
`output_index`, an id never seen falls back to the item at that index (noted once
per item as `item-id-changed`), and the final response's items are matched by the
ids `output_item.done` gave, else by position.
"""

from __future__ import annotations

from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import CallSlot
from .base import (
    Dialect,
    as_dict,
    as_int,
    as_list,
    as_text,
    compact_json,
    excerpt,
    gap_detail,
    mismatch_detail,
)
from .chat import DONE

TEXT_EVENTS = {
    "response.output_text.delta": Channel.CONTENT,
    "response.refusal.delta": Channel.REFUSAL,
    "response.reasoning_summary_text.delta": Channel.REASONING,
    "response.reasoning_text.delta": Channel.REASONING,
}


class TextPart:
    """One output_text content part: its deltas as they came, and the server's final word."""

    __slots__ = ("deltas", "final")

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.final: str | None = None

    @property
    def streamed(self) -> str:
        return "".join(self.deltas)

    @property
    def answer(self) -> str:
        return self.streamed if self.final is None else self.final


class Item:
    __slots__ = (
        "arguments_done",
        "done",
        "final_source",
        "got_delta",
        "id_changed",
        "item_id",
        "kind",
        "parts",
        "slot",
    )

    def __init__(self, kind: str, item_id: str | None) -> None:
        self.kind = kind
        self.item_id = item_id
        self.slot: CallSlot | None = None
        self.got_delta = False
        self.arguments_done = False
        self.done = False
        self.final_source: str | None = None  # the event that last restated the arguments
        self.id_changed = False  # an event named this item by another id (noted once)
        self.parts: dict[int, TextPart] = {}  # by content_index


class OpenAIResponsesDialect(Dialect):
    name = "openai-responses"
    anomaly_kinds = frozenset(
        {
            "data-after-completed",
            "delta-after-done",
            "delta-without-item",
            "done-mismatch",
            "done-without-item",
            "item-id-changed",
            "output-index-reused",
            "sequence-gap",
        }
    )

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        if event.event.startswith("response."):
            return True
        kind = payload.get("type") if payload is not None else None
        return isinstance(kind, str) and (kind.startswith("response.") or kind == "error")

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        return body.get("object") == "response"

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        kind = body.get("type")
        return isinstance(kind, str) and kind.startswith("response.")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._items: dict[int, Item] = {}
        self._by_item_id: dict[str, Item] = {}
        self._sequence: int | None = None
        self._response_ended = False
        self._parts: list[TextPart] = []  # every output_text part, in order of arrival
        self._loose_parts: dict[tuple[str | None, int | None], dict[int, TextPart]] = {}

    def handle(self, event: SSEEvent) -> None:
        data = event.data
        if data[-1:] == "]" and data.strip() == DONE:
            self._on_done_marker()
            return
        typed = self.typed_payload(event)
        if typed is None:
            return
        kind, payload = typed
        self._check_sequence(payload)
        if self._response_ended:
            self.note("data-after-completed", None, f"{kind} arrived after the response ended")
            return
        if kind in TEXT_EVENTS:
            if isinstance(payload.get("delta"), str):
                if kind == "response.output_text.delta":
                    self._text_part(payload).deltas.append(payload["delta"])
                self.state.append_text(TEXT_EVENTS[kind], payload["delta"])
            return
        handler = {
            "response.output_item.added": self._on_item_added,
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.output_text.done": self._on_text_done,
            "response.content_part.done": self._on_part_done,
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
            self._finish_item(self._items[output_index], item, "the response")
        self.state.finish(_final_status(body), "complete response")

    def settle(self, hint: Any = None) -> None:
        """The stream is over: where the server restated a text part differently, the
        answer's text is rebuilt from its final words (once, here: linear)."""
        if any(part.final is not None and part.final != part.streamed for part in self._parts):
            self.state.final_text = "".join(part.answer for part in self._parts)

    # -- items ------------------------------------------------------------------
    def _on_item_added(self, payload: dict[str, Any]) -> None:
        output_index = as_int(payload.get("output_index"))
        if output_index is None:
            self.note("unexpected-shape", None, "output_item.added without an output_index")
            return
        gap = gap_detail("output_index", output_index, max(self._items, default=-1))
        self._add_item(output_index, as_dict(payload.get("item")))
        if gap:
            slot = self._items[output_index].slot
            self.note("index-gap", None if slot is None else slot.index, gap)

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

    def _known(self, payload: dict[str, Any]) -> Item | None:
        """The item an event refers to, by its item_id or else its output_index."""
        item_id = payload.get("item_id")
        found = self._by_item_id.get(item_id) if isinstance(item_id, str) else None
        output_index = as_int(payload.get("output_index"))
        if found is None and output_index is not None:
            found = self._items.get(output_index)
            if found is not None and not found.id_changed and isinstance(item_id, str) and item_id:
                where = f"{excerpt(str(payload.get('type')), 60)} at output_index {output_index}"
                self._check_id(found, item_id, where, "output_index")
        return found

    def _check_id(self, item: Item, item_id: str, where: str, matched_by: str) -> None:
        """An event named a known item by an id of its own: noted once per item (the
        ids are not kept, a server may send a new one with every delta)."""
        if item.item_id is None or item_id == item.item_id or item.id_changed:
            return
        item.id_changed = True
        lane = item.slot.index if item.slot is not None else None
        self.note(
            "item-id-changed",
            lane,
            f"item {excerpt(repr(item.item_id), 80)} is {excerpt(repr(item_id), 80)} in {where}; "
            f"matched by {matched_by}",
        )

    def _find(self, payload: dict[str, Any], what: str) -> Item:
        """The item an event refers to; an unknown one is adopted so nothing is lost."""
        found = self._known(payload)
        if found is not None:
            return found
        item_id = payload.get("item_id")
        output_index = as_int(payload.get("output_index"))
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
        body = as_dict(payload.get("item"))
        done_id = as_text(body.get("id"))
        if done_id is not None and done_id != item.item_id:
            # The final response names its items as output_item.done did.
            self._by_item_id.setdefault(done_id, item)
            where = f"response.output_item.done at output_index {output_index}"
            self._check_id(item, done_id, where, "output_index")
        self._finish_item(item, body, "output_item.done")

    def _finish_item(self, item: Item, body: dict[str, Any], source: str) -> None:
        if item.slot is not None:
            self._settle_arguments(item, body.get("arguments"), source)
        if item.kind == "message":
            for content_index, part in enumerate(as_list(body.get("content"))):
                self._settle_part_dict(item, content_index, as_dict(part), source)
        item.done = True

    def _settle_arguments(self, item: Item, arguments: Any, source: str) -> None:
        """The server restated the complete arguments: they become the call's final
        value (the fragments when no delta came), and a difference is reported."""
        if item.slot is None or arguments is None:
            return
        if not isinstance(arguments, str):
            arguments = compact_json(arguments)
        slot = item.slot
        if not item.got_delta and slot.length == 0:
            self.state.append_fragment(slot, arguments, self.event, self.t)
        if slot.final_raw is None:
            earlier, against = slot.arguments_raw, "the joined deltas"
        else:
            earlier, against = slot.final_raw, str(item.final_source)
        if arguments != earlier:
            detail = mismatch_detail("arguments", source, against, arguments, earlier)
            self.note("done-mismatch", slot.index, detail)
        slot.final_raw = arguments
        item.final_source = source

    # -- text parts ---------------------------------------------------------------
    def _text_part(self, payload: dict[str, Any]) -> TextPart:
        """The part a text event refers to (parts of items never added are kept apart)."""
        content_index = as_int(payload.get("content_index")) or 0
        item = self._known(payload)
        if item is not None:
            return self._part_of(item.parts, content_index)
        item_id, output_index = payload.get("item_id"), as_int(payload.get("output_index"))
        key = (item_id if isinstance(item_id, str) else None, output_index)
        return self._part_of(self._loose_parts.setdefault(key, {}), content_index)

    def _part_of(self, parts: dict[int, TextPart], content_index: int) -> TextPart:
        part = parts.get(content_index)
        if part is None:
            part = parts[content_index] = TextPart()
            self._parts.append(part)
        return part

    def _on_text_done(self, payload: dict[str, Any]) -> None:
        self._settle_text(self._text_part(payload), payload.get("text"), "output_text.done")

    def _on_part_done(self, payload: dict[str, Any]) -> None:
        part = as_dict(payload.get("part"))
        if part.get("type") == "output_text":
            self._settle_text(self._text_part(payload), part.get("text"), "content_part.done")

    def _settle_part_dict(
        self, item: Item, content_index: int, part: dict[str, Any], source: str
    ) -> None:
        if part.get("type") == "output_text":
            self._settle_text(self._part_of(item.parts, content_index), part.get("text"), source)

    def _settle_text(self, part: TextPart, text: Any, source: str) -> None:
        """The server restated a part's complete text: it becomes the part's answer
        (shown as text when no delta came), and a difference is reported."""
        if not isinstance(text, str):
            return
        if not part.deltas and part.final is None:
            part.deltas.append(text)
            self.state.append_text(Channel.CONTENT, text)
        earlier = part.streamed if part.final is None else part.final
        if text != earlier:
            against = "the joined deltas" if part.final is None else "an earlier final text"
            self.note(
                "done-mismatch", None, mismatch_detail("text", source, against, text, earlier)
            )
        part.final = text

    # -- the response -----------------------------------------------------------
    def _on_completed(self, payload: dict[str, Any]) -> None:
        response = as_dict(payload.get("response"))
        self._end_response(response, _final_status(response) or "completed", "response.completed")

    def _on_incomplete(self, payload: dict[str, Any]) -> None:
        response = as_dict(payload.get("response"))
        status = _final_status(response) or "incomplete"
        self._end_response(response, status, "response.incomplete")

    def _on_failed(self, payload: dict[str, Any]) -> None:
        response = as_dict(payload.get("response"))
        error = as_dict(response.get("error"))
        message = error.get("message") or "the response failed"
        self.note("error-event", None, f"response.failed: {message}")
        self.state.fail(f"response failed: {message}")
        self._end_response(response, "failed", "response.failed")

    def _end_response(self, response: dict[str, Any], status: str, source: str) -> None:
        """The final response restates its output items: they settle the answer before
        every call is parsed."""
        for position, body in enumerate(as_list(response.get("output"))):
            self._settle_output_item(position, as_dict(body), source)
        self._response_ended = True
        self.state.finish(status, "response end")

    def _settle_output_item(self, position: int, body: dict[str, Any], source: str) -> None:
        """An item of the final response: the streamed item with its id, else the one at
        its position when neither id says otherwise (or its ids were seen to change, or
        it is the same call); one never streamed is kept apart."""
        item_id = as_text(body.get("id"))
        item = self._by_item_id.get(item_id) if item_id else None
        at_position = self._items.get(position)
        if item is None and at_position is not None and _same_item(at_position, item_id, body):
            item = at_position
            if item_id is not None:
                self._check_id(item, item_id, source, f"its position ({position})")
        if item is None:
            if body.get("type") not in ("function_call", "message"):
                return
            key = position if position not in self._items else max(self._items) + 1
            self._add_item(key, body)
            item = self._items[key]
            lane = item.slot.index if item.slot is not None else None
            self.note("done-without-item", lane, f"{source} lists item {item_id!r}, never added")
        self._finish_item(item, body, source)

    def _on_done_marker(self) -> None:
        """`data: [DONE]` ends chat completions; some proxies (LiteLLM) send it after a
        Responses stream too. It is not JSON, and not part of this dialect."""
        if self._response_ended:
            self.note("data-after-completed", None, "data: [DONE] after the response ended")
        else:
            self.note("unknown-event", None, "data: [DONE] is not a Responses event (ignored)")

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


def _same_item(streamed: Item, item_id: str | None, body: dict[str, Any]) -> bool:
    """Is a final item with an id not seen in the stream the streamed item at its
    position? Only when the ids cannot tell them apart: one is missing, or the
    streamed item's id already changed; a function call with the same call_id is
    the same call (the official SDK matches function calls by call_id)."""
    if streamed.kind != body.get("type"):
        return False
    if item_id is None or streamed.item_id is None or streamed.id_changed:
        return True
    call_id = as_text(body.get("call_id"))
    return streamed.slot is not None and call_id is not None and call_id == streamed.slot.call_id


def _final_status(response: dict[str, Any]) -> str | None:
    status = response.get("status")
    if status == "incomplete":
        reason = as_dict(response.get("incomplete_details")).get("reason")
        return f"incomplete:{reason}" if reason else "incomplete"
    return status if isinstance(status, str) else None
