"""Recordings: the response body byte for byte in FILE, and beside it
FILE.timing.jsonl: the request (secrets redacted), the response head (status,
content type, headers without credentials, redirects), the end offset and
arrival time of every read, and why the stream stopped early (a transport
failure, an idle timeout). Both are flushed as they are written so a recording
survives a cut stream or a quit. `--replay` reads either a bare `.sse` body or
a body with its timing file; a timing file is read line by line and checked,
since bundles are shared with strangers."""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterator
from contextlib import aclosing, suppress
from pathlib import Path
from typing import IO, Any

from ..core.records import FrozenRecord, Record
from ..core.strict_json import loads
from ..process import plain_reason
from .base import (
    STOP_KINDS,
    TRANSPORT,
    BodyChunk,
    RequestSent,
    ResponseHead,
    Source,
    SourceItem,
    SourceItems,
    TransportError,
)
from .pump import idle_limited

FORMAT = "toolstream-recording/2"
FORMAT_PREFIX = "toolstream-recording/"
MAX_TIMING_LINE = 64 << 20  # the request line holds the request body; nothing else is long
Warn = Callable[[str], None]  # says something went wrong, and the work goes on
MAX_RECORDED_SECONDS = 86_400.0  # no stream lasts a day: a later time is a broken file


def timing_path(body_path: Path) -> Path:
    return body_path.with_name(body_path.name + ".timing.jsonl")


class Recorder:
    def __init__(self, path: Path, source: str, *, new: bool = False) -> None:
        """Opens FILE and FILE.timing.jsonl, both or neither (raises OSError; with
        `new`, FileExistsError when either exists, which is then left alone)."""
        self.path = path
        timing = timing_path(path)
        created = new or not timing.exists()
        mode = "x" if new else "w"
        self._timing: IO[str] = timing.open(mode, encoding="utf-8")
        try:
            self._body: IO[bytes] = path.open(mode + "b")
        except OSError:
            self._timing.close()
            if created:
                with suppress(OSError):
                    timing.unlink()
            raise
        self._source = source
        self.offset = 0  # the body's bytes written
        self._line({"format": FORMAT, "source": source})

    def write(self, item: SourceItem) -> None:
        if isinstance(item, RequestSent):
            self._line({"request": item.as_dict()})
        elif isinstance(item, ResponseHead):
            self._line(head_record(item))
        elif isinstance(item, BodyChunk):
            self._body.write(item.data)
            self._body.flush()
            self.offset += len(item.data)
            self._line({"end": self.offset, "t": round(item.t, 6)})
        else:
            stop = {"error": item.message, "t": round(item.t, 6)}
            self._line(stop if item.kind == TRANSPORT else {**stop, "kind": item.kind})

    def _line(self, record: dict[str, Any]) -> None:
        self._timing.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._timing.flush()

    def close(self) -> None:
        self._body.close()
        self._timing.close()


def head_record(head: ResponseHead) -> dict[str, Any]:
    """The response head as a timing line: what a replay needs to answer as it did
    (Retry-After, redirects), never a credential."""
    record: dict[str, Any] = {"status": head.status, "content_type": head.content_type}
    if head.reason:
        record["reason"] = head.reason
    if head.url:
        record["url"] = head.url
    if head.headers:
        record["headers"] = _safe_headers(head.headers)
    if head.redirects:
        record["redirects"] = list(head.redirects)
    if head.t is not None:
        record["t"] = round(head.t, 6)
    return record


async def recorded(items: SourceItems, recorder: Recorder, warn: Warn) -> SourceItems:
    """`items`, each written to `recorder` as it passes. A write that fails (a full
    disk) ends the recording, said by `warn`, never the stream."""
    recording = True
    try:
        async with aclosing(items):
            async for item in items:
                if recording:
                    recording = _written(recorder, item, warn)
                yield item
    finally:
        with suppress(OSError):  # what failed to write has been said
            recorder.close()


def _written(recorder: Recorder, item: SourceItem, warn: Warn) -> bool:
    try:
        recorder.write(item)
    except OSError as exc:
        kept = f"the first {recorder.offset:,} bytes of the body kept"
        warn(f"cannot record to {recorder.path}: {plain_reason(exc)}; recording stopped, {kept}")
        return False
    return True


class WatchStop(Record):
    """The watch stopped reading before the source ended (a size limit, a quit):
    after `at` bytes of the body, for the reason `why`. The source cannot know it,
    so its tape is told at the end, for a bundle that replays to the same end."""

    __slots__ = ("at", "why")

    def __init__(self, at: int, why: TransportError) -> None:
        self.at = at
        self.why = why


class Tape:
    """Everything a source yielded, kept so a repro bundle can be written at any
    moment, with or without --record. The body goes to an anonymous temporary
    file (a stream may be far bigger than memory); each read's end and arrival
    time are kept in arrays."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.request: RequestSent | None = None
        self.head: ResponseHead | None = None
        self.error: TransportError | None = None
        self.read_ends = array("q")
        self.read_times = array("d")
        import tempfile  # here: a headless run without --bundle keeps no tape

        # Closed by the last holder's close(), or with the process: it has no name
        # to leave behind.
        self._body: IO[bytes] = tempfile.TemporaryFile(prefix="toolstream-tape-")  # noqa: SIM115
        self._holders = 1
        self._read_since_kept = False  # a read moved the file's position off its end

    @property
    def length(self) -> int:
        return self.read_ends[-1] if self.read_ends else 0

    def keep(self, item: SourceItem) -> None:
        if isinstance(item, RequestSent):
            self.request = item
        elif isinstance(item, ResponseHead):
            self.head = item
        elif isinstance(item, BodyChunk):
            # Seeking flushes the file's buffer: one write call for every read kept.
            if self._read_since_kept:
                self._body.seek(0, os.SEEK_END)
                self._read_since_kept = False
            self._body.write(item.data)
            self.read_ends.append(self.length + len(item.data))
            self.read_times.append(item.t)
        else:
            self.error = item

    def body(self, start: int, end: int) -> bytes:
        """Bytes `start` to `end` of the body."""
        self._read_since_kept = True
        self._body.seek(start)
        return self._body.read(max(0, end - start))

    def items(self, stopped: WatchStop | None = None) -> Iterator[SourceItem]:
        """What the source yielded, in order; with `stopped`, as far as the watch
        read it, and why it stopped there."""
        if self.request is not None:
            yield self.request
        if self.head is not None:
            yield self.head
        start, read_to = 0, self.length if stopped is None else stopped.at
        for end, t in zip(self.read_ends, self.read_times, strict=True):
            if start >= read_to:
                break
            yield BodyChunk(self.body(start, min(end, read_to)), t)
            start = end
        if stopped is not None:
            yield stopped.why
        elif self.error is not None:
            yield self.error

    def save(self, path: Path, stopped: WatchStop | None = None) -> None:
        """Write the recording (FILE and FILE.timing.jsonl); raises OSError.
        `stopped`: where the watch stopped reading before the source ended."""
        recorder = Recorder(path, self.source)
        try:
            for item in self.items(stopped):
                recorder.write(item)
        finally:
            recorder.close()

    @property
    def closed(self) -> bool:
        return self._body.closed

    def share(self) -> Tape:
        """The tape for one more holder (a view of a request the proxy may forget
        while it is on screen): it stays readable until each holder has closed it."""
        self._holders += 1
        return self

    def close(self) -> None:
        self._holders -= 1
        if self._holders <= 0:
            self._body.close()


async def taped(items: SourceItems, tape: Tape) -> SourceItems:
    async with aclosing(items):
        async for item in items:
            tape.keep(item)
            yield item


def source_items(
    source: Source,
    record: Path | None,
    tape: Tape | None = None,
    idle_timeout: float | None = None,
    *,
    warn: Warn,
) -> SourceItems:
    """The source's items, ended by an idle-timeout stop after `idle_timeout`
    seconds without one, recorded to `record` when given (raises OSError if the
    recording cannot be opened; `warn` says it if a write fails later) and kept on
    `tape` when given."""
    items = source.items()
    if idle_timeout is not None:
        items = idle_limited(items, idle_timeout)
    if tape is not None:
        items = taped(items, tape)
    if record is None:
        return items
    return recorded(items, Recorder(record, source.label), warn)


# -- reading a timing file ---------------------------------------------------------


class RecordingError(ValueError):
    """A recording that cannot be replayed; the message says where and why."""


class RecordedRead(FrozenRecord):
    """One read of the body: it ended at byte `end` and arrived at `t`."""

    __slots__ = ("end", "t")

    def __init__(self, end: int, t: float | None) -> None:
        self.end = end
        self.t = t


TimingRecord = RequestSent | ResponseHead | RecordedRead | TransportError


def timing_records(file: IO[bytes], name: str) -> Iterator[TimingRecord]:
    """What each line of the timing file `name` says, read one line at a time and
    checked: raises RecordingError naming the first line that is not a record a
    recorder writes. No line may be longer than MAX_TIMING_LINE, so a hostile
    file cannot fill the memory."""
    reader = _TimingReader()
    number = 0
    while raw := file.readline(MAX_TIMING_LINE + 1):
        number += 1
        try:
            if len(raw) > MAX_TIMING_LINE:
                raise RecordingError(f"longer than {MAX_TIMING_LINE} bytes")
            record = None if raw.isspace() else reader.record(_json_object(raw))
        except RecordingError as exc:
            raise RecordingError(f"{name} line {number}: {exc}") from None
        if record is not None:
            yield record


def _json_object(line: bytes) -> dict[str, Any]:
    try:
        value = loads(line)
    except ValueError:  # also: not UTF-8, NaN or Infinity, too deep
        raise RecordingError("not JSON") from None
    if not isinstance(value, dict):
        raise RecordingError("not a JSON object")
    return value


class _TimingReader:
    """Checks records in order: reads never go back in offset or time."""

    def __init__(self) -> None:
        self.end = 0
        self.t = 0.0
        self.reading = False  # a read or stop came: the head is behind us

    def record(self, record: dict[str, Any]) -> TimingRecord | None:
        t = _seconds(record)
        if "end" in record:
            return self._read(record, t)
        if "error" in record:
            return self._stop(record, t)
        if self.reading and ("status" in record or "request" in record):
            raise RecordingError("the request or response head comes after the body")
        if "status" in record:
            return _head(record, t)
        if "request" in record:
            return _request(record["request"])
        if "format" in record:
            _format(record["format"])
            return None
        raise RecordingError("not a recording line (no end, error, status, request or format)")

    def _read(self, record: dict[str, Any], t: float | None) -> RecordedRead:
        end = record["end"]
        if not _is_int(end) or end < 0:
            raise RecordingError(f"end {_shown(end)} is not a byte offset")
        if end < self.end:
            raise RecordingError(f"end {end} goes back before {self.end}")
        self._advance(t)
        self.end = end
        return RecordedRead(end, t)

    def _stop(self, record: dict[str, Any], t: float | None) -> TransportError:
        message, kind = record["error"], record.get("kind", TRANSPORT)
        if not isinstance(message, str):
            raise RecordingError(f"error {_shown(message)} is not text")
        if not isinstance(kind, str) or kind not in STOP_KINDS:  # a list is not hashable
            raise RecordingError(f"kind {_shown(kind)} is not one of {', '.join(STOP_KINDS)}")
        self._advance(t)
        return TransportError(message, self.t, kind)

    def _advance(self, t: float | None) -> None:
        self.reading = True
        if t is None:
            return
        if t < self.t:
            raise RecordingError(f"t {t:g} goes back before {self.t:g}")
        self.t = t


def _seconds(record: dict[str, Any]) -> float | None:
    if "t" not in record:
        return None
    t = record["t"]
    if not isinstance(t, int | float) or isinstance(t, bool):
        raise RecordingError(f"t {_shown(t)} is not a number of seconds")
    # Compared as it is: an int past a float's range (10**400) has no float.
    if not 0 <= t <= MAX_RECORDED_SECONDS:
        raise RecordingError(f"t {_shown(t)} is outside 0..{MAX_RECORDED_SECONDS:g} seconds")
    return float(t)


def _head(record: dict[str, Any], t: float | None) -> ResponseHead:
    status = record["status"]
    if not _is_int(status) or not 100 <= status <= 999:
        raise RecordingError(f"status {_shown(status)} is not an HTTP status")
    headers = record.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(value, str) for value in headers.values()
    ):
        raise RecordingError("headers are not an object of texts")
    redirects = record.get("redirects", [])
    if not isinstance(redirects, list) or not all(isinstance(url, str) for url in redirects):
        raise RecordingError("redirects are not a list of URLs")
    return ResponseHead(
        status=status,
        content_type=_text(record, "content_type"),
        reason=_text(record, "reason"),
        url=_text(record, "url"),
        headers=_safe_headers(headers),
        redirects=tuple(redirects),
        t=t,
    )


def _request(request: Any) -> RequestSent:
    if not isinstance(request, dict):
        raise RecordingError("request is not an object")
    headers = request.get("headers", {})
    body = request.get("body")
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise RecordingError("request headers are not an object of texts")
    if body is not None and not isinstance(body, str):
        raise RecordingError("request body is not text")
    return RequestSent(
        method=_text(request, "method"), url=_text(request, "url"), headers=headers, body=body
    )


def _format(value: Any) -> None:
    if not isinstance(value, str) or not value.startswith(FORMAT_PREFIX):
        raise RecordingError(f"format {_shown(value)} is not a toolstream recording")


def _safe_headers(headers: dict[str, str]) -> dict[str, str]:
    """`secrets.safe_headers`, whose module (and the redactor under it) a replay of a
    bare body never loads."""
    from .secrets import safe_headers

    return safe_headers(headers)


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key, "")
    if not isinstance(value, str):
        raise RecordingError(f"{key} {_shown(value)} is not text")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A value from a hostile file, short enough for one line."""
    try:
        text = json.dumps(value[:41] if isinstance(value, str) else value, ensure_ascii=True)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


class TapeSource:
    """A tape played back at once (to draw a bundle's screenshot off-screen)."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.label = tape.source

    async def items(self) -> SourceItems:
        for item in self.tape.items():
            yield item
