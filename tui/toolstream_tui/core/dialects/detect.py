"""Which dialect a stream speaks, told from its response head (a content type or
header only one provider sends) or its first events: several dialects share one
content type, so the events usually tell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..sse import SSEEvent
from ..state import StreamState
from ..strict_json import loads_envelope
from .anthropic import AnthropicMessagesDialect
from .base import Dialect, as_dict
from .bedrock import BedrockDialect
from .chat import ChatCompletionsDialect
from .cohere import CohereDialect
from .gemini import GeminiDialect
from .ollama import OllamaDialect
from .responses import OpenAIResponsesDialect
from .ui_message import UIMessageStreamDialect

# In the order they are asked: each claims only shapes no dialect before it claims.
DIALECTS: dict[str, type[Dialect]] = {
    dialect.name: dialect
    for dialect in (
        AnthropicMessagesDialect,
        UIMessageStreamDialect,
        CohereDialect,
        GeminiDialect,
        OllamaDialect,
        BedrockDialect,
        OpenAIResponsesDialect,
        ChatCompletionsDialect,
    )
}
FALLBACK = ChatCompletionsDialect.name
UNDECIDED_LIMIT = 16  # events to hold back before falling back to chat completions


def dialect_of_head(content_type: str, headers: Mapping[str, str]) -> str | None:
    media = content_type.partition(";")[0].strip().lower()
    lowered = {key.lower(): value for key, value in headers.items()}
    return next((d.name for d in DIALECTS.values() if d.claims_head(media, lowered)), None)


def dialect_of_event(event: SSEEvent) -> str | None:
    try:
        decoded = loads_envelope(event.data)
    except ValueError:
        decoded = None
    return dialect_of_payload(decoded if isinstance(decoded, dict) else None, event)


def dialect_of_payload(payload: dict[str, Any] | None, event: SSEEvent | None = None) -> str | None:
    event = event or SSEEvent(0, "", "", None, None)
    if payload is not None and not isinstance(payload.get("type"), str | None):
        return None
    return next((d.name for d in DIALECTS.values() if d.claims_event(event, payload)), None)


def dialect_of_completion(body: Any) -> str:
    body = as_dict(body)
    return next((d.name for d in DIALECTS.values() if d.claims_completion(body)), FALLBACK)


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

    def on_open(self, content_type: str, headers: Mapping[str, str]) -> None:
        name = dialect_of_head(content_type, headers)
        if name is not None and self.chosen is None:
            self._choose(name)

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
            name = FALLBACK
        if name is not None:
            self._choose(name)

    def takes_as_chunk(self, body: Any) -> bool:
        if self.chosen is not None:
            return self.chosen.takes_as_chunk(body)
        return isinstance(body, dict) and any(d.claims_chunk(body) for d in DIALECTS.values())

    def on_completion(self, body: Any) -> None:
        if self.chosen is None:
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
