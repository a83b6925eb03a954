"""The `--otlp` option, and what a watch (headless, the app, each request through
the proxy) keeps for its span as the stream passes: the request as it went out
(secrets redacted) and the body's first and last bytes (`envelope`). Nothing is
decoded until the stream is over, and then only when a span is wanted."""

from __future__ import annotations

import sys
import time
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..core.report import build_report
from ..core.session import StreamSession
from ..sources.base import BodyChunk, RequestSent, SourceItems
from .envelope import BodyWindow, read_envelope
from .spans import Redact, RequestFacts, SpanPlan, span_plan

if TYPE_CHECKING:
    from .export import OtlpExport


class StreamSpan:
    """One request's span in the making. `tapped` passes the items on unchanged,
    keeping what the span needs; `submit` sends it once the stream is over."""

    def __init__(
        self, label: str, redact: Redact | None = None, started_ns: int | None = None
    ) -> None:
        self.started_ns = time.time_ns() if started_ns is None else started_ns
        self.request = RequestFacts(url=label)
        self.window = BodyWindow()
        self.redact: Redact = redact or (lambda text: text)

    async def tapped(self, items: SourceItems) -> SourceItems:
        async with aclosing(items):
            async for item in items:
                if type(item) is BodyChunk:
                    self.window.keep(item.data)
                elif type(item) is RequestSent:
                    self.request = RequestFacts(url=item.url, body=item.body)
                yield item

    def plan(self, session: StreamSession) -> SpanPlan:
        envelope = read_envelope(self.window, session.mode)
        state = session.state
        return span_plan(build_report(state), self.request, envelope, self.redact, state.event_time)

    def submit(self, export: OtlpExport, session: StreamSession) -> None:
        export.submit(self.plan(session), self.started_ns)


def is_model_call(method: str, session: StreamSession) -> bool:
    """Whether a request through the proxy (or in a capture) is a model's: a POST
    (every provider's API), or a GET answered with Server-Sent Events (a browser's
    EventSource). A page, an icon or a listing (even a JSON array, which the core
    would read as a stream) is not sent as a span."""
    return method.upper() == "POST" or session.mode == "sse"


def redactor_of(source: Any) -> Redact | None:
    """The source's own redaction of its request's secrets, where it has one."""
    redactor = getattr(source, "redactor", None)
    return None if redactor is None else redactor.text


def send_and_close(export: OtlpExport, span: StreamSpan, session: StreamSession, prog: str) -> None:
    """The one span of a watch, sent; then the export closed (waiting a bounded
    time) and what became of the span said on stderr."""
    try:
        span.submit(export, session)
        export.close()
    except KeyboardInterrupt:  # the user stopped waiting: what is left is counted as unsent
        pass
    print(f"{prog}: {export.summary()}", file=sys.stderr)
