"""A proxied request recorded as it passes (--record-dir), by the forwarder, which
sees every byte (`ExchangeRecording`) or by the request list (`new_recorder`); and
the response's body with its Content-Encoding undone, as the watcher and the
recording read it (`decoded`)."""

from __future__ import annotations

import asyncio
import time
import zlib
from collections import deque
from contextlib import aclosing
from pathlib import Path

from ..sources import BodyChunk, ResponseHead, SourceItem, TransportError
from ..sources.base import CLIENT_GONE, RequestSent, SourceItems
from ..sources.decoding import BodyDecoder, UnsupportedEncoding
from ..sources.http import HttpRequest, redacted_request
from ..sources.recording import Recorder, Warn, recorded
from ..sources.secrets import Redactor, secrets_in
from .pipe import ClientGone, Exchange, ProxiedItem, ResponseEnd

RECORDING_NAME_TRIES = 100  # names tried for a recording before giving up on it


def new_recorder(
    record_dir: Path, request_id: int, started_at: float, source: str, warn: Warn
) -> Recorder | None:
    """A recorder for request `request_id` in `record_dir` (None, said by `warn`,
    when it cannot be made)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(started_at))
    # Another run (or a proxy beside this one) may have recorded its request
    # with this number in the same second: its files are never overwritten.
    for attempt in range(1, RECORDING_NAME_TRIES + 1):
        again = f"-{attempt}" if attempt > 1 else ""
        path = record_dir / f"{stamp}-{request_id:04d}{again}.sse"
        try:
            return Recorder(path, source, new=True)
        except FileExistsError:
            continue
        except OSError as exc:
            warn(f"cannot record request {request_id} to {path}: {exc.strerror}")
            return None
    warn(f"cannot record request {request_id}: {path} and the names before it exist")
    return None


class ExchangeRecording:
    """One request recorded as it passes through the forwarder, before anything
    is held back for the watcher (so a watcher that falls behind or dies leaves
    the recording whole): decoded and redacted as the watcher would, written by a
    task of the forwarder's loop."""

    def __init__(
        self, recorder: Recorder, sent: RequestSent, redactor: Redactor, warn: Warn
    ) -> None:
        self.path = recorder.path
        self._pending: deque[SourceItem | None] = deque([sent])
        self._ready = asyncio.Event()
        items = recorded(redactor.stream(decoded(self._items())), recorder, warn)
        self.task = asyncio.get_running_loop().create_task(self._write(items))

    @classmethod
    def start(
        cls, record_dir: Path, request_id: int, exchange: Exchange, warn: Warn
    ) -> ExchangeRecording | None:
        """The recording of `exchange` (None, said by `warn`, when it cannot be made)."""
        request = HttpRequest(
            url=exchange.url, method=exchange.method, headers=exchange.headers, body=exchange.body
        )
        redactor = Redactor(secrets_in(exchange.url, exchange.headers))
        sent = redacted_request(request, redactor)
        recorder = new_recorder(record_dir, request_id, exchange.started_at, sent.url, warn)
        return None if recorder is None else cls(recorder, sent, redactor, warn)

    def put(self, item: ProxiedItem) -> None:
        if isinstance(item, ResponseEnd):
            self._pending.append(None)
        elif isinstance(item, ResponseHead | BodyChunk | TransportError):
            self._pending.append(item)
        elif isinstance(item, ClientGone):  # a replay stops there, as the client did
            self._pending.append(TransportError(item.message, item.t, CLIENT_GONE))
        self._ready.set()

    async def _items(self) -> SourceItems:
        while True:
            while self._pending:
                item = self._pending.popleft()
                if item is None:
                    return
                yield item
            self._ready.clear()
            await self._ready.wait()

    @staticmethod
    async def _write(items: SourceItems) -> None:
        async with aclosing(items):
            async for _ in items:
                pass


# -- Content-Encoding --------------------------------------------------------------


async def decoded(items: SourceItems) -> SourceItems:
    """The items with the body's Content-Encoding undone, as the HTTP source gives
    them: the client gets the bytes as sent, the core and the recording get them
    decoded, a bounded piece at a time (`sources.decoding`: a gzip bomb inflates no
    further than the session's limits let it)."""
    async with aclosing(items):
        async for item in items:
            yield item
            if isinstance(item, ResponseHead) and item.headers.get("content-encoding"):
                async for out in _decode_body(items, item.headers["content-encoding"]):
                    yield out
                return


async def _decode_body(items: SourceItems, encoding: str) -> SourceItems:
    """The body read from `items` decoded, then the item that ended it, if any."""
    last_t = 0.0
    try:
        decoder = BodyDecoder(encoding)
        async for item in items:
            if not isinstance(item, BodyChunk):
                for piece in decoder.flush():
                    yield BodyChunk(piece, last_t)
                yield item
                return
            last_t = item.t
            for piece in decoder.decode(item.data):
                yield BodyChunk(piece, last_t)
        for piece in decoder.flush():
            yield BodyChunk(piece, last_t)
    except (UnsupportedEncoding, zlib.error) as exc:
        yield TransportError(f"the body does not decode as {encoding}: {exc}", last_t)
