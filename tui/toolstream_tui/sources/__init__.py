"""Where bytes come from: HTTP, a replayed recording, or the embedded stub."""

from .base import BodyChunk, Clock, ResponseHead, Source, SourceItem, TransportError
from .pump import Limits, Turns, pump

__all__ = [
    "BodyChunk",
    "Clock",
    "Limits",
    "ResponseHead",
    "Source",
    "SourceItem",
    "TransportError",
    "Turns",
    "pump",
]
