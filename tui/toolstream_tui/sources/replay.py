"""Replays a recording at its recorded pace scaled by `speed` (0 = as fast as
possible), cut at the recorded read boundaries where they are known.

The body and its timing file are read as the replay goes, a piece and a line at
a time, so memory stays flat however large they are, and a limit that stops
the stream stops the reading. Only regular files are read: a FIFO would block
and a device (`/dev/zero`) never ends. A recording that cannot be read ends the
replay with one line saying where and why."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..process import plain_reason
from .base import (
    UNREADABLE,
    BodyChunk,
    Clock,
    RequestSent,
    ResponseHead,
    SourceItems,
    Stopwatch,
    TransportError,
    monotonic,
)
from .key_variables import keys_set
from .recording import (
    RecordedRead,
    RecordingError,
    TimingRecord,
    timing_path,
    timing_records,
)

if TYPE_CHECKING:
    from .secrets import Redactor

READ_PIECE = 64 * 1024  # the most of the body held at once; also a bare body's read size
SSE_TYPE = "text/event-stream"
NDJSON_TYPE = "application/x-ndjson"
NDJSON_SUFFIXES = frozenset({".ndjson", ".jsonl"})
FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def machine_keys_redactor() -> Redactor | None:
    """A recording holds no secret of a request made here, but may hold a key of this
    machine's (a stream saved elsewhere, `curl -o`, in which a model echoed it back).
    None when no key is set, and the redaction modules stay unloaded."""
    if not keys_set():
        return None
    from .secrets import Redactor, secrets_in

    return Redactor(secrets_in("", {}))


def first_line_cut_short(data: bytes) -> bool:
    """Is the body one line of a JSON object cut short (it does not parse)? Only
    then can a name (.ndjson, .jsonl) say more than the bytes: an NDJSON stream cut
    in its first line, not a JSON response that fails. A whole response on one line,
    a JSON array or several lines are read as what they are, whatever the name."""
    line = data.strip()
    if line[:1] != b"{" or b"\n" in line:
        return False
    try:
        json.loads(line)
    except ValueError:
        return True
    return False


class ReplaySource:
    def __init__(self, path: Path, speed: float = 1.0, clock: Clock = monotonic) -> None:
        self.path = path
        self.speed = speed
        self.label = str(path)
        self._clock = clock
        self._t = 0.0  # the latest recorded time
        self.redactor = machine_keys_redactor()

    def items(self) -> SourceItems:
        items = self._items()
        return items if self.redactor is None else self.redactor.stream(items)

    async def _items(self) -> SourceItems:
        elapsed = Stopwatch(self._clock)
        self._t = 0.0
        replay = self._replay(elapsed)
        try:
            async for item in replay:
                yield item
        except (OSError, RecordingError) as exc:
            reason = plain_reason(exc) if isinstance(exc, OSError) else str(exc)
            message = f"cannot read recording {self.path}: {reason}"
            yield TransportError(message, self._t, UNREADABLE)
        finally:
            await replay.aclose()

    async def _replay(self, elapsed: Stopwatch) -> SourceItems:
        with open_regular(self.path) as body:
            timing = timing_path(self.path)
            if not timing.exists():
                async for item in self._bare(body, elapsed):
                    yield item
                return
            with open_regular(timing, timing.name) as lines:
                records = timing_records(lines, timing.name)
                async for item in self._timed(body, records, elapsed):
                    yield item

    async def _bare(self, body: IO[bytes], elapsed: Stopwatch) -> SourceItems:
        """A body without a timing file: its type is not known (the session sniffs
        it) and its reads are cut every READ_PIECE bytes."""
        data = body.read(READ_PIECE)
        ndjson = self.path.suffix.lower() in NDJSON_SUFFIXES and first_line_cut_short(data)
        yield ResponseHead(status=200, content_type=NDJSON_TYPE if ndjson else "")
        if not data:
            yield TransportError(f"empty recording: {self.path}", 0.0, UNREADABLE)
            return
        while data:
            yield BodyChunk(data, elapsed())
            data = body.read(READ_PIECE)

    async def _timed(
        self, body: IO[bytes], records: Iterator[TimingRecord], elapsed: Stopwatch
    ) -> SourceItems:
        # Recorded arrival times, not the replay's: timings and lanes show the
        # stream as it came from the provider, at any replay speed.
        opened, offset = False, 0
        for record in records:
            if opened and type(record) is RecordedRead and 0 <= record.end - offset <= READ_PIECE:
                if record.t is not None:  # the usual read, in one piece: the fast way
                    await self._wait_until(record.t, elapsed)
                    self._t = record.t
                data = body.read(record.end - offset)
                offset += len(data)
                check_body_holds(offset, record.end)
                yield BodyChunk(data, self._t)
                continue
            if isinstance(record, RequestSent):
                yield record
                continue
            if isinstance(record, ResponseHead):
                opened = True
                yield record
                continue
            if not opened and isinstance(record, RecordedRead):
                opened = True
                yield ResponseHead(status=200, content_type=SSE_TYPE)
            if record.t is not None:
                await self._wait_until(record.t, elapsed)
                self._t = record.t
            if isinstance(record, TransportError):  # before a head: it never answered
                yield record
                return
            for piece in read_pieces(body, record.end - offset):
                offset += len(piece)
                yield BodyChunk(piece, self._t)
            check_body_holds(offset, record.end)
        if not opened:
            yield ResponseHead(status=200, content_type=SSE_TYPE)
        for piece in read_pieces(body, None):
            if piece:
                yield BodyChunk(piece, self._t)

    async def _wait_until(self, recorded_t: float, elapsed: Stopwatch) -> None:
        await wait_until(recorded_t, self.speed, elapsed)


async def wait_until(recorded_t: float, speed: float, elapsed: Stopwatch) -> None:
    """Until `recorded_t` at `speed` times the recorded pace (0: never waits)."""
    if speed <= 0:
        return  # never waits: a headless run needs no event loop (pump.run_to_end)
    delay = recorded_t / speed - elapsed()
    if delay > 0:
        import asyncio

        await asyncio.sleep(delay)


def check_body_holds(read: int, recorded_end: int) -> None:
    """A body that ends before the read its timing file records is a damaged copy,
    not a stream the network cut (a recording keeps every byte it times)."""
    if read < recorded_end:
        raise RecordingError(
            f"the body ends at byte {read:,}, but its timing file records a read to "
            f"byte {recorded_end:,} (a copy cut short?)"
        )


def read_pieces(file: IO[bytes], size: int | None) -> Iterator[bytes]:
    """The next `size` bytes of `file` (all the rest when None), READ_PIECE at a
    time. Always one piece, empty at the end of the file or for an empty read,
    so every recorded read keeps its arrival time."""
    want = READ_PIECE if size is None else max(min(size, READ_PIECE), 0)
    data = file.read(want) if want else b""
    yield data
    left = None if size is None else size - len(data)
    while data and (left is None or left > 0):
        data = file.read(READ_PIECE if left is None else min(left, READ_PIECE))
        if data:
            yield data
        left = None if left is None else left - len(data)


def open_regular(path: Path, name: str | None = None) -> IO[bytes]:
    """`path` opened for reading, if it is a regular file; raises OSError or
    RecordingError (a FIFO would block, a device never ends)."""
    kind = FILE_KINDS.get(stat.S_IFMT(path.stat().st_mode))
    if kind is not None:
        raise RecordingError(f"{name + ' is ' if name else ''}{kind}, not a regular file")
    try:
        return path.open("rb")
    except OSError as exc:
        if name is None:
            raise
        raise RecordingError(f"{name}: {exc.strerror or exc}") from None
