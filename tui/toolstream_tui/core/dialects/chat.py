"""OpenAI chat-completions dialect: `choices[].delta.tool_calls[]` keyed by `index`.

Maps each wire fragment to a lane (a slot in `StreamState.calls`) and names every
way the stream departs from the textbook shape. Lane numbers equal the provider's
`index` unless the provider reuses or omits indexes; then a new call takes the
next free lane.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import CallSlot, StreamState
from ..strict_json import loads, loads_envelope
from .base import Dialect, as_list, as_text, compact_json, excerpt, gap_detail, index_in_range

DONE = "[DONE]"
CHUNK_OBJECT = "chat.completion.chunk"
TEXT_CHANNELS = {
    "content": Channel.CONTENT,
    "reasoning_content": Channel.REASONING,
    "reasoning": Channel.REASONING,
    "refusal": Channel.REFUSAL,
}


def _may_carry_arguments_object(data: str) -> bool:
    """Arguments sent as an object are passed on, so their chunk must decode exactly
    (see strict_json); string arguments, the usual case, need not."""
    return '"arguments"' in data and '"arguments":"' not in data and '"arguments": "' not in data


def _tool_fragments(chunk: Any) -> Iterator[Any]:
    """Every `tool_calls` item of a chunk, in the order `on_chunk` meets them."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    for choice in choices if isinstance(choices, list) else ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        tool_calls = delta.get("tool_calls") if isinstance(delta, dict) else None
        yield from tool_calls if isinstance(tool_calls, list) else ()


class ChatCompletionsDialect(Dialect):
    name = "openai-chat"
    anomaly_kinds = frozenset(
        {
            "arguments-object",
            "data-after-done",
            "done-missing",
            "extra-choice",
            "finish-missing",
            "finish-stop-with-tools",
            "finish-tools-without-calls",
            "id-changed",
            "id-late",
            "id-missing",
            "id-repeated",
            "index-missing",
            "index-reused",
            "name-changed",
            "name-late",
            "name-missing",
            "name-repeated",
        }
    )

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        if payload is None:
            return event.data.strip() == DONE
        return "choices" in payload or str(payload.get("object", "")).startswith("chat.completion")

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        return "choices" in body or str(body.get("object", "")).startswith("chat.completion")

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        """A `chat.completion.chunk`; without an `object`, a choice with a `delta`
        (a completion's choice has a `message`)."""
        if "object" in body:
            return isinstance(body["object"], str) and body["object"] == CHUNK_OBJECT
        choices = body.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        return isinstance(first, dict) and "delta" in first and "message" not in first

    def __init__(self, state: StreamState) -> None:
        super().__init__(state)
        self._lane_of_index: dict[int, int] = {}
        self._slot_of_id: dict[str, CallSlot] = {}  # the first call that had each id
        self._highest_index = -1
        self._latest: CallSlot | None = None
        self._lanes_seen: set[int] = set()
        self._done = False
        self._complete_response = False
        self._data = ""  # the event being handled, and what it decoded to
        self._chunk: Any = None

    # -- entry points ---------------------------------------------------------
    def on_event(self, event: SSEEvent, t: float) -> None:
        # The hottest path of all (once per SSE event), so `handle` is inlined here.
        self.event, self.t = event.number, t
        data = event.data
        if self._done:
            self.note("data-after-done", None, f"event {event.number} arrived after [DONE]")
        if data[-1:] == "]" and data.strip() == DONE:
            self._on_done()
            return
        exact = _may_carry_arguments_object(data)
        try:
            chunk = loads(data) if exact else loads_envelope(data)
        except ValueError:
            self.note("data-not-json", None, f"event {event.number}: {excerpt(data)!r}")
            return
        self._data, self._chunk = data, chunk  # kept for _exact_index
        self.on_chunk(chunk)

    def on_chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            self.note("unexpected-shape", None, f"data is not an object: {excerpt(str(chunk))}")
            return
        if chunk.get("error"):
            self._on_error(chunk["error"])
            return
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            self.note("unexpected-shape", None, "chunk has no choices list")
            return
        for choice in choices:
            if type(choice) is not dict:
                self.note("unexpected-shape", None, "choice is not an object")
            elif choice.get("index", 0) != 0:
                self.note("extra-choice", None, f"choice {choice.get('index')!r} ignored (n > 1)")
            else:
                delta = choice.get("delta")
                if type(delta) is dict:
                    self._on_delta(delta)
                reason = choice.get("finish_reason")
                if reason is not None:
                    self._on_finish_reason(str(reason))

    def on_completion(self, body: Any) -> None:
        """A non-streaming `chat.completion`: its tool calls arrive complete, so they
        need no accumulator and none of the streaming checks apply."""
        self._complete_response = True
        if isinstance(body, dict) and body.get("error"):
            self._on_error(body["error"])
            return
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            self.state.fail("JSON response is not a chat completion (no choices)")
            return
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        for key, channel in TEXT_CHANNELS.items():
            if isinstance(message.get(key), str):
                self.state.append_text(channel, message[key])
        for call in as_list(message.get("tool_calls")):
            self._on_complete_call(call if isinstance(call, dict) else {})
        reason = choices[0].get("finish_reason")
        self.state.finish(None if reason is None else str(reason), "complete response")

    def _on_complete_call(self, call: dict[str, Any]) -> None:
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        lane = self.state.next_free_index()
        call_id, name = as_text(call.get("id")), as_text(function.get("name"))
        slot = self._new_call(lane, call_id, name)
        arguments = function.get("arguments")
        if type(arguments) is not str:
            arguments = self._arguments_text(slot, arguments)
        self.state.append_fragment(slot, arguments, 0, self.t)

    def on_end(self) -> None:
        if self._complete_response:
            return
        if self.state.finished and not self._done and self.state.error is None:
            self.note("done-missing", None, "stream ended without data: [DONE]")
        for slot in self.state.calls.values():
            if slot.call_id is None:
                self.note("id-missing", slot.index, "the call never received an id")
            if slot.name is None:
                self.note("name-missing", slot.index, "the call never received a function name")

    # -- pieces ---------------------------------------------------------------
    def _on_done(self) -> None:
        self._done = True
        if not self.state.finished:
            self.note("finish-missing", None, "[DONE] arrived without a finish_reason")
            self.state.finish(None, DONE)

    def _on_error(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        # A message that is not text is shown as JSON (compact_json bounds what str()
        # of a value nested a thousand deep would not).
        detail = message if isinstance(message, str) and message else compact_json(message or error)
        self.note("error-event", None, detail)
        self.state.fail(f"error in stream: {detail}")

    def _on_delta(self, delta: dict[str, Any]) -> None:
        for key, value in delta.items():
            channel = TEXT_CHANNELS.get(key)
            if channel is not None and type(value) is str:
                self.state.append_text(channel, value)
        tool_calls = delta.get("tool_calls")
        if type(tool_calls) is list:
            for fragment in tool_calls:
                if type(fragment) is dict:
                    self._on_tool_fragment(fragment)
                else:
                    self.note("unexpected-shape", None, "tool_calls item is not an object")

    def _on_finish_reason(self, reason: str) -> None:
        if self.state.finished and reason == self.state.finish_reason:
            return
        if reason == "stop" and self.state.calls:
            self.note(
                "finish-stop-with-tools", None, 'finish_reason "stop" on a turn with tool calls'
            )
        if reason == "tool_calls" and not self.state.calls:
            self.note(
                "finish-tools-without-calls", None, 'finish_reason "tool_calls" but no tool calls'
            )
        self.state.finish(reason, "finish_reason")

    # -- tool-call fragments --------------------------------------------------
    def _on_tool_fragment(self, fragment: dict[str, Any]) -> None:
        function = fragment.get("function")
        if type(function) is not dict:
            function = {}
        call_id = fragment.get("id")  # absent on most fragments: skip the conversion
        call_id = None if call_id is None else as_text(call_id)
        name = function.get("name")
        name = None if name is None else as_text(name)
        index = fragment.get("index")
        if type(index) is float:
            index = self._exact_index(fragment, index)
        if type(index) is int:
            lane = self._lane_of_index.get(index)
            if lane is not None and call_id is None:  # the usual continuation fragment
                slot = self.state.calls[lane]
            else:
                slot = self._slot_by_index(index, call_id, name)
        else:
            slot = self._slot_without_index(call_id, name, index)
        if call_id or name:
            is_new = slot.index not in self._lanes_seen
            self._check_identity(slot, call_id, name, is_new)
        self._lanes_seen.add(slot.index)
        self._latest = slot
        arguments = function.get("arguments")
        if type(arguments) is not str:
            arguments = self._arguments_text(slot, arguments)
        self.state.append_fragment(slot, arguments, self.event, self.t)

    def _exact_index(self, fragment: dict[str, Any], index: float) -> Any:
        """orjson reads an integer beyond 64 bits as a float: what the fragment's
        index was exactly, from the event decoded again by the exact decoder."""
        try:
            exact = loads(self._data)
        except ValueError:
            return index
        pairs = zip(_tool_fragments(self._chunk), _tool_fragments(exact), strict=False)
        return next((b.get("index") for a, b in pairs if a is fragment), index)

    def _slot_by_index(self, index: int, call_id: str | None, name: str | None) -> CallSlot:
        lane = self._lane_of_index.get(index)
        if lane is None:
            lane = self.free_lane(index)
            gap = gap_detail("index", index, self._highest_index) if index_in_range(index) else None
            slot = self._start(index, lane, call_id, name)
            if gap:
                self.note("index-gap", lane, gap)
            self.check_index_range(index, lane, "index")
            return slot
        slot = self.state.calls[lane]
        if call_id and slot.call_id and call_id != slot.call_id:
            return self._restart_at_index(index, slot, call_id, name)
        return slot

    def _restart_at_index(
        self, index: int, previous: CallSlot, call_id: str, name: str | None
    ) -> CallSlot:
        lane = self.state.next_free_index()
        unfinished = previous.length > 0 and not previous.holds_complete_json()
        kind = "id-changed" if unfinished else "index-reused"
        how = "mid-arguments" if unfinished else "after its call"
        slot = self._start(index, lane, call_id, name)
        self.note(
            kind,
            lane,
            f"index {index} reused {how} by id {call_id!r} (was {previous.call_id!r}); "
            f"new call in lane {lane}",
        )
        return slot

    def _slot_without_index(self, call_id: str | None, name: str | None, index: Any) -> CallSlot:
        shown = "no index" if index is None else f"index {index!r} is not an integer"
        if call_id:
            slot = self._slot_of_id.get(call_id)
            if slot is not None:
                self.note("index-missing", slot.index, f"{shown}; joined call {call_id!r}")
                return slot
        elif self._latest is not None:
            self.note(
                "index-missing", self._latest.index, f"{shown} and no id; continued the latest call"
            )
            return self._latest
        lane = self.state.next_free_index()
        slot = self._new_call(lane, call_id, name)
        self.note("index-missing", lane, f"{shown}; new call in lane {lane}")
        return slot

    def _start(self, index: int, lane: int, call_id: str | None, name: str | None) -> CallSlot:
        self._lane_of_index[index] = lane
        if index_in_range(index):
            self._highest_index = max(self._highest_index, index)
        return self._new_call(lane, call_id, name)

    def _new_call(self, lane: int, call_id: str | None, name: str | None) -> CallSlot:
        slot = self.state.start_call(lane, call_id, name, self.t)
        if call_id:
            self._slot_of_id.setdefault(call_id, slot)
        return slot

    def _check_identity(
        self, slot: CallSlot, call_id: str | None, name: str | None, is_new: bool
    ) -> None:
        """Only the first fragment should carry id and name; later ones never overwrite."""
        late_id = call_id if call_id and slot.call_id is None else None
        late_name = name if name and slot.name is None else None
        if late_id or late_name:
            self.state.identify(slot, late_id, late_name)
            if late_id:
                self._slot_of_id.setdefault(late_id, slot)
        if is_new:
            return
        if late_id:
            self.note("id-late", slot.index, f"id {late_id!r} arrived after the first fragment")
        elif call_id:
            self.note("id-repeated", slot.index, f"id {call_id!r} sent again in a later fragment")
        if late_name:
            self.note(
                "name-late", slot.index, f"name {late_name!r} arrived after the first fragment"
            )
        elif name == slot.name and name:
            self.note("name-repeated", slot.index, f"name {name!r} sent again in a later fragment")
        elif name:
            self.note(
                "name-changed", slot.index, f"name {name!r} ignored; kept the first, {slot.name!r}"
            )

    def _arguments_text(self, slot: CallSlot, arguments: Any) -> str:
        if arguments is None:
            return ""
        self.note(
            "arguments-object",
            slot.index,
            f"arguments sent as {type(arguments).__name__}, not a string; serialised",
        )
        return compact_json(arguments)
