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
    ("state", 9, False),
    ("calls", 5, True),
    ("anomalies", 9, True),
    ("duration", 8, True),
    ("bytes", 8, True),
)
REQUEST = 1  # the request's column
# While the request would have fewer cells than REQUEST_ROOM, these columns go, the
# least useful first: the bytes (the state says whether it ended), the dialect (the
# path and the model say it), HTTP (an error's status is in the reason after the
# path), the duration, the time (the newest request is on top). The model, state,
# calls and anomalies stay: they are what a request is watched for.
DROPPED_FIRST = ("bytes", "dialect", "HTTP", "duration", "time")
REQUEST_ROOM = 48
REQUEST_MIN = 12  # cells, however narrow the line
ELIDED_QUERY = "?…"


PASSED = "passed"  # the state of a request that was no model's, answered and forwarded
NOT_A_MODEL_CALL = "not a model call"


@dataclass(frozen=True, slots=True)
class RequestRow:
    cells: tuple[str, ...]  # one per REQUEST_COLUMNS entry
    tone: str  # waiting, streaming, finished, truncated, error, anomalies or passed


def request_row(record: RequestRecord, now: float, widths: list[int] | None = None) -> RequestRow:
    """One request as the list shows it; `now` (time.monotonic) times a live one.
    With the `widths` of column_widths, a request too long for its column shows the
    end of its path and the reason after it (else it is whole)."""
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
    why = NOT_A_MODEL_CALL if passed else request_why(record)
    request = request_text(record.method, record.path, why, widths[REQUEST] if widths else None)
    cells = (
        f"{clock}.{millis:03d}",
        inert(request),
        inert(model_label(record.model)),
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


def request_text(method: str, path: str, why: str, width: int | None = None) -> str:
    """`METHOD path · why`, in `width` characters if it can be: a path too long
    loses its query, then its start (`POST …/models/gemini-2.5-flash:…`), down to
    half the room when a reason follows; the line cuts what is still over."""
    suffix = f" · {why}" if why else ""
    whole = f"{method} {path}{suffix}"
    if width is None or len(whole) <= width:
        return whole
    route, question, _ = path.partition("?")
    route += ELIDED_QUERY if question else ""
    room = width - len(method) - 1
    path_room = max(min(len(route), room // 2), room - len(suffix))
    return f"{method} {path_end(route, path_room)}{suffix}"


def path_end(path: str, width: int) -> str:
    """The end of `path` in `width` characters, from a `/` when one comes soon."""
    if len(path) <= width:
        return path
    end = path[len(path) - (width - 1) :]
    slash = end.find("/")
    if 0 < slash <= len(end) // 4:
        end = end[slash:]
    return "…" + end


def model_label(model: str | None) -> str:
    """The model as its column shows it: an ARN (Bedrock's, all alike up to their
    account) by what follows its last `/`, the model or profile it names."""
    if not model:
        return "—"
    if model.startswith("arn:") and "/" in model:
        return model.rpartition("/")[2] or model
    return model


def column_widths(width: int, gap: int = 1) -> list[int]:
    """The request list's column widths for a line of `width` cells (0: a column
    not drawn): the fixed ones as they are, the request's path whatever is left;
    the columns of DROPPED_FIRST go while the request has under REQUEST_ROOM."""
    shown = {title: size for title, size, _ in REQUEST_COLUMNS}
    for title in DROPPED_FIRST:
        if request_room(shown, width, gap) >= REQUEST_ROOM:
            break
        del shown[title]
    request = max(REQUEST_MIN, request_room(shown, width, gap))
    return [(size or request) if title in shown else 0 for title, size, _ in REQUEST_COLUMNS]


def request_room(shown: dict[str, int], width: int, gap: int) -> int:
    return width - sum(shown.values()) - gap * (len(shown) - 1)
