"""Ollama's /api/chat NDJSON stream."""

from __future__ import annotations

from ..sse import SSEEvent
from .base import Dialect


class OllamaDialect(Dialect):
    name = "ollama"

    def handle(self, event: SSEEvent) -> None:
        self.note(
            "unknown-event", None, f"event {event.number}: the ollama dialect is not written yet"
        )
