"""One stream, from response head to end: bytes → SSE → dialect → state.

A source (HTTP, replay, stub) calls `open`, then `feed` for every read, then
`close` at end of body or `fail` when the transport broke. Each call returns the
`StreamEvent`s it caused, in order.
"""

from __future__ import annotations

import json
from typing import Any

from .detect import make_dialect
from .dialect import preview
from .events import ResponseOpened, StreamEvent, WireComment, WireEvent
from .sse import SSEComment, SSEDecoder
from .state import StreamState

SSE_TYPE = "text/event-stream"
JSON_TYPE = "application/json"
MAX_ERROR_BODY = 2000


def _mode_for(status: int, content_type: str) -> str:
    media = content_type.partition(";")[0].strip().lower()
    if status >= 400:
        return "error"
    if media == SSE_TYPE or media == "":
        return "sse"
    if media == JSON_TYPE or media.endswith("+json"):
        return "json"
    return "body"


def _looks_like_sse(text: str) -> bool:
    head = text.lstrip("\ufeff\r\n")
    return head.startswith(("data:", "event:", ":", "id:", "retry:"))


def _json_or_none(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _error_message(body: str) -> str:
    try:
        payload: Any = json.loads(body)
    except ValueError:
        return preview(body.strip(), MAX_ERROR_BODY) or "(empty body)"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return preview(body.strip(), MAX_ERROR_BODY)


class StreamSession:
    def __init__(
        self,
        source: str,
        dialect: str | None = None,
        *,
        live: bool = True,
        fragment_events: bool = True,
    ) -> None:
        """`dialect`: one of `DIALECTS`, or None to detect it from the stream.
        `live`: emit the per-event detail a display needs (a report needs none).
        `fragment_events`: one event per fragment; a display that reads fragments
        from the state up to the last wire event it has shown needs none."""
        self.state = StreamState(
            source=source,
            dialect=dialect or "detecting",
            live=live,
            fragment_events=live and fragment_events,
        )
        self.dialect = make_dialect(self.state, dialect)
        self.decoder = SSEDecoder()
        self.mode = "sse"
        self.content_type = ""
        self._body: list[bytes] = []
        self._closed = False

    def open(self, status: int, content_type: str) -> list[StreamEvent]:
        self.state.http_status = status
        self.content_type = content_type
        self.mode = _mode_for(status, content_type)
        self.state.outbox.append(ResponseOpened(status, content_type, self.mode))
        return self.state.drain()

    def feed(self, chunk: bytes, t: float) -> list[StreamEvent]:
        self.state.bytes_received += len(chunk)
        if self.mode == "sse":
            self._take_sse(self.decoder.feed(chunk), t)
        else:
            self._body.append(chunk)
        return self.state.drain()

    def close(self, t: float) -> list[StreamEvent]:
        """The body ended normally."""
        if self._closed:
            return []
        self._closed = True
        trailing = ""
        if self.mode != "sse":
            self._settle_body(t)  # may find a stream sent under the wrong content type
        if self.mode == "sse":
            items, trailing = self.decoder.close()
            self._take_sse(items, t)
            if trailing:
                self.state.note(
                    "unterminated-event",
                    None,
                    f"bytes after the last blank line were not dispatched: {preview(trailing)!r}",
                    self.state.events,
                )
        if self.state.error is None:
            self.dialect.on_end()
        self.dialect.settle()  # a failed or empty stream still names a dialect
        self.state.end(trailing)
        return self.state.drain()

    def fail(self, message: str, t: float) -> list[StreamEvent]:
        """The transport broke (connection refused, reset, timeout)."""
        self.state.fail(message)
        return self.close(t)

    def interrupt(self, message: str, t: float) -> list[StreamEvent]:
        """The transport broke after the response began: what arrived is kept and the
        stream ends as it stands (truncated, unless the finish had already come)."""
        self.state.note("connection-lost", None, message, self.state.events)
        return self.close(t)

    def _take_sse(self, items: list[Any], t: float) -> None:
        state = self.state
        live = state.live
        on_event = self.dialect.current.on_event
        for item in items:
            if type(item) is SSEComment:
                if live:
                    state.outbox.append(WireComment(item.text, t))
                continue
            state.events = item.number
            if live:
                state.outbox.append(WireEvent(item.number, item.event, item.data, item.id, t))
            on_event(item, t)

    def _settle_body(self, t: float) -> None:
        body = b"".join(self._body).decode("utf-8", errors="replace")
        self.state.body = body
        if self.mode == "error":
            status = self.state.http_status
            self.state.fail(f"HTTP {status}: {_error_message(body)}")
            self.dialect.settle(_json_or_none(body))
        elif self.mode == "json":
            self._settle_json(body)
        elif _looks_like_sse(body):
            self.state.note(
                "content-type-not-sse",
                None,
                f"a stream sent as {self.content_type or 'no content type'}",
                None,
            )
            self.mode = "sse"
            self.state.body = None
            self._take_sse(self.decoder.feed(body.encode()), t)
        else:
            shown = self.content_type or "no content type"
            self.state.fail(
                f"response is neither SSE nor a JSON completion ({shown}): {preview(body.strip())}"
            )

    def _settle_json(self, body: str) -> None:
        try:
            payload = json.loads(body)
        except ValueError as exc:
            self.state.fail(f"JSON response does not parse: {exc}")
            return
        self.dialect.on_completion(payload)
