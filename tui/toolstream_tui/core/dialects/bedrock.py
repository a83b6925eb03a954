"""AWS Bedrock's ConverseStream and InvokeModelWithResponseStream event streams."""

from __future__ import annotations

from ..sse import SSEEvent
from .base import Dialect


class BedrockDialect(Dialect):
    name = "bedrock"

    def handle(self, event: SSEEvent) -> None:
        self.note(
            "unknown-event", None, f"event {event.number}: the bedrock dialect is not written yet"
        )
