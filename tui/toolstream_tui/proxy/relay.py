"""Relaying one upstream response to its client as it arrives, with backpressure:
what each read brought goes on at once, nothing is read further ahead than a
bound while the client is slower, and a client that leaves closes the upstream
request. Each batch goes on the request's `Outlet` (to the watcher) after the
client was sent it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx

from ..sources.base import (
    IDLE_TIMEOUT,
    TRANSPORT,
    BodyChunk,
    Clock,
    ResponseHead,
    Stopwatch,
    TransportError,
)
from ..sources.http import HttpRequest, describe_transport_error
from ..sources.secrets import Redactor, secrets_in
from .http_rules import end_to_end
from .pipe import ClientGone, Exchange, Note, Outlet
from .upstream import UpstreamBody

READ_AHEAD_BYTES = 1 << 20  # read from upstream while the client is slower, up to this

Send = Callable[[dict[str, Any]], Any]
Receive = Callable[[], Any]


class ClientLeft(Exception):
    pass


async def client_gone(receive: Receive) -> None:
    """Returns when uvicorn says the client is gone (the request body already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class CutWhenTheClientLeaves:
    """While inside, the client leaving (`leaving`, a task running `client_gone`,
    is done) cancels what the current task awaits, and the block raises ClientLeft
    instead of CancelledError; any other cancellation (the drain at shutdown is
    over) goes on as it came. The forwarder raced the upstream request and then the
    copy, each a task of its own, against a task watching the client, with
    asyncio.wait: four tasks besides uvicorn's and two waits a request, a fifth of
    its own work on each (one watching task now, and no wait).

    Only while inside: the flag is cleared as the block ends, before the task
    awaits anything else, so that a watcher that fires later cancels nothing."""

    def __init__(
        self, leaving: asyncio.Future[None], unless: Callable[[], bool] = lambda: False
    ) -> None:
        """`unless`: when true, the client leaving cuts nothing any more."""
        self.leaving = leaving
        self.unless = unless
        self.task = asyncio.current_task()
        self.inside = False
        self.left = False

    def __enter__(self) -> CutWhenTheClientLeaves:
        self.inside = True
        self.leaving.add_done_callback(self._cut)
        return self

    def _cut(self, _: asyncio.Future[None]) -> None:
        if self.inside and not self.left and self.task is not None and not self.unless():
            self.left = True
            self.task.cancel()

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.inside = False
        self.leaving.remove_done_callback(self._cut)
        if self.left and self.task is not None:
            others = self.task.uncancel()
            if kind is asyncio.CancelledError and others == 0:
                raise ClientLeft


class Relay:
    """Streams one upstream response to the client as it arrives (what each read
    brought, at once), while watching for the client to leave; each batch goes
    on the outlet after it was sent on."""

    def __init__(
        self,
        response: httpx.Response,
        send: Send,
        outlet: Outlet,
        elapsed: Stopwatch,
        idle_timeout: float | None,
        exchange: Exchange,
    ) -> None:
        self.response = response
        self.send = send
        self.outlet = outlet
        self.elapsed = elapsed
        self.idle_timeout = idle_timeout
        self.exchange = exchange
        self.forwarded = 0
        self.complete = False

    async def run(self, leaving: asyncio.Future[None]) -> None:
        """`leaving`: done when the client is gone (`client_gone`)."""
        reads = batches_of(self.response)
        try:
            await self._start()
            # What came with the head goes on now, not a turn of the loop later:
            # while many requests start at once, each turn is long.
            if (batch := reads.take_held()) is not None:
                await self._pass_on(batch)
            await self._copy_until_the_client_leaves(reads, leaving)
        finally:
            await reads.stop()

    async def _copy_until_the_client_leaves(
        self, reads: Batches, leaving: asyncio.Future[None]
    ) -> None:
        try:
            # Once the response is complete, uvicorn says the client is gone.
            with CutWhenTheClientLeaves(leaving, unless=lambda: self.complete):
                await self._copy(reads)
        except ClientLeft:
            message = (
                f"the client disconnected after {self.forwarded} bytes; "
                "the proxy closed the upstream request"
            )
            self.outlet.put(Note(message))
            self.outlet.put(ClientGone(message, self.elapsed()))

    async def _start(self) -> None:
        response = self.response
        head = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in response.headers.raw
        ]
        shown = joined_headers(response.headers)
        self.outlet.put(
            ResponseHead(
                status=response.status_code,
                content_type=shown.get("content-type", ""),
                reason=response.reason_phrase,
                headers=shown,
                t=self.elapsed(),
            )
        )
        await self.send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [
                    (name.encode("latin-1"), value.encode("latin-1"))
                    for name, value in end_to_end(head, frozenset())
                ],
            }
        )

    async def _copy(self, reads: Batches) -> None:
        try:
            while (batch := await reads.take()) is not None:
                await self._pass_on(batch)
        except (httpx.HTTPError, OSError) as exc:
            # Returning without completing the response makes uvicorn close the
            # connection: the client sees the same cut the proxy saw.
            idle = isinstance(exc, httpx.ReadTimeout) and self.idle_timeout is not None
            kind = IDLE_TIMEOUT if idle else TRANSPORT
            self.outlet.put(TransportError(self._describe(exc), self.elapsed(), kind))
            return
        self.complete = True
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pass_on(self, batch: tuple[bytes, float]) -> None:
        data, arrived = batch
        await self.send({"type": "http.response.body", "body": data, "more_body": True})
        self.forwarded += len(data)
        self.outlet.put(BodyChunk(data, self.elapsed.at(arrived)))

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, httpx.ReadTimeout) and self.idle_timeout is not None:
            return (
                f"no data from upstream for {self.idle_timeout:g} s (--idle-timeout); "
                "the proxy cut the stream"
            )
        redactor = Redactor(secrets_in(self.exchange.url, self.exchange.headers))
        return redactor.text(
            describe_transport_error(exc, HttpRequest(url=self.exchange.url, timeout=0))
        )


def joined_headers(headers: httpx.Headers) -> dict[str, str]:
    """dict(headers), in one pass: each name, lowercased, once, with its values
    joined by ", " (dict() looks each name up again, through every header)."""
    joined: dict[str, str] = {}
    for name, value in headers.multi_items():
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


class Batches(Protocol):
    """A response's body as the relay takes it: all that arrived since the last
    take, in one piece, with the moment (time.monotonic) its first byte came.
    httpx yields one piece per HTTP chunk, and a server that writes each SSE event
    as a chunk puts hundreds in one socket read; forwarding each on its own cost a
    client write, a frame to the watcher and the h11 work of both (the proxy read
    the stub at --speed 0 at a quarter of the direct speed). What one read brought
    goes on in one write, and nothing waits for more: a batch is what had arrived
    when the relay was free."""

    def take_held(self) -> tuple[bytes, float] | None:
        """Takes what has arrived, without waiting; None if nothing has."""

    async def take(self) -> tuple[bytes, float] | None:
        """Waits for a batch; None once the body is over. Raises what ended the
        reading, if it failed, after the bytes that came before it."""

    async def stop(self) -> None:
        """Stop reading ahead (the relay is over), before the response is closed."""


def batches_of(response: httpx.Response) -> Batches:
    """The forwarder's own transport holds what arrives on the connection, taken
    straight from it: a task reading ahead in between cost every chunk one more
    turn of the loop. A body from httpx's transport (through an environment
    proxy) is read ahead by a task."""
    if isinstance(response.stream, UpstreamBody):
        return response.stream
    return UpstreamReads(response)


class UpstreamReads:
    """`Batches` of any httpx response, read by a task of its own."""

    def __init__(
        self, response: httpx.Response, clock: Clock = time.monotonic, limit: int = READ_AHEAD_BYTES
    ) -> None:
        self._clock = clock
        self._limit = limit
        self._pieces: list[bytes] = []
        self._size = 0
        self._first_arrived = 0.0
        self._arrived = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._error: Exception | None = None
        self._over = False
        self._task = asyncio.ensure_future(self._read(response))

    async def _read(self, response: httpx.Response) -> None:
        try:
            async for piece in response.aiter_raw():
                if not self._pieces:
                    self._first_arrived = self._clock()
                self._pieces.append(piece)
                self._size += len(piece)
                self._arrived.set()
                if self._size >= self._limit:  # a slow client: upstream waits, as without us
                    self._room.clear()
                    await self._room.wait()
        except Exception as exc:  # raised by `take`, after the bytes that came before it
            self._error = exc
        finally:
            self._over = True
            self._arrived.set()

    def take_held(self) -> tuple[bytes, float] | None:
        if not self._pieces:
            return None
        data = b"".join(self._pieces)
        self._pieces, self._size = [], 0
        self._room.set()
        return data, self._first_arrived

    async def take(self) -> tuple[bytes, float] | None:
        while not self._pieces:
            if self._over:
                if self._error is not None:
                    raise self._error
                return None
            self._arrived.clear()
            await self._arrived.wait()
        return self.take_held()

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
