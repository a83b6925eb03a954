"""One stream being watched: the core's session, the tape of what arrived (for
repro bundles and the raw log), and when data last came by the app's clock.
Textual-free: the app draws from it, a proxy would feed it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core import StreamSession, StreamState
from ..core.events import StreamEvent
from ..process import plain_reason
from ..sources import Source, pump
from ..sources.recording import Tape, Warn, source_items
from .options import WatchOptions
from .wire_events import WireEvents

if TYPE_CHECKING:
    from ..sources.pacing import InputFirstPacer


class WatchedStream:
    def __init__(
        self,
        label: str,
        options: WatchOptions,
        *,
        session: StreamSession | None = None,
        tape: Tape | None = None,
        started: float | None = None,
    ) -> None:
        """A new stream to pump from a source (`run`), or one fed elsewhere (a proxied
        request): its `session`, its `tape`, and when it began by `options.clock`."""
        self.options = options
        # The screen reads everything from the state, so the session emits no events.
        self.session: StreamSession = session or options.limits.session(
            label, options.dialect, live=False
        )
        self.tape = tape or Tape(label)
        self._wire_events: WireEvents | None = None
        self.started = self.last_arrival = options.clock() if started is None else started
        # A session fed elsewhere (a proxied request) says nothing when data comes:
        # `quiet` looks at what it has received instead.
        self._fed_elsewhere = session is not None
        self._bytes_seen = 0  # what the session had received at the last look

    @property
    def state(self) -> StreamState:
        return self.session.state

    @property
    def wire_events(self) -> WireEvents:
        """The events themselves, decoded again from the tape once asked for."""
        if self._wire_events is None:
            self._wire_events = WireEvents(self.tape)
        return self._wire_events

    def elapsed(self) -> float:
        return self.options.clock() - self.started

    def quiet(self) -> float:
        """Seconds since data last arrived (by the app's clock: a replay's events
        carry their recorded times). Fed elsewhere, the bytes received since the
        last look (a display tick) count as data that came now."""
        now = self.options.clock()
        if self._fed_elsewhere:
            received = self.session.state.bytes_received
            if received != self._bytes_seen:
                self._bytes_seen, self.last_arrival = received, now
        return now - self.last_arrival

    def received(self, events: list[StreamEvent] | None = None) -> None:
        """Data arrived (the pump, or whoever feeds the session, says so)."""
        self.last_arrival = self.options.clock()

    async def run(
        self,
        source: Source,
        record: Path | None,
        warn: Warn,
        pacer: InputFirstPacer | None = None,
    ) -> None:
        """Pump `source` into the session until it ends; a failure of the source
        ends the stream with the reason, never a traceback, and one of the recording
        (`record`) ends the recording, said by `warn`. `pacer`: when the pump gives
        the event loop back (the display's input)."""
        session, idle = self.session, self.options.limits.idle_timeout
        try:
            items = source_items(source, record, self.tape, idle, warn=warn)
        except OSError as exc:
            warn(f"cannot record to {record}: {plain_reason(exc)}; not recording")
            items = source_items(source, None, self.tape, idle, warn=warn)
        otlp = self.options.otlp
        span = None
        if otlp is not None:  # the span's modules load only with --otlp
            from ..otlp.watching import StreamSpan, redactor_of

            span = StreamSpan(source.label, redactor_of(source))
            items = span.tapped(items)
        try:
            await pump(items, session, self.received, pacer)
        except Exception as exc:  # a bug or an I/O failure must not kill the screen
            session.fail(f"{type(exc).__name__}: {exc}", 0.0)
        if otlp is not None and span is not None:
            span.submit(otlp, session)

    def close(self) -> None:
        self.tape.close()
        if self._wire_events is not None:
            self._wire_events.close()
