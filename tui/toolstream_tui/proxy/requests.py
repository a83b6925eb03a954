"""The requests a proxy has seen, as a UI or the headless printer watches them.

`RequestList.take` is given each request's `ProxiedResponse` on the consumer's event loop; a task
drains it into the request's own `StreamSession` (decoded, secrets redacted,
recorded when asked) and tells every listener what changed. Nothing here imports
Textual, and nothing here can slow the forwarding, which runs in a process of its
own."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..core import StreamSession, build_report
from ..core.events import Anomaly
from ..otlp.watching import StreamSpan, is_model_call
from ..sources import BodyChunk, Limits, pump
from ..sources.base import (
    CLIENT_GONE,
    IDLE_TIMEOUT,
    TRANSPORT,
    WATCH_GAP,
    RequestSent,
    SourceItems,
    TransportError,
)
from ..sources.http import HttpRequest, redacted_request
from ..sources.pacing import InputFirstPacer
from ..sources.pump import STOP_ANOMALIES
from ..sources.recording import Recorder, Tape, recorded, taped
from ..sources.secrets import Redactor, model_in_path, secrets_in
from .pipe import ClientGone, Note, ProxiedItem, ResponseEnd, WatchGap
from .recording import Warn, decoded, new_recorder
from .server import ProxiedResponse

if TYPE_CHECKING:
    from ..otlp.export import OtlpExport

DEFAULT_KEEP = 200
REDACTORS_KEPT = 16  # the most recent distinct sets of secrets (an agent sends one key)
NOT_JSON = "the request body is not JSON (forwarded as is)"
# The stops a client sees too (a watch gap or a limit stops only the watching).
CUT_FOR_THE_CLIENT = frozenset(
    {STOP_ANOMALIES[TRANSPORT], STOP_ANOMALIES[IDLE_TIMEOUT], STOP_ANOMALIES[CLIENT_GONE]}
)
STOPPED = "the proxy stopped before the response ended"
# Bedrock Runtime's model calls: the model or ARN is one path segment, URL-encoded.


class Change(StrEnum):
    ADDED = "added"  # a new request (its row appears)
    UPDATED = "updated"  # the response moved on
    FINISHED = "finished"  # the request is over; its record will not change again
    DROPPED = "dropped"  # forgotten to stay within --keep (still in --record-dir)


Listener = Callable[["RequestRecord", Change], None]


def watch_gap_message(record: RequestRecord, gap: WatchGap) -> str:
    """The forwarder stopped keeping this body for the watcher (it fell behind): what
    came before stands, the rest is counted, never guessed at."""
    kept = "; --record-dir has every byte" if record.recording is not None else ""
    return (
        f"the watcher fell behind and missed {gap.dropped} bytes of this response from "
        f"{gap.t:.3f} s on (the client got them all{kept})"
    )


def warn_on_stderr(message: str) -> None:
    print(f"toolstream-tui: {message}", file=sys.stderr)


@dataclass(eq=False)
class RequestRecord:
    """One request through the proxy: what the client asked (secrets redacted) and
    the stream the core reads from upstream's answer."""

    id: int
    method: str
    path: str
    started_at: float  # wall clock
    started: float  # time.monotonic(): a live duration is time.monotonic() - started
    session: StreamSession
    model: str | None = None
    notes: list[str] = field(default_factory=list)
    recording: Path | None = None
    tape: Tape | None = None  # what the response carried, when a UI keeps it
    span: StreamSpan | None = None  # with --otlp: what its span needs, kept as it streams
    forwarded_bytes: int = 0  # body bytes the client was sent, as upstream sent them
    duration: float | None = None  # seconds from forwarding to the end, once over
    over: bool = False

    @property
    def state(self) -> str:
        """streaming, finished, truncated or error (the core's status)."""
        return self.session.state.status.value

    @property
    def dialect(self) -> str:
        return self.session.state.dialect

    @property
    def http_status(self) -> int | None:
        return self.session.state.http_status

    @property
    def calls(self) -> int:
        return len(self.session.state.calls)

    @property
    def anomalies(self) -> list[str]:
        return [anomaly.kind for anomaly in self.session.state.anomalies]

    @property
    def model_call(self) -> bool:
        """A model's request (a POST, or a GET answered with SSE): see is_model_call."""
        return is_model_call(self.method, self.session)

    @property
    def shown_anomalies(self) -> list[Anomaly]:
        """The anomalies worth a user's eye: a model call's all; of any other request
        (a listing, a page, an icon), only a cut the client saw. The core reads every
        body as a stream, and a JSON listing read as one is nothing but complaints."""
        anomalies = self.session.state.anomalies
        if self.model_call:
            return anomalies
        return [anomaly for anomaly in anomalies if anomaly.kind in CUT_FOR_THE_CLIENT]

    @property
    def passed_through(self) -> bool:
        """Over, not a model call, answered below 400 and not cut for the client: a
        request the proxy only forwarded, whatever the core made of its body."""
        status = self.http_status
        return (
            self.over
            and not self.model_call
            and status is not None
            and status < 400
            and not self.shown_anomalies
        )

    @property
    def bytes(self) -> int:
        """Body bytes the core read (after any Content-Encoding was undone)."""
        return self.session.state.bytes_received

    def elapsed(self, now: float | None = None) -> float:
        if self.duration is not None:
            return self.duration
        return (time.monotonic() if now is None else now) - self.started

    def summary(self) -> dict[str, Any]:
        """The headless line: the request, then the report `--headless` prints."""
        started = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started_at))
        return {
            "id": self.id,
            "method": self.method,
            "path": self.path,
            "model": self.model,
            "started_at": f"{started}.{int(self.started_at % 1 * 1000):03d}",
            "duration": None if self.duration is None else round(self.duration, 3),
            "forwarded_bytes": self.forwarded_bytes,
            "notes": list(self.notes),
            "recording": None if self.recording is None else str(self.recording),
            "model_call": self.model_call,
            **build_report(self.session.state),
        }


def model_of(body: str | None, url: str = "") -> tuple[str | None, bool]:
    """The request's model, and whether the body is JSON (an empty body is): the
    body's `model` when it names one, else the model its URL names (Gemini's,
    Vertex AI's and Bedrock's requests name it only there)."""
    payload: Any = None
    is_json = True
    if body:
        try:
            payload = json.loads(body)
        except ValueError:
            is_json = False
    model = payload.get("model") if isinstance(payload, dict) else None
    if isinstance(model, str) and model:
        return model, is_json
    return model_in_path(urlsplit(url).path), is_json


class RequestList:
    """Every request the proxy forwards, newest last; finished ones beyond `keep` are
    forgotten oldest first. Runs on one event loop: `take` is called there."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        dialect: str | None = None,
        keep: int = DEFAULT_KEEP,
        record_dir: Path | None = None,
        tapes: bool = False,
        warn: Warn = warn_on_stderr,
        otlp: OtlpExport | None = None,
    ) -> None:
        """`tapes`: keep what each response carried (in a temporary file), for a UI's
        raw log and repro bundles."""
        self.limits = limits or Limits()
        self.dialect = dialect
        self.keep = keep
        self.record_dir = record_dir
        self.tapes = tapes
        self.otlp = otlp  # each finished request is sent as a span
        self.records: dict[int, RequestRecord] = {}
        self.finished_count = 0
        self._finished: deque[int] = deque()
        self._listeners: list[Listener] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_id = 1
        self.pacer: InputFirstPacer | None = None  # when the pumps give the loop to a screen
        self._redactors: dict[tuple[str, ...], Redactor] = {}
        self._warn = warn
        self._listener_failed = False

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(record, change)` on every change; returns the unsubscriber.
        A listener that raises is reported once and kept: the proxy goes on."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def take(self, proxied: ProxiedResponse, label: str | None = None) -> None:
        """A new request (called on this log's loop by the proxy server). `label`:
        what its stream is called, secrets already redacted (default: its URL)."""
        exchange = proxied.exchange
        request = HttpRequest(
            url=exchange.url, method=exchange.method, headers=exchange.headers, body=exchange.body
        )
        redactor = self._redactor(secrets_in(exchange.url, exchange.headers))
        sent = redacted_request(request, redactor)
        model, is_json = model_of(sent.body, sent.url)
        record = RequestRecord(
            id=self._next_id,
            method=exchange.method,
            path=redactor.url(exchange.path),
            started_at=exchange.started_at,
            started=exchange.started,
            session=self.limits.session(label or sent.url, self.dialect, live=False),
            tape=Tape(sent.url) if self.tapes else None,
            recording=Path(exchange.recording) if exchange.recording else None,
            model=model,
            notes=[] if is_json else [NOT_JSON],
            span=None
            if self.otlp is None
            else StreamSpan(sent.url, redactor.text, int(exchange.started_at * 1e9)),
        )
        self._next_id += 1
        self.records[record.id] = record
        self._notify(record, Change.ADDED)
        task = asyncio.get_running_loop().create_task(
            self._consume(record, proxied, sent, redactor)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _redactor(self, secrets: list[str]) -> Redactor:
        """The redactor for these secrets, made once for the requests that carry them:
        compiling every spelling of a 170-character key takes ~16 ms of this loop,
        which 64 requests starting at once would pay 64 times."""
        key = tuple(secrets)
        redactor = self._redactors.pop(key, None)
        if redactor is None:
            redactor = Redactor(secrets)
        self._redactors[key] = redactor  # the most recently used last
        while len(self._redactors) > REDACTORS_KEPT:
            del self._redactors[next(iter(self._redactors))]
        return redactor

    async def wait_idle(self) -> None:
        """Until every request taken so far is over."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def stop(self) -> None:
        """End every request still open (the proxy is gone): they end as they stand."""
        for task in list(self._tasks):
            task.cancel()

    async def _consume(
        self,
        record: RequestRecord,
        proxied: ProxiedResponse,
        sent: RequestSent,
        redactor: Redactor,
    ) -> None:
        try:
            try:
                items = self._items(record, proxied.items(), sent, redactor)
                await pump(
                    items, record.session, lambda events: self._changed(record, events), self.pacer
                )
            except Exception as exc:  # the core or a recording failed: the client never notices
                self._end_session(record, f"the proxy could not read this response: {exc}")
            if record.duration is None:  # the core stopped first: the request goes on
                async for item in proxied.items():
                    self._side_note(record, item, redactor)
        except asyncio.CancelledError:
            proxied.abandoned = True
            self._end_session(record, STOPPED)
        finally:
            record.over = True
            self._send_span(record)
            self.finished_count += 1
            self._notify(record, Change.FINISHED)
            self._finished.append(record.id)
            self._forget_beyond_keep()

    def _send_span(self, record: RequestRecord) -> None:
        if self.otlp is None or record.span is None:
            return
        if not is_model_call(record.method, record.session):
            return
        try:
            record.span.submit(self.otlp, record.session)
        except Exception as exc:  # the export's failure is not the proxy's
            record.notes.append(f"--otlp: the span could not be made: {exc}")

    def _end_session(self, record: RequestRecord, message: str) -> None:
        record.notes.append(message)
        session = record.session
        if session.ended:
            return
        opened = session.state.http_status is not None
        try:
            (session.interrupt if opened else session.fail)(message, record.elapsed())
        except Exception:  # the core already failed on this stream: the note says so
            return

    def _changed(self, record: RequestRecord, events: list[Any]) -> None:
        if events:
            self._notify(record, Change.UPDATED)

    def _items(
        self,
        record: RequestRecord,
        tapped: AsyncIterator[ProxiedItem],
        sent: RequestSent,
        redactor: Redactor,
    ) -> SourceItems:
        """The proxied response as the core reads it: the request first, the body decoded, every
        secret redacted, recorded when asked."""
        items = redactor.stream(decoded(self._source_items(record, tapped, sent, redactor)))
        if record.tape is not None:
            items = taped(items, record.tape)
        if record.span is not None:
            items = record.span.tapped(items)
        if record.recording is not None:  # the forwarder records it
            return items
        recorder = self._recorder(record, sent.url)
        return items if recorder is None else recorded(items, recorder, self._warn)

    async def _source_items(
        self,
        record: RequestRecord,
        tapped: AsyncIterator[ProxiedItem],
        sent: RequestSent,
        redactor: Redactor,
    ) -> SourceItems:
        yield sent
        async for item in tapped:
            # Each stop goes on through the redaction (which then lets go of the body
            # it holds back) to the session, and to a recording, which keeps its kind.
            if isinstance(item, WatchGap):
                yield TransportError(watch_gap_message(record, item), item.t, WATCH_GAP)
                return
            if isinstance(item, ClientGone):
                yield TransportError(item.message, item.t, CLIENT_GONE)
                return
            if isinstance(item, Note | ResponseEnd):
                self._side_note(record, item, redactor)
            else:
                if isinstance(item, BodyChunk):
                    record.forwarded_bytes += len(item.data)
                yield item

    def _side_note(self, record: RequestRecord, item: Any, redactor: Redactor) -> None:
        if isinstance(item, Note):
            record.notes.append(redactor.text(item.text))
        elif isinstance(item, ResponseEnd):
            record.duration = item.t
            record.forwarded_bytes = item.forwarded

    def _recorder(self, record: RequestRecord, source: str) -> Recorder | None:
        if self.record_dir is None:
            return None
        recorder = new_recorder(self.record_dir, record.id, record.started_at, source, self._warn)
        record.recording = None if recorder is None else recorder.path
        return recorder

    def _forget_beyond_keep(self) -> None:
        while len(self._finished) > self.keep:
            record = self.records.pop(self._finished.popleft(), None)
            if record is not None:
                if record.tape is not None:
                    record.tape.close()
                self._notify(record, Change.DROPPED)

    def _notify(self, record: RequestRecord, change: Change) -> None:
        for listener in list(self._listeners):
            try:
                listener(record, change)
            except Exception as exc:
                if not self._listener_failed:
                    self._listener_failed = True
                    self._warn(f"a request-list listener failed ({exc!r}); the proxy goes on")
