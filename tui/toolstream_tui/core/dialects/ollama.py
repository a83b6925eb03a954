"""Ollama's `/api/chat` stream: NDJSON, one `ChatResponse` object per line
(`model`, `created_at`, `message`, `done`), framed by the core.

- `message.content` is the answer, `message.thinking` the reasoning.
- `message.tool_calls` arrive whole: `{"id", "function": {"index", "name",
  "arguments"}}` with the arguments as a JSON object, taken as one fragment of
  compact JSON. A call's lane is its `function.index` while free, else the next
  free lane (older servers send no index: calls take lanes in order of arrival).
- The line with `done: true` is the finish, its `done_reason` (`stop`, `length`,
  `load`, `unload`) the reason; older servers may leave the reason out. Ollama says
  `stop` after tool calls too, so that is no anomaly here. A stream that ends
  without a done line is truncated.
- A line `{"error": "…"}` is an error in the stream (the status line was already
  sent).

`/api/generate` lines (`response` in place of `message`) are read too: their text
is the answer. A non-streaming body is one such object with `done: true`.
"""

from __future__ import annotations

from typing import Any

from ..events import Channel
from ..sse import SSEEvent
from ..state import CallSlot
from .base import Dialect, as_dict, as_int, as_list, as_text, compact_json

TEXT_FIELDS = (("content", Channel.CONTENT), ("thinking", Channel.REASONING))
GENERATE_FIELDS = (("response", Channel.CONTENT), ("thinking", Channel.REASONING))


def _is_response(payload: dict[str, Any]) -> bool:
    """A chat or generate response line: `done` and a message, or model and time."""
    has_source = "message" in payload or ("model" in payload and "created_at" in payload)
    return isinstance(payload.get("done"), bool) and has_source


class OllamaDialect(Dialect):
    name = "ollama"
    anomaly_kinds = frozenset({"data-after-done", "index-reused", "name-missing"})

    @classmethod
    def claims_event(cls, event: SSEEvent, payload: dict[str, Any] | None) -> bool:
        if payload is None:
            return False
        # Ollama's error line is a bare string; chat's and Gemini's errors are objects.
        lone_error = len(payload) == 1 and isinstance(payload.get("error"), str)
        return lone_error or _is_response(payload)

    @classmethod
    def claims_completion(cls, body: dict[str, Any]) -> bool:
        return _is_response(body)

    @classmethod
    def claims_chunk(cls, body: dict[str, Any]) -> bool:
        """A line that is not the last: a whole response is always `done`."""
        return _is_response(body) and body["done"] is False

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._indexes: set[int] = set()  # function.index values seen
        self._done = False

    def handle(self, event: SSEEvent) -> None:
        payload = self.payload(event)
        if payload is None:
            return
        if self._done:
            self.note("data-after-done", None, f"line {event.number} arrived after the done line")
        self._on_line(payload, "done")

    def on_completion(self, body: Any) -> None:
        body = as_dict(body)
        self._on_line(body, "complete response")
        if not self.state.finished and self.state.error is None:
            self.state.finish(as_text(body.get("done_reason")), "complete response")

    def _on_line(self, payload: dict[str, Any], trigger: str) -> None:
        if "error" in payload:
            self._on_error(payload["error"])
            return
        message = payload.get("message")
        if isinstance(message, dict):
            self._on_message(message)
        elif "response" in payload:
            self.append_text_fields(payload, GENERATE_FIELDS)
        else:
            self.note("unexpected-shape", None, "a line with neither message nor response")
        if payload.get("done") is True:
            self._done = True
            self.state.finish(as_text(payload.get("done_reason")), trigger)

    def _on_message(self, message: dict[str, Any]) -> None:
        self.append_text_fields(message, TEXT_FIELDS)
        tool_calls = message.get("tool_calls")
        if tool_calls is not None and not isinstance(tool_calls, list):
            self.note("unexpected-shape", None, "message.tool_calls is not a list")
        for call in as_list(tool_calls):
            if isinstance(call, dict):
                self._on_call(call)
            else:
                self.note("unexpected-shape", None, "a tool_calls item is not an object")

    def _on_call(self, call: dict[str, Any]) -> None:
        function = as_dict(call.get("function"))
        slot = self._start(call, function)
        arguments = function.get("arguments")
        if arguments is None:
            return
        if isinstance(arguments, str):  # the API sends an object: take the text as sent
            self.note("unexpected-shape", slot.index, "arguments arrived as a string")
            self.state.append_fragment(slot, arguments, self.event, self.t)
        else:  # an object; anything else is named arguments-not-object once parsed
            self.append_whole_arguments(slot, arguments)

    def _start(self, call: dict[str, Any], function: dict[str, Any]) -> CallSlot:
        index = as_int(function.get("index"))
        if index is None:
            lane = self.state.next_free_index()
        else:
            lane = self.free_lane(index)
            if index in self._indexes:
                self.note("index-reused", lane, f"function.index {index} again; lane {lane}")
            self._indexes.add(index)
        name = as_text(function.get("name"))
        slot = self.state.start_call(lane, as_text(call.get("id")), name, self.t)
        if index is not None:
            self.check_index_range(index, lane, "function.index")
        if name is None:
            self.note("name-missing", lane, "the call has no function name")
        return slot

    def _on_error(self, error: Any) -> None:
        detail = error if isinstance(error, str) else compact_json(error)
        self.note("error-event", None, detail)
        self.state.fail(f"error in stream: {detail}")
