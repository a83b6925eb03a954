"""What the proxy's tests share: a proxy whose request log runs on an event loop of
its own (as a UI's would), upstreams of the tests' own making, and a client
transport that keeps every byte the SDKs read."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import httpx2
import uvicorn

from toolstream_stubs import StubServer
from toolstream_tui.proxy.config import ProxyConfig
from toolstream_tui.proxy.requests import Change, Listener, RequestList, RequestRecord
from toolstream_tui.proxy.server import ProxyServer, bind
from toolstream_tui.sources import Limits

WAIT_S = 30.0
# An agent's keys, each where a provider takes it; the stub's http-401-echo sends
# the bearer key back in its error.
SECRETS = {
    "authorization": "Bearer sk-proxy-bearer-7a6b5c4d",
    "x-api-key": "sk-proxy-xapi-1f2e3d4c",
    "api-key": "azure-proxy-key-9e8d7c6b",
}
QUERY_KEY = "query-proxy-key-0a1b2c3d"
SECRET_VALUES = ["sk-proxy-bearer-7a6b5c4d", "sk-proxy-xapi-1f2e3d4c", "azure-proxy-key-9e8d7c6b"]


class HeldStream:
    """A paced response from the stub that stops before its second event until
    `release` is set, read by a client thread."""

    def __init__(self) -> None:
        self.first_sent = threading.Event()
        self.release = threading.Event()
        self.received: list[bytes] = []
        self.error: Exception | None = None
        self.stub = StubServer("weather", speed=0, before_event=self._hold)

    def _hold(self, k: int) -> None:
        if k == 1:
            self.first_sent.set()
            self.release.wait(WAIT_S)

    def pull(self, url: str) -> None:
        try:
            with (
                httpx.Client(timeout=WAIT_S, trust_env=False) as http,
                http.stream("POST", url + "/v1/chat/completions") as response,
            ):
                self.received.extend(response.iter_raw())
        except httpx.HTTPError as exc:
            self.error = exc


class RunningProxy:
    """A `ProxyServer` on 127.0.0.1 (a free port) whose `RequestList` runs on its own
    thread and loop. `finished(n)` waits until n requests are over."""

    def __init__(
        self,
        upstream: str,
        *,
        listeners: tuple[Listener, ...] = (),
        record_dir: Path | None = None,
        keep: int = 200,
        limits: Limits | None = None,
        **config: Any,
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.warnings: list[str] = []
        self.log = RequestList(limits, keep=keep, warn=self.warnings.append)
        if record_dir is not None:  # recorded by the forwarder, as `proxy --record-dir` does
            config["record_dir"] = str(record_dir)
        self.changes: list[tuple[int, Change]] = []
        self._done: list[RequestRecord] = []
        self._seen = 0  # requests that finished before the current test
        self._condition = threading.Condition()
        self.log.subscribe(self._on_change)
        for listener in listeners:
            self.log.subscribe(listener)
        self.server = ProxyServer(ProxyConfig(upstream, port=0, **config), self.log.take, self.loop)

    @property
    def url(self) -> str:
        return self.server.url

    def _on_change(self, record: RequestRecord, change: Change) -> None:
        with self._condition:
            self.changes.append((record.id, change))
            if change is Change.FINISHED:
                self._done.append(record)
                self._condition.notify_all()

    def finished(self, count: int, timeout: float = WAIT_S) -> list[RequestRecord]:
        """The first `count` requests to finish (since `fresh`), in that order."""
        with self._condition:
            total = self._seen + count
            reached = self._condition.wait_for(lambda: len(self._done) >= total, timeout)
            assert reached, f"only {len(self._done) - self._seen} of {count} requests finished"
            return list(self._done[self._seen : total])

    def fresh(self) -> RunningProxy:
        """From here on, `finished` counts only new requests (a proxy shared by tests)."""
        with self._condition:
            self._seen = len(self._done)
        return self

    def __enter__(self) -> RunningProxy:
        self._thread.start()
        self.server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.server.stop(force=True)
        assert self.server.join(WAIT_S), "the proxy server did not stop"
        asyncio.run_coroutine_threadsafe(self.log.wait_idle(), self.loop).result(WAIT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(WAIT_S)
        self.loop.close()


class AsgiUpstream:
    """An upstream of the test's own making: an ASGI app served by uvicorn on
    127.0.0.1, for what the stub cannot show (that a request was closed)."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, http="h11", interface="asgi3", lifespan="off", log_config=None)
        self.server = uvicorn.Server(config)
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True
        )

    def __enter__(self) -> AsgiUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = self.server.force_exit = True
        self._thread.join(WAIT_S)


def chunked_answer(*pieces: bytes) -> bytes:
    """A streamed response's head and `pieces` as HTTP chunks, without the empty
    last chunk: add it to end the response, or leave it off to cut it."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    return head + b"\r\n" + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)


class CannedUpstream:
    """An upstream of raw bytes on 127.0.0.1, for what no HTTP server library
    would send: answers the requests on each connection with the next of
    `answers`, in order; `close` after an answer closes that connection. Keeps
    each request's head."""

    def __init__(self, answers: list[bytes], close: bool = False) -> None:
        self.answers = list(answers)
        self.close = close
        self.connections = 0
        self.requests: list[bytes] = []
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):  # the test closed the socket
            while True:
                connection, _ = self.sock.accept()
                self.connections += 1
                threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        """Until the client closes (or `close`): a silent upstream once out of answers."""
        with connection, contextlib.suppress(OSError):
            received = b""
            while True:
                while b"\r\n\r\n" not in received:
                    if not (data := connection.recv(65536)):
                        return
                    received += data
                head, _, received = received.partition(b"\r\n\r\n")
                self.requests.append(head)
                if self.answers:
                    connection.sendall(self.answers.pop(0))
                if self.close:
                    return


# -- what an SDK read, byte for byte ------------------------------------------------


class _Kept(httpx2.SyncByteStream):
    def __init__(self, inner: Any, kept: bytearray) -> None:
        self.inner = inner
        self.kept = kept

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.kept += chunk
            yield chunk

    def close(self) -> None:
        self.inner.close()


class _AsyncKept(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, kept: bytearray) -> None:
        self.inner = inner
        self.kept = kept

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.kept += chunk
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class KeepingTransport(httpx2.BaseTransport):
    """The SDK's transport, keeping each response's body as it came off the wire
    (before any decoding): `bodies[i]` is the i-th response's."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.bodies: list[bytearray] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        kept = bytearray()
        self.bodies.append(kept)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_Kept(response.stream, kept),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.inner.close()


class AsyncKeepingTransport(httpx2.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.bodies: list[bytearray] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        kept = bytearray()
        self.bodies.append(kept)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_AsyncKept(response.stream, kept),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
