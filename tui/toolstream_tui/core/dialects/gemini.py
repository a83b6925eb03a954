"""Google's Gemini API and Vertex AI (streamGenerateContent)."""

from __future__ import annotations

from ..sse import SSEEvent
from .base import Dialect


class GeminiDialect(Dialect):
    name = "gemini"

    def handle(self, event: SSEEvent) -> None:
        self.note(
            "unknown-event", None, f"event {event.number}: the gemini dialect is not written yet"
        )
