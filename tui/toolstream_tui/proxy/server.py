"""`toolstream-tui proxy`, the watching side: `ProxyServer` starts the forwarding
process (`forwarder.py`) on a socket bound here and reads what it forwards down
the pipe (`pipe.py`), one `ProxiedResponse` per request, for a consumer on this process's
event loop (see `requests.RequestList`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict

from ..sources.base import TransportError
from .config import TOKEN_ENV, ProxyConfig, http_url, parse_upstream
from .pipe import Exchange, FrameReader, ProxiedItem, ResponseEnd

FORWARDER_GONE = "the proxy's forwarding process ended before the response did"


class ProxiedResponse:
    """One request's items as the forwarding process sent them, for a consumer on
    this process's loop: `put` (called there, by the pipe's reader) only appends and
    wakes the reader; it can neither wait nor fail, and a consumer that is gone or
    has abandoned it only means nobody is watching."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.pending: deque[ProxiedItem] = deque()
        self.abandoned = False  # set by the consumer when it stops reading
        self._ready = asyncio.Event()
        self._ended = False

    def put(self, item: ProxiedItem) -> None:
        if self.abandoned or self._ended:
            return
        self._ended = isinstance(item, ResponseEnd)
        self.pending.append(item)
        self._ready.set()

    async def items(self) -> AsyncIterator[ProxiedItem]:
        """What the forwarder put, in order, up to and including the `ResponseEnd`."""
        while True:
            while self.pending:
                item = self.pending.popleft()
                yield item
                if isinstance(item, ResponseEnd):
                    return
            self._ready.clear()
            await self._ready.wait()


ResponseSink = Callable[[ProxiedResponse], None]


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
    each request's `ProxiedResponse` to `sink`, called on `loop` (the consumer's event loop)."""

    def __init__(
        self, config: ProxyConfig, sink: ResponseSink, loop: asyncio.AbstractEventLoop
    ) -> None:
        parse_upstream(config.upstream)
        self.config = config
        self._sink = sink
        self._loop = loop
        self._port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._responses: dict[int, ProxiedResponse] = {}
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
            "--pipe-fd",
            str(write_fd),
            "--config",
            json.dumps(settings),
        ]
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # closed when this process ends: the forwarder stops
                pass_fds=(sock.fileno(), write_fd),
                # A process group of its own: a Ctrl-C reaches only ours, and we stop
                # the forwarder. In our session: Linux's autogroup schedules each
                # session as one group, between which nice does nothing, and the
                # watching process steps behind the forwarder with nice.
                process_group=0,
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
        for proxied in self._responses.values():  # the forwarder is gone: what it left open ends
            proxied.put(TransportError(FORWARDER_GONE, 0.0))
            proxied.put(ResponseEnd(0.0, 0))
        self._responses.clear()

    def _on_item(self, request_id: int, item: ProxiedItem | Exchange) -> None:
        if isinstance(item, Exchange):
            proxied = self._responses[request_id] = ProxiedResponse(item)
            self._sink(proxied)
            return
        following = self._responses.get(request_id)
        if following is None:
            return
        following.put(item)
        if isinstance(item, ResponseEnd):
            del self._responses[request_id]

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
