"""The pipe from the forwarding process to the watching one: what goes down it
(each request's `Exchange`, then its `ProxiedItem`s up to a `ResponseEnd`), how
each item is framed, the forwarder's end (`PipeFeed`, which never makes the
forwarder wait and caps what it holds for a watcher that does not read) and the
watcher's end (`FrameReader`)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import dataclasses
import pickle
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..sources.base import BodyChunk, RequestSent, ResponseHead, SourceItem, TransportError

FRAME_LENGTH = struct.Struct(">I")  # the size of the rest of a frame
CHUNK_HEAD = struct.Struct(">IcId")  # length, kind, request id, arrival time
CHUNK_KIND, FIELDS_KIND, PICKLE_KIND = b"b", b"f", b"p"
FLUSH_POLL_S = 0.01
BATCH_S = 0.01  # the watcher's screen redraws far less often than this
BATCH_BYTES = 256 * 1024
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 256 * 1024  # blocks this big or bigger are mapped on their own


# -- what the forwarder hands the watching process ------------------------------------


@dataclass(frozen=True, slots=True)
class Exchange:
    """A request as the proxy received and forwarded it. The headers still hold the
    client's secrets: the consumer redacts before keeping or showing anything."""

    method: str
    path: str  # as the client asked for it, query included
    url: str  # where it was forwarded
    headers: dict[str, str]
    body: bytes
    started_at: float  # wall clock, for display
    started: float  # time.monotonic(), for a live duration
    recording: str | None = None  # where the forwarder records it (--record-dir)


@dataclass(frozen=True, slots=True)
class Note:
    """Something about the request that is not in the response (a client that left,
    a refusal): shown on its row."""

    text: str


@dataclass(frozen=True, slots=True)
class ResponseEnd:
    """The forwarder is done with the request: `t` seconds after forwarding began,
    `forwarded` body bytes sent to the client."""

    t: float
    forwarded: int


@dataclass(frozen=True, slots=True)
class WatchGap:
    """The watching process fell so far behind that the forwarder stopped keeping
    this request's body for it: `dropped` bytes the client got and the watcher did
    not, from `t` on (the recording, if any, has them all)."""

    dropped: int
    t: float


@dataclass(frozen=True, slots=True)
class ClientGone:
    """The client disconnected before the response ended; the forwarder closed the
    upstream request. `message` says after how many bytes."""

    message: str
    t: float


ProxiedItem = SourceItem | Note | ResponseEnd | WatchGap | ClientGone


# -- the frames -------------------------------------------------------------------------


def frame(request_id: int, item: ProxiedItem | Exchange) -> bytes:
    """One item on the pipe from the forwarding process: its length, its kind, then
    a body read as it came (the common case, kept cheap), an item of a known kind
    as its fields, or any other item as a pickle. Only ever read back by the
    process that started the forwarder."""
    if type(item) is BodyChunk:
        return chunk_head(request_id, item) + item.data
    known = FIELDED.get(type(item))
    if known is not None:
        index, names = known
        values = [getattr(item, name) for name in names]
        payload = pickle.dumps((request_id, index, values), protocol=pickle.HIGHEST_PROTOCOL)
        return FRAME_LENGTH.pack(len(payload) + 1) + FIELDS_KIND + payload
    payload = pickle.dumps((request_id, item), protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME_LENGTH.pack(len(payload) + 1) + PICKLE_KIND + payload


def field_names(kind: type) -> tuple[str, ...]:
    """What makes an item of this kind: a dataclass's fields, a record's slots (each
    named as its __init__ takes it)."""
    if dataclasses.is_dataclass(kind):
        return tuple(field.name for field in dataclasses.fields(kind))
    return tuple(kind.__dict__["__slots__"])


# The items other than body reads (a few a request) go as a list of their fields,
# rebuilt by keyword: pickling the objects themselves ran copyreg's and dataclasses'
# Python code for each (5 us an Exchange, 10 us a ResponseHead, in each process),
# a list of plain values is pickled by C alone.
KINDS: tuple[type, ...] = (
    Exchange,
    ResponseHead,
    ResponseEnd,
    Note,
    TransportError,
    WatchGap,
    ClientGone,
    RequestSent,
)
FIELDED: dict[type, tuple[int, tuple[str, ...]]] = {
    kind: (index, field_names(kind)) for index, kind in enumerate(KINDS)
}


def chunk_head(request_id: int, chunk: BodyChunk) -> bytes:
    """What comes before a body read's bytes in its frame."""
    size = CHUNK_HEAD.size - FRAME_LENGTH.size + len(chunk.data)
    return CHUNK_HEAD.pack(size, CHUNK_KIND, request_id, chunk.t)


class FrameReader(asyncio.Protocol):
    """The watcher's end: reads frames from the forwarding process and hands each
    item on."""

    def __init__(self, on_item: Callable[[int, ProxiedItem | Exchange], None]) -> None:
        self._on_item = on_item
        self._buffer = bytearray()
        self._offset = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        offset = self._offset
        while len(buffer) - offset >= FRAME_LENGTH.size:
            (size,) = FRAME_LENGTH.unpack_from(buffer, offset)
            end = offset + FRAME_LENGTH.size + size
            if len(buffer) < end:
                break
            self._on_item(*self._item(buffer, offset, end))
            offset = end
        if offset > len(buffer) // 2:  # keep the buffer from growing by its consumed head
            del buffer[:offset]
            offset = 0
        self._offset = offset

    @staticmethod
    def _item(buffer: bytearray, offset: int, end: int) -> tuple[int, ProxiedItem | Exchange]:
        kind = buffer[offset + FRAME_LENGTH.size : offset + FRAME_LENGTH.size + 1]
        if kind == CHUNK_KIND:
            _, _, request_id, t = CHUNK_HEAD.unpack_from(buffer, offset)
            return request_id, BodyChunk(bytes(buffer[offset + CHUNK_HEAD.size : end]), t)
        payload = buffer[offset + FRAME_LENGTH.size + 1 : end]
        if kind == FIELDS_KIND:
            request_id, index, values = pickle.loads(payload)
            kind_of_item = KINDS[index]
            return request_id, kind_of_item(
                **dict(zip(FIELDED[kind_of_item][1], values, strict=True))
            )
        request_id, item = pickle.loads(payload)
        return request_id, item

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


# -- the forwarder's end ------------------------------------------------------------------

Feed = Callable[[int, "ProxiedItem | Exchange"], None]


class Recording(Protocol):
    """Where a request is recorded as it passes (`recording.ExchangeRecording`)."""

    path: Path
    task: asyncio.Task[None]

    def put(self, item: ProxiedItem) -> None: ...


class Outlet:
    """One request's items, numbered, for the watching process (and its recording,
    which gets every item, however far behind the watcher is)."""

    def __init__(self, request_id: int, feed: Feed) -> None:
        self.request_id = request_id
        self._feed = feed
        self.recording: Recording | None = None

    def put(self, item: ProxiedItem | Exchange) -> None:
        if self.recording is not None and not isinstance(item, Exchange):
            self.recording.put(item)
        self._feed(self.request_id, item)


@dataclasses.dataclass(slots=True)
class Gap:
    """A request's body from the read at `t` on, not kept for a lagging watcher."""

    t: float
    dropped: int = 0
    announced: bool = False  # the WatchGap has gone to the watcher


def give_large_blocks_back_at_once() -> None:
    """Blocks of MMAP_THRESHOLD bytes and more get pages of their own, returned
    to the system when freed. glibc starts so (at 128 KiB), but raises the
    threshold to the size of each such block freed, up to 32 MiB: once the
    backlog held for a lagging watcher had been freed, the next ones grew inside
    the forwarder thread's arena, whose pages stayed (bench/proxy.py --soak at
    256 streams: idle RSS 46 -> 84 -> 87 MB over the cycles; with the threshold
    fixed, 49 -> 47 -> 47 MB, and no need to trim the arenas once the watcher has
    caught up). glibc only; call before the threads start."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c")).mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


class PipeFeed(asyncio.Protocol):
    """Frames to the watching process down a pipe, written by the forwarder's own
    loop: a write never waits (asyncio keeps what the pipe cannot take yet), and
    once the watching process is gone, nothing more is written. The frames put
    within BATCH_S go in one write (sooner past BATCH_BYTES): each write costs a
    system call here and a wake-up there, ~90 us on this machine's 2 cores, which
    paid per chunk of 64 streams was most of a core; each item carries the time
    its bytes arrived, so the batching moves no figure the watcher shows.

    While the watcher lags (the pipe full, the transport paused), the frames wait
    here and go in one write once the transport has written all it held: adding
    to a transport's part-written buffer copies all of it (CPython's bytearray
    moves its contents when it grows after a cut at the front), which on a 21 MB
    stream read at full speed was half the forwarder's CPU.

    What it holds for a watcher that does not read (stopped, stuck on a long
    frame) is capped at `cap` bytes of frames: past it, a request's body is no
    longer kept for the watcher, from that read to its end (a core cannot read
    past a hole), and the request's next other item is preceded by a `WatchGap`
    with the bytes dropped. The items that are not body (a request's head, its
    end) are always kept: a few hundred bytes a request."""

    def __init__(self, cap: int) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self.gone = False
        self.cap = cap
        # One growing buffer, not a list of frames: hundreds of thousands of small
        # frames held for a lagging watcher left the allocator's arenas fragmented
        # (the soak's forwarder grew by a fifth a cycle at 256 streams).
        self._frames = bytearray()
        self._timer: asyncio.TimerHandle | None = None
        self._paused = False
        self._gaps: dict[int, Gap] = {}  # requests whose body the watcher no longer gets

    async def open(self, fd: int) -> None:
        pipe = open(fd, "wb", buffering=0)  # noqa: SIM115 - the transport closes it
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_write_pipe(lambda: self, pipe)
        # Paused as soon as it holds anything, resumed once it holds nothing.
        self.transport.set_write_buffer_limits(high=1, low=0)

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._frames:
            self._write()

    @property
    def held(self) -> int:
        """Bytes of frames not yet in the pipe."""
        transport = self.transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return len(self._frames) + buffered

    def put(self, request_id: int, item: ProxiedItem | Exchange) -> None:
        if self.transport is None or self.gone:
            return
        gap = self._gaps.get(request_id)
        if type(item) is BodyChunk:
            if gap is None and self.held + len(item.data) <= self.cap:
                self._hold(chunk_head(request_id, item), item.data)  # no frame joined first
            else:
                gap = gap or self._gaps.setdefault(request_id, Gap(item.t))
                gap.dropped += len(item.data)
            return
        if type(item) is Exchange and self.held + len(item.body) > self.cap:
            self._hold(frame(request_id, dataclasses.replace(item, body=b"")))
            note = f"the request body ({len(item.body)} bytes) was not kept for the watcher"
            self._hold(frame(request_id, Note(note + ", which had fallen behind")))
            return
        if gap is not None and not gap.announced:
            gap.announced = True
            self._hold(frame(request_id, WatchGap(gap.dropped, gap.t)))
        if type(item) is ResponseEnd:
            self._gaps.pop(request_id, None)
        self._hold(frame(request_id, item))

    def _hold(self, data: bytes, more: bytes = b"") -> None:
        if not self._frames and not self._paused:
            self._timer = asyncio.get_running_loop().call_later(BATCH_S, self._write)
        self._frames += data
        if more:
            self._frames += more
        if len(self._frames) >= BATCH_BYTES and not self._paused:
            self._write()

    def _write(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._paused:
            return  # resume_writing writes them
        frames, self._frames = self._frames, bytearray()  # never changed once written
        if self.transport is not None and not self.gone and frames:
            self.transport.write(frames)

    async def flush(self, timeout: float) -> None:
        """Until what is kept has been written (or the reader is gone, or `timeout`)."""
        transport = self.transport
        if transport is None:
            return
        self._write()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.gone and (self._frames or transport.get_write_buffer_size()):
                    await asyncio.sleep(FLUSH_POLL_S)
        transport.close()
