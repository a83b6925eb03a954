"""Where bytes come from: HTTP, a replayed recording, or the embedded stub."""

from .base import BodyChunk, Clock, ResponseHead, Source, SourceItem, TransportError
from .pump import Limits, pump, run_to_end

__all__ = [
    "BodyChunk",
    "Clock",
    "Limits",
    "ResponseHead",
    "Source",
    "SourceItem",
    "TransportError",
    "pump",
    "run_to_end",
]
