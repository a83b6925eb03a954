"""`--otlp URL`: spans sent to an OpenTelemetry receiver over OTLP/HTTP, with the
official SDK and exporter (the `otlp` extra, imported only here, only when the
option is given).

Sending never holds up a stream: `submit` makes the span and puts it on a queue
of at most `queue_spans` spans, or drops it (counted) when the queue is full; one
worker thread sends what is queued, in batches. The SDK's BatchSpanProcessor
does the same but does not say how many spans it dropped, and a user must be
told: so the queue here is this module's own, behind the SDK's SpanProcessor
interface."""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ..sources.secrets import Redactor, secrets_in
from . import OtlpUnavailable
from .spans import SpanPlan

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

QUEUE_SPANS = 2048  # spans waiting to be sent, at most; more are dropped
BATCH_SPANS = 512  # spans per request to the receiver, at most
EXPORT_TIMEOUT_S = 5.0  # one batch to the receiver, the SDK's retries included
CLOSE_WAIT_S = 2.0  # at exit, how long what is queued may take to leave
TRACES_PATH = "/v1/traces"
# Where the exporter reads the receiver's headers (an API key, for a hosted backend).
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
SERVICE_NAME = "toolstream-tui"
INSTALL_HINT = "pip install 'toolstream-tui[otlp]'"
# Where the SDK reads a session of the user's own making (then ours is not made).
CREDENTIAL_PROVIDER = "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER"
_STOP = object()


def traces_endpoint(url: str) -> str:
    """Where spans go: the URL as given, or with /v1/traces when it names no path
    (as OTEL_EXPORTER_OTLP_ENDPOINT is read)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises when the port is out of range (99999)
    except ValueError as exc:
        raise OtlpUnavailable(f"--otlp {refused_url(url)!r} is not a URL: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OtlpUnavailable(
            f"--otlp {refused_url(url)!r} is not an http(s) URL (e.g. http://127.0.0.1:4318)"
        )
    if parts.path in ("", "/"):
        parts = parts._replace(path=TRACES_PATH)
    return urlunsplit(parts)


@dataclass(slots=True)
class ExportCounts:
    submitted: int = 0
    sent: int = 0
    dropped: int = 0  # the queue was full
    failed: int = 0  # the receiver refused them or could not be reached

    @property
    def unsent(self) -> int:
        """Still queued or on their way when the wait at exit ended."""
        return self.submitted - self.sent - self.dropped - self.failed


class OtlpExport:
    """Spans from `SpanPlan`s, to one OTLP/HTTP receiver, without blocking."""

    def __init__(
        self,
        url: str,
        queue_spans: int = QUEUE_SPANS,
        timeout: float = EXPORT_TIMEOUT_S,
        exporter: SpanExporter | None = None,
    ) -> None:
        self.endpoint = traces_endpoint(url)
        self._redactor = Redactor(receiver_secrets(self.endpoint, os.environ))
        self.shown_endpoint = shown_url(self.endpoint, self._redactor)
        sdk = _sdk()
        self.counts = ExportCounts()
        self.last_failure: str | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_spans)
        self.queue_spans = queue_spans
        self._exporter = exporter or sdk.exporter(self.endpoint, timeout)
        self._provider = sdk.provider(self)
        self._tracer = self._provider.get_tracer("toolstream_tui.otlp")
        self._kind = sdk.client_kind
        self._error_status = sdk.error_status
        _keep_sdk_quiet(self)
        self._worker = threading.Thread(target=self._send, name="otlp-export", daemon=True)
        self._worker.start()

    def submit(self, plan: SpanPlan, start_ns: int) -> None:
        """Make the span (it started at `start_ns`, wall clock) and queue it;
        returns at once, whatever the receiver is doing."""
        span = self._tracer.start_span(
            plan.name, kind=self._kind, attributes=plan.attributes, start_time=start_ns
        )
        for event in plan.events:
            span.add_event(event.name, event.attributes, timestamp=_at(start_ns, event.seconds))
        if plan.error is not None:
            span.set_status(self._error_status(plan.error))
        span.end(end_time=_at(start_ns, plan.seconds))

    def offer(self, span: ReadableSpan) -> None:
        with self._lock:
            self.counts.submitted += 1
        try:
            self._queue.put_nowait(span)
        except queue.Full:
            with self._lock:
                self.counts.dropped += 1

    def close(self, wait: float = CLOSE_WAIT_S) -> ExportCounts:
        """Let what is queued leave, for at most `wait` seconds (or until Ctrl-C:
        what is left is then counted as unsent, and the tool exits as it would)."""
        deadline = time.monotonic() + wait
        try:
            self._queue.put(_STOP, timeout=wait)
            self._worker.join(max(0.0, deadline - time.monotonic()))
        except (queue.Full, KeyboardInterrupt):
            pass
        if not self._worker.is_alive():
            self._exporter.shutdown()
        return self.counts

    def status(self) -> str:
        """A few words for a status line while spans are being sent."""
        counts = self.counts
        parts = [f"otlp: {counts.sent} sent"]
        waiting = counts.unsent
        for number, what in ((waiting, "waiting"), (counts.dropped, "dropped")):
            if number:
                parts.append(f"{number} {what}")
        if counts.failed:
            parts.append(f"{counts.failed} failed")
        return ", ".join(parts)

    def summary(self) -> str:
        """One line on what was sent, and what was not and why."""
        counts = self.counts
        spans = f"{counts.submitted} span{'s' * (counts.submitted != 1)}"
        if counts.sent == counts.submitted:
            return f"--otlp: {spans} sent to {self.shown_endpoint}"
        parts = [f"--otlp: {counts.sent} of {spans} sent to {self.shown_endpoint}"]
        if counts.dropped:
            parts.append(f"{counts.dropped} dropped (the queue of {self.queue_spans} was full)")
        if counts.failed:
            parts.append(f"{counts.failed} failed (refused, or the receiver could not be reached)")
        if counts.unsent:
            parts.append(f"{counts.unsent} still unsent when the wait at exit ended")
        if self.last_failure:
            parts.append(f"last complaint: {self._redactor.text(self.last_failure)}")
        return "; ".join(parts)

    def _send(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH_SPANS:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in batch
            spans = [span for span in batch if span is not _STOP]
            if spans:
                self._export(spans)
            if stop:
                return

    def _export(self, spans: list[ReadableSpan]) -> None:
        try:
            ok = self._exporter.export(spans).name == "SUCCESS"
        except Exception as exc:  # the exporter's own failure: counted, never raised
            ok, self.last_failure = False, str(exc)
        with self._lock:
            if ok:
                self.counts.sent += len(spans)
            else:
                self.counts.failed += len(spans)


def resource_attributes(environ: Mapping[str, str]) -> dict[str, str]:
    """The service's name, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES gives
    one (the SDK puts what it is given over what the environment says)."""
    listed = environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(",")
    named = environ.get("OTEL_SERVICE_NAME", "").strip() or any(
        pair.partition("=")[0].strip() == "service.name" for pair in listed
    )
    return {} if named else {"service.name": SERVICE_NAME}


def receiver_secrets(endpoint: str, environ: Mapping[str, str]) -> list[str]:
    """What may authenticate to the receiver, never to be shown: the URL's password
    and key-like query values, and the values of the exporter's header variables."""
    found = secrets_in(endpoint, {})
    password = urlsplit(endpoint).password
    if password:
        found.append(password)
    for name in HEADER_VARIABLES:
        for pair in environ.get(name, "").split(","):
            value = unquote(pair.partition("=")[2].strip())
            if value:  # as an auth header's: a "Bearer …" value's credential too
                found += secrets_in("", {"authorization": value})
    return found


def refused_url(url: str) -> str:
    """A URL refused, as said: no user or password, no key-like query value, however
    broken the rest of it is."""
    without_user = re.sub(r"//[^/?#@]*@", "//", url, count=1)
    return Redactor(secrets_in(without_user, {})).url(without_user)


def shown_url(endpoint: str, redactor: Redactor) -> str:
    """The endpoint as said to the user: no user or password, no key."""
    parts = urlsplit(endpoint)
    host = parts.netloc.rpartition("@")[2]
    return redactor.url(urlunsplit(parts._replace(netloc=host)))


def _at(start_ns: int, seconds: float) -> int:
    return start_ns + round(seconds * 1e9)


@dataclass(frozen=True, slots=True)
class _Sdk:
    exporter: Any
    provider: Any
    client_kind: Any
    error_status: Any


def _sdk() -> _Sdk:
    """The SDK's parts, imported now (the extra is optional)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from opentelemetry.trace import SpanKind, Status, StatusCode
    except ImportError as exc:
        raise OtlpUnavailable(
            f"--otlp needs the OpenTelemetry SDK and its OTLP/HTTP exporter ({exc.name} is "
            f"not installed): {INSTALL_HINT}"
        ) from exc

    class QueueProcessor(SpanProcessor):
        """Every ended span goes to the export's queue."""

        def __init__(self, export: OtlpExport) -> None:
            self._export = export

        def on_end(self, span: ReadableSpan) -> None:
            self._export.offer(span)

    def provider(export: OtlpExport) -> Any:
        resource = Resource.create(resource_attributes(os.environ))
        made = TracerProvider(resource=resource, shutdown_on_exit=False)
        made.add_span_processor(QueueProcessor(export))
        return made

    def exporter(endpoint: str, timeout: float) -> Any:
        if os.environ.get(CREDENTIAL_PROVIDER):  # the SDK makes its session from it
            return OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
        return OTLPSpanExporter(endpoint=endpoint, timeout=timeout, session=_checked_session())

    return _Sdk(
        exporter=exporter,
        provider=provider,
        client_kind=SpanKind.CLIENT,
        error_status=lambda text: Status(StatusCode.ERROR, text),
    )


class NotAReceiver(Exception):
    """A 2xx answer no OTLP receiver gives: a web page."""


def _checked_session() -> Any:
    """A session for the exporter that takes a web page for what it is: a UI's port
    (Jaeger's 16686 answers any path with its page) or a proxy's login page answers
    200 too, and the spans were then counted as sent, though nobody took them."""
    import requests  # the OTLP/HTTP exporter's own, with the extra

    session = requests.Session()
    session.hooks["response"].append(_refuse_web_page)
    return session


def _refuse_web_page(response: Any, *args: Any, **kwargs: Any) -> Any:
    kind = response.headers.get("Content-Type", "")
    if response.ok and kind.partition(";")[0].strip().lower() == "text/html":
        raise NotAReceiver(
            f"{response.url} answered with a web page, not as an OTLP receiver "
            "(the collector's OTLP/HTTP port is usually 4318)"
        )
    return response


class _LastFailure(logging.Handler):
    """Keeps the exporter's last complaint for the summary, instead of letting it
    reach stderr (under the app, that is the screen)."""

    def __init__(self, export: OtlpExport) -> None:
        super().__init__(logging.WARNING)
        self._export = export

    def emit(self, record: logging.LogRecord) -> None:
        self._export.last_failure = _shortened(record.getMessage().splitlines()[0])


def _shortened(text: str, limit: int = 200) -> str:
    """A long message's start and end (a connection error says why at its end)."""
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return f"{text[:half]} … {text[-half:]}"


def _keep_sdk_quiet(export: OtlpExport) -> None:
    logger = logging.getLogger("opentelemetry")
    logger.propagate = False
    for handler in list(logger.handlers):
        if isinstance(handler, _LastFailure):
            logger.removeHandler(handler)
    logger.addHandler(_LastFailure(export))
