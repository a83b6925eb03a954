"""One stream, from response head to end: bytes → events → dialect → state.

The events are framed as the body is: Server-Sent Events, NDJSON lines, a JSON
array written element by element, or AWS event-stream frames (see `framing`),
told by the content type or, when it says nothing, by the first bytes.

A source (HTTP, replay, stub) calls `open`, then `feed` for every read, then
`close` at end of body or `fail` when the transport broke. Each call returns the
`StreamEvent`s it caused, in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .dialects.base import Dialect, excerpt
from .dialects.detect import make_dialect
from .events import ResponseOpened, StreamEvent, WireComment, WireEvent
from .eventstream import EVENTSTREAM_TYPE, EventStreamDecoder, looks_like_eventstream
from .framing import NDJSON_TYPES, Framer, JSONArrayDecoder, LineDecoder, decode_utf8
from .schema import declared_tools
from .sse import BOM, SSEComment, SSEDecoder, SSEEvent
from .state import STALL_SECONDS, StreamState
from .strict_json import loads_envelope

SSE_TYPE = "text/event-stream"
MAX_BYTES = 1 << 30  # a generous default: a whole stream above 1 GiB is cut
MAX_EVENT_BYTES = 16 << 20  # one SSE event (or line) above 16 MiB is cut
JSON_TYPE = "application/json"
MAX_ERROR_BODY = 2000
# A report keeps this many characters of a non-stream body or of an unterminated
# event, and states their full size: the rest is in the recording.
REPORTED_CHARS = 64 * 1024
SNIFF_BYTES = 4096  # an untyped body is told by its first line, or by a data line in these
SSE_FIELDS = (b"", b"data", b"event", b"id", b"retry")  # b"" + ":" is a comment line
_LATER_SSE_LINE = re.compile(rb"[\r\n](?:data|event):")


FRAMERS: dict[str, Callable[[int], Framer]] = {
    "sse": SSEDecoder,
    "ndjson": LineDecoder,
    "json-array": JSONArrayDecoder,
    "eventstream": EventStreamDecoder,
}
FRAMING_OF_TYPE = {
    SSE_TYPE: "sse",
    EVENTSTREAM_TYPE: "eventstream",
    **{media: "ndjson" for media in NDJSON_TYPES},
}


def mode_for(status: int, content_type: str) -> str:
    """`error`, a framing (a stream of events), `json` (a complete response, or a
    JSON array written progressively), `sniff` (look at the body) or `body`."""
    media = content_type.partition(";")[0].strip().lower()
    if status >= 400:
        return "error"
    if media in FRAMING_OF_TYPE:
        return FRAMING_OF_TYPE[media]
    if media == "":
        return "sniff"  # no content type (a bare recording, a terse server): look at the body
    if media == JSON_TYPE or media.endswith("+json"):
        return "json"
    return "body"


def sniffed_mode(head: bytes, final: bool) -> str | None:
    """What an untyped body is, from its first bytes: a framing (`sse`, `ndjson`,
    `json-array`, `eventstream`), `json` (a complete response), `body` (none of
    these), `empty`; None while its first bytes could still be more than one
    (`final`: no more bytes will come)."""
    if looks_like_eventstream(head):
        return "eventstream"
    lines = head.removeprefix(BOM).lstrip(b"\r\n")
    if not lines.strip():
        return "empty" if final else None
    if lines.lstrip()[:1] == b"[":
        return "json-array"
    if lines.lstrip()[:1] == b"{":
        return _json_or_lines(lines.strip(), final)
    first = re.split(rb"[\r\n]", lines, maxsplit=1)[0]
    name, colon, _ = first.partition(b":")
    ended = bool(colon) or len(first) < len(lines)
    if ended and name in SSE_FIELDS:
        return "sse"
    if _LATER_SSE_LINE.search(lines, 0, SNIFF_BYTES):  # a capture that begins mid-event
        return "sse"
    if final or len(lines) >= SNIFF_BYTES:
        return "body"
    return None  # a data line may still come


def settled_mode(mode: str, sniffed: str | None) -> str | None:
    """What a body opened in `mode` (`sniff`, or `json` from its content type) is
    read as, once its first bytes were `sniffed` (`sniffed_mode`): a body typed as
    JSON is a stream only when it is an array."""
    if mode == "json" and sniffed not in (None, "json-array"):
        return "json"
    return sniffed


def _json_or_lines(body: bytes, final: bool) -> str | None:
    """One JSON object (`json`), or one per line (`ndjson`): told by a first line
    that is a whole object with another line after it."""
    first, newline, rest = body.partition(b"\n")
    if not newline:
        return "json" if final or len(body) >= SNIFF_BYTES else None
    if not rest.strip():
        return None if not final else "json"
    try:
        whole = isinstance(loads_envelope(first.decode("utf-8", errors="replace")), dict)
    except ValueError:
        whole = False
    return "ndjson" if whole and rest.lstrip()[:1] == b"{" else "json"


def _looks_like_sse(text: str) -> bool:
    head = text.lstrip("\ufeff\r\n")
    return head.startswith(("data:", "event:", ":", "id:", "retry:"))


def _header(headers: dict[str, str], name: str) -> str | None:
    return next((value for key, value in headers.items() if key.lower() == name), None)


def _json_or_none(body: str) -> Any:
    try:
        return loads_envelope(body)
    except ValueError:
        return None


def _error_message(body: str) -> str:
    payload = _json_or_none(body)
    if payload is None:
        return excerpt(body.strip(), MAX_ERROR_BODY) or "(empty body)"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return excerpt(body.strip(), MAX_ERROR_BODY)


class StreamSession:
    def __init__(
        self,
        source: str,
        dialect: str | None = None,
        *,
        live: bool = True,
        fragment_events: bool = True,
        max_bytes: int = MAX_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        stall_threshold: float = STALL_SECONDS,
    ) -> None:
        """`dialect`: one of `DIALECTS`, or None to detect it from the stream.
        `live`: emit the per-event detail a display needs (a report needs none).
        `fragment_events`: one event per fragment; a display that reads fragments
        from the state up to the last wire event it has shown needs none.
        `max_bytes`, `max_event_bytes`: past either, the stream ends where it is
        (truncated unless the finish had come), keeping what arrived.
        `stall_threshold`: a silence longer than this many seconds is a stall."""
        self.max_bytes = max_bytes
        self.max_event_bytes = max_event_bytes
        self.state = StreamState(
            source=source,
            dialect=dialect or "detecting",
            live=live,
            fragment_events=live and fragment_events,
            stall_threshold=stall_threshold,
        )
        self.dialect = make_dialect(self.state, dialect)
        self.decoder: Framer = SSEDecoder(max_event_bytes)
        self.mode = "sse"
        self._sniffing = False  # the first bytes may still change the mode
        self.content_type = ""
        self._body: list[bytes] = []
        self._body_bytes = 0
        self._read_whole = True  # False once a size limit stopped the reading
        self._closed = False
        self.retry_after: str | None = None

    def open(
        self,
        status: int,
        content_type: str,
        headers: dict[str, str] | None = None,
        t: float | None = None,
    ) -> list[StreamEvent]:
        self.state.http_status = status
        self.state.response_at = t
        self.retry_after = _header(headers or {}, "retry-after")
        self.content_type = content_type
        self.mode = mode_for(status, content_type)
        self._sniffing = self.mode in ("sniff", "json")
        if self.mode in FRAMERS:
            self.decoder = FRAMERS[self.mode](self.max_event_bytes)
        self.state.outbox.append(ResponseOpened(status, content_type, self.mode))
        if status < 400:
            self.dialect.on_open(content_type, headers or {})
        return self.state.drain()

    def requested(self, body: str | None) -> list[StreamEvent]:
        """The request that was sent: its declared tools check the calls' arguments."""
        self.state.declare_tools(declared_tools(body))
        return self.state.drain()

    def redirected(self, hops: tuple[str, ...], final_url: str) -> list[StreamEvent]:
        """The request was redirected (and followed): say where it went."""
        chain = " -> ".join([*hops, final_url])
        self.state.note("redirected", None, f"followed {len(hops)} redirect(s): {chain}", None)
        return self.state.drain()

    @property
    def sniffing(self) -> bool:
        """The body's first bytes are still to tell what it is (see `settled_mode`)."""
        return self._sniffing

    @property
    def ended(self) -> bool:
        """The stream is over for this session (a source should stop reading)."""
        return self._closed

    def feed(self, chunk: bytes, t: float) -> list[StreamEvent]:
        if self._closed:
            return []
        room = self.max_bytes - self.state.bytes_received
        over_total = len(chunk) > room
        chunk = chunk[:room] if over_total else chunk
        self.state.bytes_received += len(chunk)
        self.state.last_data_at = t
        self.state.read_times.append(t)
        if self.mode in FRAMERS:
            self._take_sse(self.decoder.feed(chunk), t)
            self._note_framing_problems()
        else:
            self._body.append(chunk)
            self._body_bytes += len(chunk)
            if self._sniffing:
                self._sniff(t, final=False)
        self.state.read_events.append(self.state.events)
        self.state.read_bytes.append(self.state.bytes_received)
        if over_total:
            return self._cut(f"the stream passed the size limit of {self.max_bytes} bytes", t)
        if self.decoder.oversized:
            return self._cut(self._event_too_long(), t)
        limit = self.max_event_bytes
        if self.mode not in FRAMERS and self._body_bytes > limit:  # a whole body is one event
            return self._cut(f"the response body passed the size limit of {limit} bytes", t)
        return self.state.drain()

    def _event_too_long(self) -> str:
        limit = self.max_event_bytes
        what = "SSE event" if self.mode == "sse" else "event"
        return f"one {what} passed the size limit of {limit} bytes (kept in trailing)"

    def _cut(self, reason: str, t: float) -> list[StreamEvent]:
        return self.stopped_at_limit(f"{reason}; reading stopped there", t)

    def stopped_at_limit(self, message: str, t: float) -> list[StreamEvent]:
        """Reading stopped at a size limit: here, or in the watch a bundle recorded
        (its replay ends where that one did)."""
        self.state.note("limit-reached", None, message, None)
        self._read_whole = False
        return self.state.drain() + self.close(t)

    def _note_framing_problems(self, upto: int | None = None) -> None:
        """Name what could not be framed (up to event `upto`: at that event, so where
        the body was cut never moves it)."""
        for problem in self.decoder.take_problems(upto):
            self.state.note("frame-invalid", None, problem, self.state.events)

    def _note_invalid_utf8(self, event: int | None) -> None:
        where = f"event {event}" if event is not None else "the unterminated last event"
        self.state.note(
            "invalid-utf8",
            None,
            f"{where} is not valid UTF-8; shown with U+FFFD, recorded as received",
            event,
        )

    def close(self, t: float) -> list[StreamEvent]:
        """The body ended normally."""
        if self._closed:
            return []
        self._closed = True
        trailing = ""
        if self._sniffing:
            self._sniff(t, final=True)
        if self.mode not in FRAMERS:
            self._settle_body(t)  # may find a stream sent under the wrong content type
        self.state.closing()
        if self.mode in FRAMERS:
            items, trailing = self.decoder.close()
            self._take_sse(items, t)
            self._note_framing_problems()
            if self.decoder.invalid_tail:
                self._note_invalid_utf8(None)
            if trailing and not self.decoder.oversized:  # limit-reached says why
                end = "blank line" if self.mode == "sse" else "complete event"
                self.state.note(
                    "unterminated-event",
                    None,
                    f"bytes after the last {end} were not dispatched: {self._shown(trailing)}",
                    self.state.events,
                )
            elif self._array_left_open():
                self.state.note(
                    "unterminated-event",
                    None,
                    "the JSON array's closing ] never came: the body ended after its last element",
                    self.state.events,
                )
        self._note_unknown_dialect()
        if self.state.error is None:
            self.dialect.on_end()
        self.dialect.settle()  # a failed or empty stream still names a dialect
        self.state.trailing_chars = len(trailing)
        self.state.end(trailing[:REPORTED_CHARS])
        return self.state.drain()

    def _shown(self, trailing: str) -> str:
        """The start of the trailing text, quoted: as `repr` writes it (a line end
        shows), but for frames, whose bytes that are not text are written `\\xNN`
        already (`repr` would write each of them twice)."""
        shown = excerpt(trailing)
        return f"'{shown}'" if self.mode == "eventstream" else repr(shown)

    def _array_left_open(self) -> bool:
        """A JSON-array stream whose `[` came and whose `]` did not, and that was not
        cut by an event past the limit or failed (those say why themselves)."""
        decoder = self.decoder
        return (
            isinstance(decoder, JSONArrayDecoder)
            and decoder.opened
            and not decoder.closed
            and not decoder.oversized
            and self.state.error is None
        )

    def fail(self, message: str, t: float) -> list[StreamEvent]:
        """The transport broke (connection refused, reset, timeout)."""
        self.state.fail(message)
        return self.close(t)

    def interrupt(self, message: str, t: float, kind: str = "connection-lost") -> list[StreamEvent]:
        """The stream stopped after the response began (the transport broke: a
        `connection-lost`; or no data came for too long: an `idle-timeout`): what
        arrived is kept and the stream ends as it stands (truncated, unless the
        finish had already come)."""
        self.state.note(kind, None, message, self.state.events)
        return self.close(t)

    def _take_sse(self, items: list[Any], t: float) -> None:
        state = self.state
        live = state.live
        dialect = self.dialect.current
        dialect.long_digit_runs = self.decoder.long_digit_runs
        # only frames can be invalid one by one, and only where the read found a problem
        per_event = self.mode == "eventstream" and self.decoder.has_problems()
        if not (live or per_event) and type(dialect).on_event is Dialect.on_event:
            self._handle_all(dialect, items, t)
            return
        on_event = dialect.on_event
        for item in items:
            if type(item) is SSEComment:
                if live:
                    state.outbox.append(WireComment(item.text, t))
                continue
            state.events = state.now = item.number
            if not item.valid_utf8:
                self._note_invalid_utf8(item.number)
            if live:
                state.outbox.append(WireEvent(item.number, item.event, item.data, item.id, t))
            on_event(item, t)
            if per_event:
                self._note_framing_problems(item.number)

    def _handle_all(self, dialect: Dialect, items: list[Any], t: float) -> None:
        """`_take_sse` for a report: no wire events, each event straight to the dialect's
        `handle` (what `Dialect.on_event` does, without a call per event)."""
        state, handle = self.state, dialect.handle
        dialect.t = t
        for item in items:
            if type(item) is SSEComment:
                continue
            state.events = state.now = dialect.event = item.number
            if not item.valid_utf8:
                self._note_invalid_utf8(item.number)
            handle(item)

    def _sniff(self, t: float, final: bool) -> None:
        """An untyped body: once its first bytes tell what it is, read it as that."""
        head = b"".join(self._body)
        mode = settled_mode(self.mode, sniffed_mode(head, final))
        if mode is None:
            self._body = [head]
            return
        self.mode, self._sniffing = mode, False
        if mode == "eventstream":  # framed as only Bedrock frames: told before any frame ends
            self.dialect.on_open(EVENTSTREAM_TYPE, {})
        if mode in FRAMERS:
            self._body, self._body_bytes = [], 0
            self.decoder = FRAMERS[mode](self.max_event_bytes)
            self._take_sse(self.decoder.feed(head), t)
            self._note_framing_problems()
        elif mode == "empty":
            self.state.fail("empty response: no content type and no bytes")

    def _note_unknown_dialect(self) -> None:
        """A response was read and nothing in it told the dialect: say so, rather
        than claim one silently."""
        status = self.state.http_status
        if self.state.dialect != "detecting" or status is None or status >= 400:
            return
        detail = "nothing in the response told the dialect; read as chat completions"
        self.state.note("dialect-unknown", None, detail, None)

    def _settle_body(self, t: float) -> None:
        raw = b"".join(self._body)
        body = raw.decode("utf-8", errors="replace")
        self._body = []
        self.state.body = body[:REPORTED_CHARS]
        self.state.body_chars = len(body)
        if self.mode == "error":
            status = self.state.http_status
            retry = f" (Retry-After: {self.retry_after})" if self.retry_after else ""
            self.state.fail(f"HTTP {status}{retry}: {_error_message(body)}")
            self.dialect.settle(_json_or_none(body))
        elif self.mode == "json" and not self._read_whole:
            return  # a response not read whole is not parsed: truncated, limit-reached says why
        elif self.mode == "json":
            self._settle_json(raw, body, t)
        elif _looks_like_sse(body):
            self.state.note(
                "content-type-not-sse",
                None,
                f"a stream sent as {self.content_type or 'no content type'}",
                None,
            )
            self.mode = "sse"
            self.state.body = self.state.body_chars = None
            self._take_sse(self.decoder.feed(body.encode()), t)
            if self.decoder.oversized:
                detail = f"{self._event_too_long()}; it and the rest were not decoded"
                self.state.note("limit-reached", None, detail, None)
        elif self.mode == "body" and not self.content_type:
            self.state.fail(f"not an SSE stream (nor a JSON response): {excerpt(body.strip())}")
        elif self.mode == "body":
            self.state.fail(
                f"response is neither SSE nor a JSON completion ({self.content_type}): "
                f"{excerpt(body.strip())}"
            )

    def _settle_json(self, raw: bytes, body: str, t: float) -> None:
        try:
            payload = loads_envelope(body.removeprefix("\ufeff"))  # RFC 8259 lets a BOM go
        except ValueError as exc:
            self.state.fail(f"JSON response does not parse: {exc}")
            return
        if self.dialect.takes_as_chunk(payload):
            self._read_as_one_event(raw, t)
        else:
            self.dialect.on_completion(payload)

    def _read_as_one_event(self, raw: bytes, t: float) -> None:
        """A body that is one event of a stream, not a complete response: a stream
        cut after that event (truncated unless the event was the finish), read as
        one NDJSON line, whole even when it spans lines."""
        if self.content_type:
            detail = f"a stream sent as {self.content_type}"
            self.state.note("content-type-not-sse", None, detail, None)
        self.mode = "ndjson"
        self.state.body = self.state.body_chars = None
        self.decoder = LineDecoder(self.max_event_bytes)
        text, valid = decode_utf8(raw.removeprefix(BOM).strip())
        self.decoder.dispatched = 1
        self._take_sse([SSEEvent(1, "", text, None, None, valid)], t)
