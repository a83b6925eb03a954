"""`toolstream-tui proxy`, the watching side: `ProxyServer` starts the forwarding
process (`forwarder.py`) on a socket bound here and reads what it forwards, one
`Tap` per request, for a consumer on this process's event loop (see
`requests.ProxyLog`). Also the types both sides share."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass

import httpx

from ..sources.base import BodyChunk, SourceItem, TransportError

FORWARDER_GONE = "the proxy's forwarding process ended before the response did"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
MAX_REQUEST_BYTES = 64 << 20  # a request with a few images inlined as base64 fits
MAX_HEADER_BYTES = 64 << 10  # the request line and headers together
SHUTDOWN_GRACE_S = 5.0  # requests still streaming at shutdown get this long (--drain)
CONNECT_TIMEOUT_S = 60.0
HEADER_TIMEOUT_S = 10.0  # a connection without a whole request head this long is closed
TAP_CAP_BYTES = 64 << 20  # frames held for a watcher that does not read; past it, dropped
FRAME_LENGTH = struct.Struct(">I")  # the size of the rest of a frame
CHUNK_HEAD = struct.Struct(">IcId")  # length, kind, request id, arrival time
CHUNK_KIND, PICKLE_KIND = b"b", b"p"
TOKEN_ENV = "TOOLSTREAM_PROXY_TOKEN"  # how the token reaches the forwarder: never in its argv


class UpstreamError(ValueError):
    """The --upstream URL cannot be used."""


def parse_upstream(text: str) -> httpx.URL:
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UpstreamError(f"--upstream {text!r} is not a URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise UpstreamError(f"--upstream {text!r} must be an http:// or https:// URL with a host")
    if url.query or url.fragment:
        raise UpstreamError(f"--upstream {text!r} must not carry a query or a fragment")
    return url


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstream: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_header_bytes: int = MAX_HEADER_BYTES
    connect_timeout: float = CONNECT_TIMEOUT_S
    idle_timeout: float | None = None  # cut an upstream silent this long (None: never)
    shutdown_grace: float = SHUTDOWN_GRACE_S
    header_timeout: float = HEADER_TIMEOUT_S
    token: str | None = None  # clients must send Proxy-Authorization: Bearer TOKEN
    record_dir: str | None = None  # the forwarder records each request here
    tap_cap_bytes: int = TAP_CAP_BYTES


# -- what the forwarder hands the consumer -------------------------------------------


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
class TapEnd:
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


TapItem = SourceItem | Note | TapEnd | WatchGap | ClientGone


class Tap:
    """One request's items as the forwarding process sent them, for a consumer on
    this process's loop: `put` (called there, by the pipe's reader) only appends and
    wakes the reader; it can neither wait nor fail, and a consumer that is gone or
    has abandoned the tap only means nobody is watching."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.pending: deque[TapItem] = deque()
        self.abandoned = False  # set by the consumer when it stops reading
        self._ready = asyncio.Event()
        self._ended = False

    def put(self, item: TapItem) -> None:
        if self.abandoned or self._ended:
            return
        self._ended = isinstance(item, TapEnd)
        self.pending.append(item)
        self._ready.set()

    async def items(self) -> AsyncIterator[TapItem]:
        """What the forwarder put, in order, up to and including the `TapEnd`."""
        while True:
            while self.pending:
                item = self.pending.popleft()
                yield item
                if isinstance(item, TapEnd):
                    return
            self._ready.clear()
            await self._ready.wait()


TapSink = Callable[[Tap], None]


# -- the pipe from the forwarding process ------------------------------------------


def frame(request_id: int, item: TapItem | Exchange) -> bytes:
    """One item on the pipe from the forwarding process: its length, its kind, then
    a body read as it came (the common case, kept cheap) or any other item as a
    pickle. Only ever read back by the process that started the forwarder."""
    if type(item) is BodyChunk:
        size = CHUNK_HEAD.size - FRAME_LENGTH.size + len(item.data)
        return CHUNK_HEAD.pack(size, CHUNK_KIND, request_id, item.t) + item.data
    payload = pickle.dumps((request_id, item), protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME_LENGTH.pack(len(payload) + 1) + PICKLE_KIND + payload


class FrameReader(asyncio.Protocol):
    """Reads frames from the forwarding process and hands each item on."""

    def __init__(self, on_item: Callable[[int, TapItem | Exchange], None]) -> None:
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
    def _item(buffer: bytearray, offset: int, end: int) -> tuple[int, TapItem | Exchange]:
        kind = buffer[offset + FRAME_LENGTH.size : offset + FRAME_LENGTH.size + 1]
        if kind == CHUNK_KIND:
            _, _, request_id, t = CHUNK_HEAD.unpack_from(buffer, offset)
            return request_id, BodyChunk(bytes(buffer[offset + CHUNK_HEAD.size : end]), t)
        request_id, item = pickle.loads(buffer[offset + FRAME_LENGTH.size + 1 : end])
        return request_id, item

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (raises OSError: address in use, no such address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


class ProxyServer:
    """Binds the listening socket, starts the forwarding process on it, and hands
    each request's `Tap` to `sink`, called on `loop` (the consumer's event loop)."""

    def __init__(self, config: ProxyConfig, sink: TapSink, loop: asyncio.AbstractEventLoop) -> None:
        parse_upstream(config.upstream)
        self.config = config
        self._sink = sink
        self._loop = loop
        self._port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._taps: dict[int, Tap] = {}
        self._stopping = False
        self.failure: str | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("ProxyServer is not started")
        return self._port

    @property
    def url(self) -> str:
        return http_url(self.config.host, self.port)

    def start(self) -> ProxyServer:
        """Bind (raises OSError), then start forwarding: connections made from here
        on are queued by the kernel until the forwarder accepts them. Callable from
        any thread."""
        sock = bind(self.config.host, self.config.port)
        self._port = sock.getsockname()[1]
        read_fd, write_fd = os.pipe()
        settings = asdict(self.config)
        environment = dict(os.environ)
        environment.pop(TOKEN_ENV, None)
        if (token := settings.pop("token")) is not None:
            environment[TOKEN_ENV] = token
        command = [
            sys.executable,
            "-m",
            "toolstream_tui.proxy.forwarder",
            "--listen-fd",
            str(sock.fileno()),
            "--tap-fd",
            str(write_fd),
            "--config",
            json.dumps(settings),
        ]
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # closed when this process ends: the forwarder stops
                pass_fds=(sock.fileno(), write_fd),
                start_new_session=True,  # a Ctrl-C reaches us; we stop the forwarder
                env=environment,
            )
        finally:
            os.close(write_fd)
            sock.close()
        self._loop.call_soon_threadsafe(self._start_reading, read_fd)
        return self

    def _start_reading(self, read_fd: int) -> None:
        self._loop.create_task(self._read(read_fd))

    async def _read(self, read_fd: int) -> None:
        reader = FrameReader(self._on_item)
        pipe = open(read_fd, "rb", buffering=0)  # noqa: SIM115 - the transport closes it
        transport, _ = await self._loop.connect_read_pipe(lambda: reader, pipe)
        try:
            await reader.closed
        finally:
            transport.close()
        for tap in self._taps.values():  # the forwarder is gone: what it left open ends
            tap.put(TransportError(FORWARDER_GONE, 0.0))
            tap.put(TapEnd(0.0, 0))
        self._taps.clear()

    def _on_item(self, request_id: int, item: TapItem | Exchange) -> None:
        if isinstance(item, Exchange):
            tap = self._taps[request_id] = Tap(item)
            self._sink(tap)
            return
        tap = self._taps.get(request_id)
        if tap is None:
            return
        tap.put(item)
        if isinstance(item, TapEnd):
            del self._taps[request_id]

    def stop(self, force: bool = False) -> None:
        """Ask the forwarder to stop: it stops accepting, then waits up to the grace
        period for streaming requests (at once with `force`). Asking again without
        `force` changes nothing: only a second signal from the user cuts streams."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            if not self._stopping:
                process.send_signal(signal.SIGTERM)
            if force:
                process.send_signal(signal.SIGTERM if self._stopping else signal.SIGINT)
        self._stopping = True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the forwarding process; True when it has ended."""
        process = self._process
        if process is None:
            return True
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        if process.stdin is not None:
            process.stdin.close()
        if code != 0 and not self._stopping:
            self.failure = f"the forwarding process exited with status {code}"
        return True
