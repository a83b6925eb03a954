"""Cohere's v2 chat stream."""

from __future__ import annotations

from ..sse import SSEEvent
from .base import Dialect


class CohereDialect(Dialect):
    name = "cohere"

    def handle(self, event: SSEEvent) -> None:
        self.note(
            "unknown-event", None, f"event {event.number}: the cohere dialect is not written yet"
        )
