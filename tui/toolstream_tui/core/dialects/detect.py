"""Which dialect a stream speaks, told from its first events (the content type
alone does not tell: all three send text/event-stream)."""

from __future__ import annotations

from typing import Any

from ..sse import SSEEvent
from ..state import StreamState
from ..strict_json import loads_envelope
from .anthropic import MESSAGE_EVENTS, AnthropicMessagesDialect
from .base import Dialect, as_dict
from .chat import DONE, ChatCompletionsDialect
from .responses import OpenAIResponsesDialect

DIALECTS: dict[str, type[Dialect]] = {
    dialect.name: dialect
    for dialect in (ChatCompletionsDialect, AnthropicMessagesDialect, OpenAIResponsesDialect)
}
UNDECIDED_LIMIT = 16  # events to hold back before falling back to chat completions


def dialect_of_event(event: SSEEvent) -> str | None:
    if event.event in MESSAGE_EVENTS:
        return AnthropicMessagesDialect.name
    if event.event.startswith("response."):
        return OpenAIResponsesDialect.name
    if event.data.strip() == DONE:
        return ChatCompletionsDialect.name
    try:
        payload = loads_envelope(event.data)
    except ValueError:
        return None
    return dialect_of_payload(payload) if isinstance(payload, dict) else None


def dialect_of_payload(payload: dict[str, Any]) -> str | None:
    kind = payload.get("type")
    if not isinstance(kind, str | None):
        return None
    if kind in MESSAGE_EVENTS:
        return AnthropicMessagesDialect.name
    if isinstance(kind, str) and kind.startswith("response."):
        return OpenAIResponsesDialect.name
    if kind == "error":  # Anthropic nests the error; Responses puts code/message on top
        nested = isinstance(payload.get("error"), dict)
        return AnthropicMessagesDialect.name if nested else OpenAIResponsesDialect.name
    if "choices" in payload or str(payload.get("object", "")).startswith("chat.completion"):
        return ChatCompletionsDialect.name
    return None


def dialect_of_completion(body: Any) -> str:
    body = as_dict(body)
    if body.get("type") == "message" or body.get("type") == "error":
        return AnthropicMessagesDialect.name
    if body.get("object") == "response":
        return OpenAIResponsesDialect.name
    return ChatCompletionsDialect.name


class DetectingDialect(Dialect):
    """Holds events back until one of them tells the dialect, then hands them all,
    in order, to that dialect."""

    name = "detecting"

    def __init__(self, state: StreamState) -> None:
        super().__init__(state)
        self.chosen: Dialect | None = None
        self._held: list[tuple[SSEEvent, float]] = []

    @property
    def current(self) -> Dialect:
        return self.chosen or self

    def on_event(self, event: SSEEvent, t: float) -> None:
        if self.chosen is not None:
            self.chosen.on_event(event, t)
            return
        self._held.append((event, t))
        name = dialect_of_event(event)
        if name is None and len(self._held) >= UNDECIDED_LIMIT:
            self.note(
                "dialect-unknown", None, "no event told the dialect; read as chat completions"
            )
            name = ChatCompletionsDialect.name
        if name is not None:
            self._choose(name)

    def on_completion(self, body: Any) -> None:
        self._choose(dialect_of_completion(body))
        assert self.chosen is not None
        self.chosen.on_completion(body)

    def on_end(self) -> None:
        if self.chosen is None:
            self._choose(dialect_of_completion(None))
        assert self.chosen is not None
        self.chosen.on_end()

    def settle(self, hint: Any = None) -> None:
        if self.chosen is None:
            self._choose(dialect_of_completion(hint))
        assert self.chosen is not None
        self.chosen.settle(hint)

    def _choose(self, name: str) -> None:
        self.chosen = DIALECTS[name](self.state)
        self.state.set_dialect(name)
        held, self._held = self._held, []
        for event, t in held:
            self.chosen.on_event(event, t)


def make_dialect(state: StreamState, name: str | None) -> Dialect:
    """The named dialect, or one that detects it from the stream."""
    if name is None:
        return DetectingDialect(state)
    dialect = DIALECTS[name](state)
    state.set_dialect(name)
    return dialect
