"""The Vercel AI SDK's UI message stream (what useChat reads)."""

from __future__ import annotations

from ..sse import SSEEvent
from .base import Dialect


class UIMessageStreamDialect(Dialect):
    name = "ai-sdk-ui"

    def handle(self, event: SSEEvent) -> None:
        self.note(
            "unknown-event", None, f"event {event.number}: the ai-sdk-ui dialect is not written yet"
        )
