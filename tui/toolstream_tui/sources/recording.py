"""Recordings: the response body byte for byte in FILE, and beside it
FILE.timing.jsonl: the request (secrets redacted), the response head, the end
offset and arrival time of every read, and any transport failure. Both are
flushed as they are written so a recording survives a cut stream or a quit.
`--replay` reads either a bare `.sse` body or a body with its timing file."""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from .base import BodyChunk, RequestSent, ResponseHead, Source, SourceItem, TransportError

FORMAT = "toolstream-recording/2"


def timing_path(body_path: Path) -> Path:
    return body_path.with_name(body_path.name + ".timing.jsonl")


class Recorder:
    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self._source = source
        self._body: IO[bytes] = path.open("wb")
        self._timing: IO[str] = timing_path(path).open("w", encoding="utf-8")
        self._offset = 0
        self._line({"format": FORMAT, "source": source})

    def write(self, item: SourceItem) -> None:
        if isinstance(item, RequestSent):
            self._line({"request": asdict(item)})
        elif isinstance(item, ResponseHead):
            head = {"status": item.status, "content_type": item.content_type}
            self._line(head if item.t is None else {**head, "t": round(item.t, 6)})
        elif isinstance(item, BodyChunk):
            self._body.write(item.data)
            self._body.flush()
            self._offset += len(item.data)
            self._line({"end": self._offset, "t": round(item.t, 6)})
        else:
            self._line({"error": item.message, "t": round(item.t, 6)})

    def _line(self, record: dict[str, Any]) -> None:
        self._timing.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._timing.flush()

    def close(self) -> None:
        self._body.close()
        self._timing.close()


async def recorded(
    items: AsyncIterator[SourceItem], recorder: Recorder
) -> AsyncIterator[SourceItem]:
    try:
        async with aclosing(items):
            async for item in items:
                recorder.write(item)
                yield item
    finally:
        recorder.close()


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
        # Closed by close(), or with the process: it has no name to leave behind.
        self._body: IO[bytes] = tempfile.TemporaryFile(prefix="toolstream-tape-")  # noqa: SIM115

    @property
    def length(self) -> int:
        return self.read_ends[-1] if self.read_ends else 0

    def keep(self, item: SourceItem) -> None:
        if isinstance(item, RequestSent):
            self.request = item
        elif isinstance(item, ResponseHead):
            self.head = item
        elif isinstance(item, BodyChunk):
            self._body.seek(0, os.SEEK_END)
            self._body.write(item.data)
            self.read_ends.append(self.length + len(item.data))
            self.read_times.append(item.t)
        else:
            self.error = item

    def body(self, start: int, end: int) -> bytes:
        """Bytes `start` to `end` of the body."""
        self._body.seek(start)
        return self._body.read(max(0, end - start))

    def items(self) -> Iterator[SourceItem]:
        """What the source yielded, in order."""
        if self.request is not None:
            yield self.request
        if self.head is not None:
            yield self.head
        start = 0
        for end, t in zip(self.read_ends, self.read_times, strict=True):
            yield BodyChunk(self.body(start, end), t)
            start = end
        if self.error is not None:
            yield self.error

    def save(self, path: Path) -> None:
        """Write the recording (FILE and FILE.timing.jsonl); raises OSError."""
        recorder = Recorder(path, self.source)
        try:
            for item in self.items():
                recorder.write(item)
        finally:
            recorder.close()

    def close(self) -> None:
        self._body.close()


async def taped(items: AsyncIterator[SourceItem], tape: Tape) -> AsyncIterator[SourceItem]:
    async with aclosing(items):
        async for item in items:
            tape.keep(item)
            yield item


def source_items(
    source: Source, record: Path | None, tape: Tape | None = None
) -> AsyncIterator[SourceItem]:
    """The source's items, recorded to `record` when given (raises OSError if the
    recording cannot be opened) and kept on `tape` when given."""
    items = source.items()
    if tape is not None:
        items = taped(items, tape)
    if record is None:
        return items
    return recorded(items, Recorder(record, source.label))


@dataclass(slots=True)
class Timing:
    """What a timing file says; empty for a bare body."""

    request: dict[str, Any] | None = None
    status: int = 200
    content_type: str = "text/event-stream"
    response_t: float | None = None
    reads: list[dict[str, Any]] = field(default_factory=list)


def read_timing(body_path: Path) -> Timing:
    timing = Timing()
    path = timing_path(body_path)
    if not path.exists():
        return timing
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if "request" in record:
            timing.request = record["request"]
        elif "status" in record:
            timing.status = int(record["status"])
            timing.content_type = str(record.get("content_type", ""))
            timing.response_t = _time_or_none(record.get("t"))
        elif "end" in record or "error" in record:
            timing.reads.append(record)
    return timing


def _time_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class TapeSource:
    """A tape played back at once (to draw a bundle's screenshot off-screen)."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.label = tape.source

    async def items(self) -> AsyncIterator[SourceItem]:
        for item in self.tape.items():
            yield item
