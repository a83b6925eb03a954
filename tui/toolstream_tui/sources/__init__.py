"""Where bytes come from: HTTP, a replayed recording, or the embedded stub."""

from .base import BodyChunk, Clock, ResponseHead, Source, SourceItem, TransportError
from .pump import pump

__all__ = [
    "BodyChunk",
    "Clock",
    "ResponseHead",
    "Source",
    "SourceItem",
    "TransportError",
    "pump",
]
