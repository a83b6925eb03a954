"""Captures other tools saved: HAR files (a browser's DevTools, Playwright's
`record_har_path`, mitmproxy's HAR export) and mitmproxy flow files
(`mitmdump -w FILE`). Each request in one becomes a `CaptureEntry`, whose
`items` are what a live watch of it would have yielded.

Pure parsing: the file's bytes in, entries out. A capture keeps only when the
response began and ended, never when each read arrived, so the whole body is
given as arriving at the end of its receive time, and every label says that
per-event times are not recorded. What had to be undone (base64, gzip) or is
missing (an empty body, a timing) is said in the entry's notes."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from ..core.session import FRAMING_OF_TYPE
from .base import (
    UNREADABLE,
    BodyChunk,
    Clock,
    RequestSent,
    ResponseHead,
    SourceItem,
    SourceItems,
    Stopwatch,
    TransportError,
    monotonic,
)
from .capture_kind import FLOWS, HAR, TNETSTRING_START, capture_kind
from .decoding import GZIP, GZIP_MAGIC, GZIP_WBITS, BodyDecoder, UnsupportedEncoding
from .recording import MAX_RECORDED_SECONDS
from .replay import wait_until
from .secrets import Redactor, safe_headers, secrets_in

NOT_TIMED = "per-event times not recorded"
NO_RESPONSE = "the capture holds no response"
PIECE = 64 * 1024  # the body is handed on in reads of this size, as a replay's are
MAX_INFLATED = 256 << 20  # a gzip'd body inflating past this is refused (a bomb)
MAX_DEPTH = 64  # a flow nests a few levels; deeper is not a flow (and would exhaust the stack)
# The body is already decoded (undone here) or counted anew (by the core).
BODY_FRAMING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
EMPTY_BODY = (
    "the capture holds no response body{size} (browsers sometimes leave a stream's body "
    "out of a HAR)"
)
CUT_BODY = (
    "the capture holds {held} of the body's {size} bytes: the browser kept only its start "
    "(Firefox keeps 1 MiB of a body, devtools.netmonitor.responseBodyLimit)"
)


# A file a HAR names instead of holding a body (Playwright's `record_har_content=
# "attach"`, and its .zip captures): its bytes, or None when it is not there.
Attachment = Callable[[str], bytes | None]
ATTACHED_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # one name in the HAR's folder


def no_attachments(name: str) -> None:
    return None


class CaptureError(ValueError):
    """A capture that cannot be read: one line saying where and why."""


@dataclass(frozen=True, slots=True)
class CaptureEntry:
    """One request and its response as the capture kept them. The request's
    headers still hold its secrets: `items` and `label` redact them."""

    number: int  # from 1, in the capture's order
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes | None
    started_at: float | None  # wall clock (seconds since the epoch), where recorded
    status: int | None  # None: no response was captured
    reason: str = ""
    response_headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes = b""
    head_t: float | None = None  # seconds from the request to the response head
    end_t: float | None = None  # ... to the end of the body
    error: str | None = None  # why the exchange failed, where the capture says
    unreadable: str | None = None  # why the body (past what it holds) cannot be read
    notes: tuple[str, ...] = ()

    @property
    def streaming(self) -> bool:
        """A response framed as a stream (SSE, NDJSON, AWS event-stream), or one to a
        request that asked for a stream."""
        media = self.content_type.partition(";")[0].strip().lower()
        return media in FRAMING_OF_TYPE or asked_for_stream(self.request_body)

    def redactor(self, dialect: str | None = None) -> Redactor:
        return Redactor(secrets_in(self.url, self.request_headers), dialect)

    def label(self, capture_name: str) -> str:
        """Where the stream came from, for the status bar and the report."""
        url = self.redactor().url(self.url)
        return f"{capture_name} #{self.number}: {self.method} {url} · {NOT_TIMED}"

    def items(self, dialect: str | None = None) -> Iterator[SourceItem]:
        """What a live watch of this request would have yielded, secrets redacted
        from the request; the body's secrets are redacted by the source that
        reads these (`Redactor.stream`)."""
        redactor = self.redactor(dialect)
        # As http.redacted_request does, without loading httpx for a replay.
        body = self.request_body.decode("utf-8", errors="replace") if self.request_body else None
        yield RequestSent(
            method=self.method,
            url=redactor.url(self.url),
            headers=redactor.headers(self.request_headers),
            body=redactor.text(body) if body is not None else None,
        )
        yield from self.response_items(redactor)

    def response_items(self, redactor: Redactor) -> Iterator[SourceItem]:
        """The response as a source yields it: the head (its URL redacted), the
        body, how it stopped."""
        if self.status is None:
            yield TransportError(self.error or NO_RESPONSE, self.end_t or 0.0)
            return
        yield ResponseHead(
            status=self.status,
            content_type=self.content_type,
            reason=self.reason,
            url=redactor.url(self.url),
            headers=redactor.headers(kept_response_headers(self.response_headers)),
            t=self.head_t,
        )
        arrived = self.end_t if self.end_t is not None else (self.head_t or 0.0)
        for start in range(0, len(self.body), PIECE):
            yield BodyChunk(self.body[start : start + PIECE], arrived)
        if self.unreadable:  # the capture is at fault, not the stream: an error
            yield TransportError(self.unreadable, arrived, UNREADABLE)
            return
        if self.error:
            yield TransportError(self.error, arrived)


@dataclass(frozen=True, slots=True)
class Capture:
    kind: str  # HAR or FLOWS
    name: str  # the file's name, for labels
    entries: tuple[CaptureEntry, ...]
    notes: tuple[str, ...] = ()  # about the whole file (flows that are not HTTP)

    @property
    def streams(self) -> list[CaptureEntry]:
        return [entry for entry in self.entries if entry.streaming]


class CaptureSource:
    """One captured request, replayed as its capture timed it, scaled by `speed`
    (0 = as fast as possible), with every secret of the request redacted from the
    request and from the body."""

    def __init__(
        self,
        entry: CaptureEntry,
        capture_name: str,
        speed: float = 1.0,
        dialect: str | None = None,
        clock: Clock = monotonic,
    ) -> None:
        self.entry = entry
        self.speed = speed
        self.dialect = dialect
        self.label = entry.label(capture_name)
        self._clock = clock

    def items(self) -> SourceItems:
        return self.entry.redactor(self.dialect).stream(self._items())

    async def _items(self) -> SourceItems:
        elapsed = Stopwatch(self._clock)
        for item in self.entry.items(self.dialect):
            t = item.t if isinstance(item, ResponseHead | BodyChunk | TransportError) else None
            if t is not None:
                await wait_until(t, self.speed, elapsed)
            yield item


def asked_for_stream(body: bytes | None) -> bool:
    if not body or b'"stream"' not in body:
        return False
    try:
        payload = json.loads(body)
    except ValueError:
        return False
    return isinstance(payload, dict) and payload.get("stream") is True


def kept_response_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The response's headers without credentials, and without those that describe
    the body's encoding on the wire (it is given decoded)."""
    return {
        name: value
        for name, value in safe_headers(headers).items()
        if name.lower() not in BODY_FRAMING_HEADERS
    }


def read_capture(data: bytes, name: str, attachment: Attachment = no_attachments) -> Capture:
    """The capture in `data` (a file called `name`), its attached files read with
    `attachment`; raises CaptureError."""
    kind = capture_kind(data[:4096])
    if kind == HAR:
        return read_har(data, name, attachment)
    if kind == FLOWS:
        return read_flows(data, name)
    raise CaptureError(f"{name} is neither a HAR file nor a mitmproxy flow file")


# -- HAR -----------------------------------------------------------------------------


def read_har(data: bytes, name: str, attachment: Attachment = no_attachments) -> Capture:
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise CaptureError(f"{name}: not UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise CaptureError(
            f"{name}: not JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:  # nested past what Python's parser can follow
        raise CaptureError(f"{name}: JSON nested too deeply to read") from None
    except ValueError:  # an integer past the digits Python reads (strict_json sets them)
        raise CaptureError(f"{name}: a number in it is too long to read") from None
    log = document.get("log") if isinstance(document, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise CaptureError(f'{name}: a HAR file needs "log": {{"entries": [...]}}')
    read = [har_entry(entry, number, name, attachment) for number, entry in enumerate(entries, 1)]
    return Capture(HAR, name, tuple(read))


def har_entry(entry: Any, number: int, name: str, attachment: Attachment) -> CaptureEntry:
    where = f"{name}: entry {number}"
    request, response = _object(entry, "request", where), _object(entry, "response", where)
    started = _har_time(entry.get("startedDateTime"))
    head_t, end_t, timing_notes = har_timings(entry.get("timings"), where)
    content = _object(response, "content", where)
    body, body_notes, unreadable = har_body(content, attachment)
    status = _har_status(response.get("status"))
    has_response = status is not None and status > 0
    notes = (*timing_notes, *body_notes) if has_response else ()
    unreadable = unreadable or body_cut(content, body)
    error_text = response.get("_error")
    return CaptureEntry(
        number=number,
        method=str(request.get("method") or "GET"),
        url=str(request.get("url") or ""),
        request_headers=header_dict(_pairs(request.get("headers"))),
        request_body=har_request_body(request.get("postData"), attachment),
        started_at=started,
        status=status if has_response else None,
        reason=str(response.get("statusText") or ""),
        response_headers=header_dict(_pairs(response.get("headers"))),
        content_type=har_content_type(response),
        body=body,
        head_t=head_t,
        end_t=end_t,
        error=str(error_text) if error_text else None if has_response else NO_RESPONSE,
        unreadable=unreadable or None,
        notes=notes,
    )


def _object(parent: Any, key: str, where: str) -> dict[str, Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    if value is None and key == "content":
        return {}
    if not isinstance(value, dict):
        raise CaptureError(f'{where} has no "{key}" object')
    return value


def _pairs(headers: Any) -> Iterator[tuple[str, str]]:
    for header in headers if isinstance(headers, list) else ():
        if isinstance(header, dict) and "name" in header:
            yield str(header["name"]), str(header.get("value", ""))


def header_dict(pairs: Iterator[tuple[str, str]]) -> dict[str, str]:
    """Headers by name, a repeated one joined with ", " (as HTTP allows); HTTP/2's
    pseudo-headers (":authority") are not headers of the message."""
    headers: dict[str, str] = {}
    for name, value in pairs:
        if name.startswith(":"):
            continue
        existing = next((key for key in headers if key.lower() == name.lower()), None)
        if existing is None:
            headers[name] = value
        else:
            headers[existing] += ", " + value
    return headers


def har_content_type(response: dict[str, Any]) -> str:
    headers = header_dict(_pairs(response.get("headers")))
    from_headers = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    if from_headers is not None:
        return from_headers
    content = response.get("content")
    mime = content.get("mimeType") if isinstance(content, dict) else None
    return str(mime) if mime else ""


def har_request_body(post_data: Any, attachment: Attachment = no_attachments) -> bytes | None:
    if not isinstance(post_data, dict):
        return None
    if not post_data.get("text") and isinstance(post_data.get("_file"), str):
        return attached(post_data["_file"], attachment)[0] or None
    text = post_data.get("text")
    if not isinstance(text, str):
        return None
    if post_data.get("encoding") == "base64":  # not in the HAR 1.2 spec; some writers do it
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            return text.encode("utf-8", errors="surrogatepass")
    return text.encode("utf-8", errors="surrogatepass")


def attached(name: str, attachment: Attachment) -> tuple[bytes, str]:
    """The bytes of the file `name` a HAR names, and why they could not be read."""
    if not ATTACHED_NAME.fullmatch(name):
        return b"", f"the body is in {name!r}, which is not a file name beside the HAR"
    data = attachment(name)
    if data is None:
        limit = MAX_INFLATED >> 20
        return b"", f"the body is in the attached file {name}, missing or over {limit} MiB"
    return data, ""


def har_body(
    content: dict[str, Any], attachment: Attachment = no_attachments
) -> tuple[bytes, list[str], str]:
    """The response body's bytes, what was done to get them, and why they could not
    be got ("" when they could)."""
    if not content.get("text") and isinstance(content.get("_file"), str):
        file_name = content["_file"]
        data, problem = attached(file_name, attachment)
        said = [] if problem else [f"the body was read from the attached file {file_name}"]
        return data, said, problem
    text = content.get("text")
    size = content.get("size")
    if not isinstance(text, str) or not text:
        received = (
            f", though {size} bytes were received" if isinstance(size, int) and size > 0 else ""
        )
        return b"", [EMPTY_BODY.format(size=received)], ""
    notes: list[str] = []
    if content.get("encoding") == "base64":
        try:
            data = base64.b64decode(text, validate=False)
        except binascii.Error as exc:
            return b"", [], f"the body is marked base64 but does not decode: {exc}"
        notes.append("the body was stored base64-encoded; decoded")
    elif text.startswith("\x1f\x8b") and max(map(ord, text)) < 256:
        data = text.encode("latin-1")  # gzip'd bytes kept one character per byte
    else:
        data = text.encode("utf-8", errors="surrogatepass")
    if data.startswith(GZIP_MAGIC):
        return ungzipped(data, notes)
    return data, notes, ""


def body_cut(content: dict[str, Any], body: bytes) -> str:
    """Why the capture holds less of the body than the size it gives for it, or ""."""
    size = content.get("size")
    if not body or not isinstance(size, int) or isinstance(size, bool) or size <= len(body):
        return ""
    return CUT_BODY.format(held=len(body), size=size)


def ungzipped(data: bytes, notes: list[str]) -> tuple[bytes, list[str], str]:
    plain, problem = inflated(data, "gzip")
    if problem:
        return b"", notes, f"the body begins as gzip but does not unzip: {problem}"
    return plain, [*notes, "the body was stored gzip'd; unzipped"], ""


def inflated(data: bytes, coding: str) -> tuple[bytes, str]:
    """`data` gzip'd or deflated (zlib-wrapped or raw), inflated a bounded piece at a
    time; and what is wrong with it ("" when nothing): a whole capture is in
    memory, so a body that inflates past MAX_INFLATED is refused, not held."""
    wbits = GZIP_WBITS if coding in GZIP else zlib.MAX_WBITS
    if coding not in GZIP and not zlib_wrapped(data):
        wbits = -zlib.MAX_WBITS
    inflater, out = zlib.decompressobj(wbits), bytearray()
    try:
        while True:
            piece = inflater.decompress(data, PIECE)
            out += piece
            if len(out) > MAX_INFLATED:
                return b"", f"it inflates past {MAX_INFLATED >> 20} MiB"
            data = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data.startswith(GZIP_MAGIC) and wbits > 0:
                inflater, data = zlib.decompressobj(wbits), inflater.unused_data  # next member
            elif inflater.eof or (not data and len(piece) < PIECE):
                break
    except zlib.error as exc:
        return b"", str(exc)
    return (bytes(out), "") if inflater.eof else (b"", "it is cut short")


def zlib_wrapped(data: bytes) -> bool:
    """Does a deflate body start with a zlib header (RFC 1950), not raw deflate?"""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def har_timings(timings: Any, where: str) -> tuple[float | None, float | None, list[str]]:
    """Seconds from the request to the response head and to the body's end, from the
    HAR's timings (milliseconds; -1 where a phase does not apply). A phase, or
    their sum, past a day is refused as a timing file's `t` is (a wait must end)."""
    if not isinstance(timings, dict):
        return None, None, ["the capture has no timings: every time shown is 0"]

    def phase(key: str) -> float:
        value = timings.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            return 0.0  # not a number, or -1: the phase does not apply
        # Compared as it is: an int past a float's range has no float; NaN fails too.
        if not value <= MAX_RECORDED_SECONDS * 1000:
            raise CaptureError(
                f"{where}: timings.{key} is {_milliseconds_shown(value)}, "
                f"outside 0..{MAX_RECORDED_SECONDS:g} seconds"
            )
        return float(value)

    # "ssl" is part of "connect" (HAR 1.2), so it is not added again.
    head = sum(phase(key) for key in ("blocked", "dns", "connect", "send", "wait")) / 1000
    end = head + phase("receive") / 1000
    if end > MAX_RECORDED_SECONDS:
        raise CaptureError(
            f"{where}: its timings add up to {end:g} seconds, "
            f"outside 0..{MAX_RECORDED_SECONDS:g} seconds"
        )
    return head, end, []


def _milliseconds_shown(value: float) -> str:
    try:
        return f"{value:g} ms"
    except OverflowError:  # an int past a float's range
        return f"a {len(str(value))}-digit number of ms"


def _har_time(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- mitmproxy flows -----------------------------------------------------------------


def read_flows(data: bytes, name: str) -> Capture:
    """Every HTTP flow of a `mitmdump -w` file: tnetstring-serialised dictionaries,
    one after another (the format of mitmproxy's io module; read here without it)."""
    entries: list[CaptureEntry] = []
    skipped: dict[str, int] = {}
    offset, number = 0, 0
    while data[offset:].strip():
        number += 1
        try:
            flow, offset = tnetstring_value(data, offset, 0)
        except CaptureError as exc:
            raise CaptureError(f"{name}: flow {number}: {exc}") from None
        if not isinstance(flow, dict):
            raise CaptureError(f"{name}: flow {number} is not a dictionary")
        kind = _text(flow.get("type")) or "?"
        if kind != "http":
            skipped[kind] = skipped.get(kind, 0) + 1
            continue
        entries.append(flow_entry(flow, len(entries) + 1, name))
    notes = tuple(f"{count} {kind} flow(s) skipped: not HTTP" for kind, count in skipped.items())
    return Capture(FLOWS, name, tuple(entries), notes)


def tnetstring_value(
    data: bytes, start: int, depth: int, limit: int | None = None
) -> tuple[Any, int]:
    """The value at `start` (ending before `limit`), and where the next one begins;
    raises CaptureError."""
    if depth > MAX_DEPTH:
        raise CaptureError(f"nested deeper than {MAX_DEPTH} levels at byte {start}")
    limit = len(data) if limit is None else limit
    match = TNETSTRING_START.match(data, start, limit)
    if match is None:
        raise CaptureError(f"not a tnetstring at byte {start} (a length and ':' expected)")
    body = match.end()
    end = body + int(match.group(1))
    if end >= limit:
        raise CaptureError(f"cut short: the value at byte {start} needs {end + 1 - start} bytes")
    tag = data[end : end + 1]
    payload = data[body:end]
    if tag in (b"]", b"}"):
        items = _tnetstring_items(data, body, end, depth)
        value: Any = items if tag == b"]" else _dictionary(items, start)
        return value, end + 1
    return _scalar(tag, payload, start), end + 1


def _tnetstring_items(data: bytes, start: int, end: int, depth: int) -> list[Any]:
    items: list[Any] = []
    offset = start
    while offset < end:
        item, offset = tnetstring_value(data, offset, depth + 1, end)
        items.append(item)
    return items


def _dictionary(items: list[Any], start: int) -> dict[str, Any]:
    if len(items) % 2:
        raise CaptureError(f"the dictionary at byte {start} has a key without a value")
    return {_text(key): value for key, value in zip(items[::2], items[1::2], strict=True)}


def _scalar(tag: bytes, payload: bytes, start: int) -> Any:
    try:
        if tag == b",":
            return payload
        if tag == b";":
            return payload.decode("utf-8", errors="surrogateescape")
        if tag == b"#":
            return int(payload)
        if tag == b"^":
            return float(payload)
        if tag == b"!" and payload in (b"true", b"false"):
            return payload == b"true"
        if tag == b"~" and not payload:
            return None
    except ValueError:
        pass
    raise CaptureError(f"the value at byte {start} is not a tnetstring ({tag!r}: {payload[:20]!r})")


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def flow_entry(flow: dict[str, Any], number: int, name: str) -> CaptureEntry:
    request = flow.get("request")
    if not isinstance(request, dict) or not request.get("method"):
        version = flow.get("version")
        raise CaptureError(f"{name}: flow {number} (format {version!r}) has no request method")
    response = flow.get("response") if isinstance(flow.get("response"), dict) else None
    started = _number(request.get("timestamp_start"))
    error = flow.get("error")
    message = _text(error.get("msg")) if isinstance(error, dict) else None
    if response is None:
        return CaptureEntry(
            number,
            _text(request["method"]),
            flow_url(request),
            header_dict(flow_headers(request.get("headers"))),
            _body_bytes(request.get("content")),
            started,
            None,
            error=message or NO_RESPONSE,
        )
    headers = header_dict(flow_headers(response.get("headers")))
    body, notes, failure = flow_body(response.get("content"), headers)
    status = _status(response.get("status_code"))
    if status is None:
        message = message or "the flow's response has no status code"
    return CaptureEntry(
        number=number,
        method=_text(request["method"]),
        url=flow_url(request),
        request_headers=header_dict(flow_headers(request.get("headers"))),
        request_body=_body_bytes(request.get("content")),
        started_at=started,
        status=status,
        reason=_text(response.get("reason")),
        response_headers=headers,
        content_type=next((v for k, v in headers.items() if k.lower() == "content-type"), ""),
        body=body,
        head_t=_since(started, response, "timestamp_start", f"{name}: flow {number}"),
        end_t=_since(started, response, "timestamp_end", f"{name}: flow {number}"),
        error=message,
        unreadable=failure or None,
        notes=tuple(notes),
    )


def flow_url(request: dict[str, Any]) -> str:
    scheme = _text(request.get("scheme")) or "http"
    path = _text(request.get("path")) or "/"
    if path.startswith(("http://", "https://")):  # a proxy request's absolute form
        return path
    authority = _text(request.get("authority"))
    if not authority:
        host, port = _text(request.get("host")), request.get("port")
        default = {"http": 80, "https": 443}.get(scheme)
        authority = host if port in (None, default) else f"{host}:{port}"
    url = f"{scheme}://{authority}{path}"
    try:
        urlsplit(url)
    except ValueError:
        return url  # shown as it is: the redactor copes with a broken URL
    return url


def flow_headers(headers: Any) -> Iterator[tuple[str, str]]:
    for pair in headers if isinstance(headers, list) else ():
        if isinstance(pair, list | tuple) and len(pair) == 2:
            yield _text(pair[0]), _text(pair[1])


def flow_body(content: Any, headers: dict[str, str]) -> tuple[bytes, list[str], str]:
    """The body as the core reads it: mitmproxy keeps it as it came over the wire,
    so its Content-Encoding is undone here."""
    data = _body_bytes(content) or b""
    if not data:
        return b"", [EMPTY_BODY.format(size="")], ""
    encoding = next((v for k, v in headers.items() if k.lower() == "content-encoding"), "")
    try:
        coding = BodyDecoder(encoding).coding
    except UnsupportedEncoding as exc:
        return b"", [], f"cannot decode the body: {exc}"
    if coding is None:
        return data, [], ""
    plain, problem = inflated(data, coding)
    if problem:
        return b"", [], f"the body does not decode as {encoding}: {problem}"
    return plain, [f"the body was sent {coding}-encoded; decoded"], ""


def _body_bytes(content: Any) -> bytes | None:
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode("utf-8", errors="surrogateescape")
    return None


def _status(value: Any) -> int | None:
    """A flow's status code; None when it has none (a response the flow cannot give)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _har_status(value: Any) -> int | None:
    """A HAR entry's status: written as text (`"200"`, as some HAR writers do), the
    same code."""
    if isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 3:
        return int(value)
    return _status(value)


def _number(value: Any) -> float | None:
    """A finite number (JSON can say Infinity; a wait must never be endless)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:  # an int past a float's range: no time either
        return None


def _since(start: float | None, response: dict[str, Any], key: str, where: str) -> float | None:
    """Seconds from the request to the response's `key` time; past a day is refused,
    as a timing file's `t` is (a wait must end)."""
    moment = _number(response.get(key))
    if start is None or moment is None:
        return None
    seconds = max(0.0, moment - start)
    if seconds > MAX_RECORDED_SECONDS:
        raise CaptureError(
            f"{where}: response.{key} is {seconds:g} seconds after the request, "
            f"outside 0..{MAX_RECORDED_SECONDS:g} seconds"
        )
    return seconds
