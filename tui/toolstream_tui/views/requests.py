"""The proxy's request list (and a capture's entries): one row per request."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.visible import inert
from .words import human_bytes

if TYPE_CHECKING:
    from ..proxy.requests import RequestRecord


# -- the proxy's request list ---------------------------------------------------------
REQUEST_COLUMNS = (  # title, width (0: what is left), right-aligned
    ("time", 12, False),
    ("request", 0, False),
    ("model", 18, False),
    ("dialect", 16, False),
    ("HTTP", 4, True),
    ("state", 10, False),
    ("calls", 5, True),
    ("anomalies", 9, True),
    ("duration", 8, True),
    ("bytes", 9, True),
)


PASSED = "passed"  # the state of a request that was no model's, answered and forwarded
NOT_A_MODEL_CALL = "not a model call"


@dataclass(frozen=True, slots=True)
class RequestRow:
    cells: tuple[str, ...]  # one per REQUEST_COLUMNS entry
    tone: str  # waiting, streaming, finished, truncated, error, anomalies or passed


def request_row(record: RequestRecord, now: float) -> RequestRow:
    """One request as the list shows it; `now` (time.monotonic) times a live one."""
    state = record.session.state
    anomalies = len(record.shown_anomalies)
    passed = record.passed_through
    if record.http_status is None and not record.over:
        stream_state = "waiting"
    elif passed:
        stream_state = PASSED
    else:
        stream_state = state.status.value
    clock = time.strftime("%H:%M:%S", time.localtime(record.started_at))
    millis = int(record.started_at % 1 * 1000)
    request = f"{record.method} {record.path}"
    if why := NOT_A_MODEL_CALL if passed else request_why(record):
        request += f" · {why}"
    cells = (
        f"{clock}.{millis:03d}",
        inert(request),
        inert(record.model or "—"),
        "—" if passed else state.dialect,
        "—" if record.http_status is None else str(record.http_status),
        stream_state,
        "" if passed else str(len(state.calls)),
        f"⚠ {anomalies}" if anomalies else "",
        f"{record.elapsed(now):.2f}s",
        human_bytes(state.bytes_received),
    )
    tone = "anomalies" if anomalies and stream_state == "finished" else stream_state
    return RequestRow(cells, tone)


def request_why(record: RequestRecord) -> str:
    """Why a request ended in error or truncated, for its row: the stream's error,
    what the proxy noted (its own 502, a client that left), or else the first
    anomaly's kind."""
    state = record.session.state
    if state.status.value not in ("error", "truncated"):
        return ""
    reasons = [state.error] if state.error else []
    reasons += [note for note in record.notes if note not in reasons]
    if not reasons and record.shown_anomalies:
        reasons.append(record.shown_anomalies[0].kind)
    return " · ".join(reasons)


def column_widths(width: int, gap: int = 1) -> list[int]:
    """The request list's column widths for a line of `width` cells: the fixed ones
    as they are, the request's path whatever is left (at least 12)."""
    fixed = sum(size for _, size, _ in REQUEST_COLUMNS) + gap * (len(REQUEST_COLUMNS) - 1)
    return [size or max(12, width - fixed) for _, size, _ in REQUEST_COLUMNS]
