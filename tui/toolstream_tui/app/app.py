"""The Textual app: a thin shell that runs the stream in a worker, queues the
core's events, and hands them to the widgets on a ~30 Hz display tick."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..bundle import write_bundle
from ..core import StreamSession
from ..core.events import (
    AnomalyRecorded,
    CallIdentified,
    CallParsed,
    CallStarted,
    DialectDetected,
    FinishSeen,
    ResponseOpened,
    StreamEnded,
    StreamEvent,
    TextAppended,
    WireComment,
    WireEvent,
)
from ..core.report import fragment_rows, report_json
from ..core.timing import stream_timing
from ..core.visible import inert_text
from ..sources import Limits, Source, pump
from ..sources.base import Clock, monotonic
from ..sources.recording import Tape, source_items
from .display import DisplayQueue
from .screens.anomalies import AnomaliesScreen
from .screens.inspector import ROW_LIMIT, InspectorScreen
from .screens.timeline import Figures, TimelineScreen
from .widgets.lane import CallLane
from .widgets.lanes import LaneColumn
from .widgets.raw_log import RawLog
from .widgets.status_bar import StatusBar, StatusFacts
from .widgets.text_pane import TextPane

TICK_SECONDS = 1 / 30
TICK_BUDGET = 0.015  # seconds of event handling per tick, so keys stay responsive
# A stream sending more wire events than this between two redraws is a burst (a
# replay at speed 0, a stub at full speed; no model streams 30k events a second).
BURST_EVENTS = 1_000
BURST_REDRAW_SECONDS = 0.1  # during a burst the screen is redrawn at 10 Hz, not 30
EVENTS_PER_BATCH = 500
REPORT_NAME = "toolstream-report.json"
MAX_BODY_LINES = 20


class ToolstreamApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "toolstream-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("space", "toggle_pause", "Pause", id="pause"),
        Binding("n", "step", "Step", id="step"),
        Binding("r", "restart", "Rerun", id="restart"),
        Binding("t", "toggle_lane", "Tree", id="toggle-lane"),
        Binding("p", "toggle_preview", "Preview", id="toggle-preview"),
        Binding("T", "toggle_all", "All tree/raw", id="toggle-all", show=False),
        Binding("l", "toggle_log", "Log", id="toggle-log"),
        Binding("i", "inspect", "Inspect", id="inspect"),
        Binding("a", "anomalies", "Anomalies", id="anomalies"),
        Binding("w", "timeline", "Timing", id="timeline"),
        Binding("e", "export", "Export", id="export"),
        Binding("s", "screenshot", "SVG", id="screenshot", show=False),  # a bundle has one too
        Binding("b", "bundle", "Bundle", id="bundle"),
        Binding("down,j", "focus_lane(1)", "Next lane", id="next-lane", show=False),
        Binding("up,k", "focus_lane(-1)", "Previous lane", id="previous-lane", show=False),
    ]

    def __init__(
        self,
        source: Source,
        *,
        record: Path | None = None,
        typing_cps: float | None = None,
        clock: Clock = monotonic,
        output_dir: Path | None = None,
        start_paused: bool = False,
        keep_handled: bool = False,
        theme: str = "textual-dark",
        dialect: str | None = None,
        notice: str | None = None,
        limits: Limits | None = None,
        preview: bool = False,
        bundle: Path | None = None,
    ) -> None:
        super().__init__()
        self.previewing = preview
        self.bundle_dir = bundle  # write a repro bundle here once the stream is on screen
        self._bundle_written = False
        self.limits = limits or Limits()
        self.source = source
        self.dialect = dialect
        self.notice = notice
        self.record = record
        self.typing_cps = typing_cps
        self.clock = clock
        self.output_dir = output_dir or Path.cwd()
        self.paused = start_paused
        self.theme = theme
        self.session = self._new_session()
        self.tape = Tape(source.label)
        self.queue = DisplayQueue()
        self.facts = StatusFacts(source=source.label, dialect=self.session.state.dialect)
        self.keep_handled = keep_handled
        self.handled: list[StreamEvent] = []  # every event shown, when keep_handled (tests)
        self.stream_ended = False
        self.settled_event = asyncio.Event()
        self.shown_event = 0  # the last wire event the display has shown
        self._started = clock()
        self._last_tick = self._last_arrival = self._started
        self._redrawn_at, self._events_at_redraw = time.perf_counter(), 0
        # Held, not queried: the display tick runs while a modal screen is on top.
        self.status_bar = StatusBar(id="status")
        self.error_banner = Static(id="error-banner")
        self.text_pane = TextPane(typing_cps, id="text-pane")
        self.lanes = LaneColumn(id="lanes")
        self.raw_log = RawLog(id="raw-log")
        self.raw_log.display = False
        self._handlers = self._make_handlers()

    # -- layout ---------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield self.status_bar
        yield self.error_banner
        with Horizontal(id="main"):
            yield self.text_pane
            yield self.lanes
        yield self.raw_log
        yield Footer()

    def on_mount(self) -> None:
        if self.notice:
            self.notify(self.notice, severity="warning", timeout=10)
        self.set_interval(TICK_SECONDS, self.tick)
        self.start_stream()

    @property
    def settled(self) -> bool:
        """Everything received has been shown (tests and snapshots wait on this)."""
        return (
            self.stream_ended
            and not self.queue
            and self.text_pane.caught_up
            and all(lane.is_mounted for lane in self.lanes.ordered())
        )

    # -- the stream -------------------------------------------------------------
    def start_stream(self) -> None:
        self.session = self._new_session()
        self.tape = Tape(self.source.label)
        self.shown_event = 0
        self.queue = DisplayQueue()
        self.facts = StatusFacts(
            source=self.source.label, dialect=self.session.state.dialect, paused=self.paused
        )
        self.stream_ended = False
        self.settled_event.clear()
        self._started = self._last_tick = self._last_arrival = self.clock()
        self.run_stream()

    def _new_session(self) -> StreamSession:
        # Lanes read fragments from the state (Lane.sync), so no event per fragment.
        return self.limits.session(self.source.label, self.dialect, fragment_events=False)

    @work(group="stream", exclusive=True, exit_on_error=False)
    async def run_stream(self) -> None:
        session = self.session
        try:
            items = source_items(self.source, self.record, self.tape, self.limits.idle_timeout)
        except OSError as exc:
            self.notify(f"cannot record to {self.record}: {exc.strerror}", severity="error")
            items = source_items(self.source, None, self.tape, self.limits.idle_timeout)
        try:
            await pump(items, session, self._received)
        except Exception as exc:  # a bug or an I/O failure must not kill the screen
            self.queue.push(session.fail(f"{type(exc).__name__}: {exc}", 0.0))

    def _received(self, events: list[StreamEvent]) -> None:
        # Arrival by the app's clock: a replay's events carry their recorded times.
        self._last_arrival = self.clock()
        self.queue.push(events)

    # -- the display tick -----------------------------------------------------
    def tick(self) -> None:
        if not self.paused:
            self.show_within_budget()
        if self.in_burst():
            return  # the events are applied; the redraw waits for the slower pace
        now = self.clock()
        seconds, self._last_tick = now - self._last_tick, now
        if not self.paused:
            self.text_pane.reveal(seconds)
        self.refresh_display()

    def in_burst(self) -> bool:
        """More events arrive between redraws than anyone could read, and the last
        redraw was recent: redrawing less often leaves the time to the stream
        (real time: this paces work, it is never displayed)."""
        arrived = self.session.state.events - self._events_at_redraw
        recent = time.perf_counter() - self._redrawn_at < BURST_REDRAW_SECONDS
        return arrived > BURST_EVENTS and recent

    def show_within_budget(self) -> None:
        """Apply queued events for at most TICK_BUDGET of work (real time, not the
        injectable clock: this bounds work, it is never displayed)."""
        deadline = time.perf_counter() + TICK_BUDGET
        while self.queue and time.perf_counter() < deadline:
            self.show(self.queue.take(EVENTS_PER_BATCH))

    def show(self, events: list[StreamEvent]) -> None:
        for event in events:
            self.handle(event)
        if self.keep_handled:
            self.handled.extend(events)

    def refresh_display(self) -> None:
        """Redraw what changed and can be seen; lanes scrolled out of view wait."""
        self._redrawn_at, self._events_at_redraw = time.perf_counter(), self.session.state.events
        calls = self.session.state.calls
        for lane in self.lanes.visible():
            lane.sync(calls[lane.index], self.shown_event, exact_preview=self.paused)
        self.raw_log.flush()
        if not self.stream_ended:
            self.facts.elapsed = self.clock() - self._started
            self.facts.waiting = self.clock() - self._last_arrival
        self.facts.bytes = self.session.state.bytes_received
        self.status_bar.show(self.facts)
        if self.settled and not self.settled_event.is_set():
            # What this tick changed is laid out and drawn only at the next refresh.
            self.call_after_refresh(self._settled_on_screen)

    def _settled_on_screen(self) -> None:
        if not self.settled or self.settled_event.is_set():
            return  # a rerun began meanwhile, or an earlier refresh got here first
        self.settled_event.set()
        if self.bundle_dir is not None and not self._bundle_written:
            self._bundle_written = True
            self.write_bundle(self.bundle_dir)

    def handle(self, event: StreamEvent) -> None:
        self._handlers[type(event)](event)  # type: ignore[operator]

    def _make_handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            WireEvent: self._on_wire_event,
            WireComment: self.raw_log.add,
            TextAppended: lambda event: self.text_pane.receive(event.channel, event.text),
            CallStarted: self._on_call_started,
            CallIdentified: self._on_call_identified,
            CallParsed: self._on_call_parsed,
            AnomalyRecorded: self._on_anomaly,
            ResponseOpened: self._on_response_opened,
            DialectDetected: self._on_dialect,
            FinishSeen: lambda event: None,
            StreamEnded: self._on_ended,
        }

    def _on_wire_event(self, event: WireEvent) -> None:
        self.shown_event = event.number
        self.raw_log.add(event)
        self.facts.events = event.number
        if self.facts.first_event is None:
            self.facts.first_event = event.t

    def _on_call_started(self, event: CallStarted) -> None:
        lane = CallLane(event)
        lane.set_previewing(self.previewing)
        self.lanes.add_lane(lane)

    def _on_call_identified(self, event: CallIdentified) -> None:
        self.lanes.lanes[event.index].identify(event.call_id, event.name)

    def _on_call_parsed(self, event: CallParsed) -> None:
        lane = self.lanes.lanes[event.index]
        slot = self.session.state.calls[event.index]
        # Flipped first, so a buffer about to be hidden is not wrapped (64 lanes
        # parse at once); the tree itself is built when the lane is in view.
        lane.show_parsed(event.arguments, event.error, event.error_position)
        lane.take_fragments(slot, self.shown_event)
        if slot.schema_errors:
            lane.show_schema_errors(slot.schema_errors)

    def _on_anomaly(self, event: AnomalyRecorded) -> None:
        self.facts.anomalies += 1
        index = event.anomaly.index
        lane = self.lanes.lanes.get(index) if index is not None else None
        if lane is not None:
            lane.add_anomaly(event.anomaly)

    def _on_response_opened(self, event: ResponseOpened) -> None:
        self.facts.state = "streaming"

    def _on_dialect(self, event: DialectDetected) -> None:
        self.facts.dialect = event.name

    def _on_ended(self, event: StreamEnded) -> None:
        self.stream_ended = True
        self.facts.state = event.status.value
        self.facts.elapsed = self.clock() - self._started
        for lane in self.lanes.ordered():
            lane.mark_ended(event.status.value, lane_error(self.session, lane.index))
            self.facts.failed_calls += not lane.parsed
            self.facts.rejected_calls += lane.has_class("-schema")
        self.text_pane.mark_ended()
        self.lanes.mark_ended()
        if event.trailing:
            self.raw_log.add_trailing(event.trailing)
        if event.error:
            self._show_error(event.error)

    def _show_error(self, error: str) -> None:
        message = Text(inert_text(error), "bold")
        body = self.session.state.body
        if body and self.session.state.http_status and self.session.state.http_status >= 400:
            lines = inert_text(body).splitlines()[:MAX_BODY_LINES]
            message.append("\n" + "\n".join(lines), "not bold")
        self.error_banner.update(message)
        self.error_banner.add_class("-shown")

    # -- actions ----------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.facts.paused = self.paused
        self.refresh_display()

    def action_step(self) -> None:
        if not self.paused:
            self.action_toggle_pause()
        self.show(self.queue.take_step())
        self.text_pane.reveal(None)
        self.refresh_display()

    def action_restart(self) -> None:
        self.workers.cancel_group(self, "stream")
        self.lanes.clear()
        self.text_pane.clear()
        self.raw_log.clear()
        self.handled.clear()
        self.error_banner.remove_class("-shown")
        self.start_stream()

    def action_toggle_lane(self) -> None:
        lane = self.focused_lane()
        if lane is not None:
            lane.toggle_view()

    def action_toggle_all(self) -> None:
        lanes = [lane for lane in self.lanes.ordered() if lane.parsed]
        show_tree = not all(lane.show_tree for lane in lanes)
        for lane in lanes:
            lane.show_tree = show_tree

    def action_toggle_preview(self) -> None:
        """Streaming lanes show what their arguments parse to so far (never final)."""
        self.previewing = not self.previewing
        for lane in self.lanes.ordered():
            lane.set_previewing(self.previewing)
        self.refresh_display()

    def action_toggle_log(self) -> None:
        self.raw_log.display = not self.raw_log.display
        self.raw_log.flush()

    def action_focus_lane(self, step: int) -> None:
        lanes = self.lanes.ordered()
        if not lanes:
            return
        current = self.focused_lane()
        position = lanes.index(current) + step if current in lanes else 0
        lanes[position % len(lanes)].focus()

    def action_inspect(self) -> None:
        lane = self.focused_lane()
        if lane is None:
            self.notify("no tool call to inspect yet")
            return
        slot = self.session.state.calls[lane.index]
        rows = fragment_rows(slot, lane.fragments, ROW_LIMIT)
        title = f"fragments of call #{lane.index} {lane.name_ or '?'} · {lane.call_id or 'no id'}"
        self.push_screen(InspectorScreen(title, rows, lane.fragments))

    def action_anomalies(self) -> None:
        self.push_screen(AnomaliesScreen(list(self.session.state.anomalies)))

    def action_timeline(self) -> None:
        self.push_screen(TimelineScreen(self.timeline_figures, lambda: self.stream_ended))

    def timeline_figures(self) -> Figures:
        state = self.session.state
        arrivals = {index: list(slot.fragment_times) for index, slot in state.calls.items()}
        return stream_timing(state), arrivals, list(state.read_times)

    def action_export(self) -> None:
        path = self.output_dir / REPORT_NAME
        try:
            path.write_text(report_json(self.session.state), encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot export to {path}: {exc.strerror}", severity="error")
            return
        self.notify(f"report written to {path}")

    def action_screenshot(self) -> None:
        try:
            path = self.save_screenshot(path=str(self.output_dir))
        except OSError as exc:
            self.notify(f"cannot save screenshot: {exc.strerror}", severity="error")
            return
        self.notify(f"screenshot saved to {path}")

    def action_bundle(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.write_bundle(self.bundle_dir or self.output_dir / f"toolstream-bundle-{stamp}")

    def write_bundle(self, directory: Path) -> None:
        """A repro bundle of what has arrived so far, with the screen as it is now."""
        try:
            write_bundle(directory, self.tape, self.session.state, self.export_screenshot())
        except OSError as exc:
            self.notify(f"cannot write bundle to {directory}: {exc.strerror}", severity="error")
            return
        self.notify(f"repro bundle written to {directory}")

    def on_call_lane_selected(self, message: CallLane.Selected) -> None:
        self.action_inspect()

    def focused_lane(self) -> CallLane | None:
        focused = self.focused
        if isinstance(focused, CallLane):
            return focused
        lanes = self.lanes.ordered()
        return lanes[0] if lanes else None

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.action != "quit":
                action = binding.action
                yield SystemCommand(
                    binding.description,
                    f"{binding.description} ({binding.key})",
                    lambda action=action: self.run_action(action),
                )


def lane_error(session: StreamSession, index: int) -> str | None:
    slot = session.state.calls.get(index)
    return slot.error if slot is not None else None


def tune_garbage_collector() -> None:
    """A fast stream allocates a few small objects per event and keeps almost none
    of them in cycles; collecting every 700 allocations, and walking Textual's whole
    widget tree each time, cost about a quarter of the app's time on a 1 MB stream.
    Collect less often, and leave the objects alive at start-up out of it."""
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)


def run_app(
    source: Source,
    record: Path | None,
    typing_cps: float | None = None,
    dialect: str | None = None,
    notice: str | None = None,
    limits: Limits | None = None,
    preview: bool = False,
    bundle: Path | None = None,
) -> int:
    tune_garbage_collector()
    app = ToolstreamApp(
        source,
        record=record,
        typing_cps=typing_cps,
        dialect=dialect,
        notice=notice,
        limits=limits,
        preview=preview,
        bundle=bundle,
    )
    app.run()
    return app.return_code or 0
