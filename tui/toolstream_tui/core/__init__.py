"""The UI-free stream core: SSE bytes → dialect decoder → typed events → per-index
state → final report. Nothing in this package imports Textual."""

from .events import Anomaly, Channel, Status, StreamEvent
from .report import build_report, exit_code
from .session import StreamSession
from .sse import SSEComment, SSEDecoder, SSEEvent
from .state import CallSlot, StreamState

__all__ = [
    "Anomaly",
    "CallSlot",
    "Channel",
    "SSEComment",
    "SSEDecoder",
    "SSEEvent",
    "Status",
    "StreamEvent",
    "StreamSession",
    "StreamState",
    "build_report",
    "exit_code",
]
