"""The view of one stream: status, text pane, lanes, raw log.

The screen keeps one number about the stream, the display cursor: the last wire
event shown. Live, it follows the stream; paused, it stays; a step moves it by
one. On a display tick every part is drawn from the core's state at the cursor
(`views`), and only what changed is redrawn. Besides the cursor the screen keeps
only what a person chose: the selected call, the calls shown raw, previews on.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static

from ...core.report import report_json
from ...core.state import CallSlot
from ...core.timing import reads_upto, stream_timing
from ...core.upto import (
    cursor_for_event,
    is_over,
    is_settled,
    next_anomaly,
    next_call_moment,
    previous_anomaly,
    previous_call_moment,
    report_upto_json,
)
from ...core.visible import inert_text
from ...views.cursor import CallsAt, anomalies_seen, calls_upto, parsed_upto
from ...views.fragments import FragmentRows
from ...views.lanes import LaneView, call_row, lane_title, lane_view
from ...views.scrub import cursor_for, scrub_view
from ...views.status import status_view
from ...views.words import shortened
from ...watching.stream import WatchedStream
from ..widgets.key_footer import KeyFooter
from ..widgets.lane import CallLane
from ..widgets.lanes import CallList, LaneColumn
from ..widgets.raw_log import RawLog
from ..widgets.scrub_bar import ScrubBar
from ..widgets.status_bar import StatusBar
from ..widgets.text_pane import TextPane

if TYPE_CHECKING:
    from .goto import GotoScreen
    from .inspector import InspectorScreen
    from .timeline import TimelineFigures

TICK_SECONDS = 1 / 30
# The share of the event loop redraws may take while a stream arrives; the rest is
# left to the stream and to keys, which wait behind a frame being drawn.
DISPLAY_SHARE = 0.5
# A stream sending more wire events than this between two redraws is a burst (a
# replay at speed 0, a stub at full speed; no model streams 30k events a second):
# the stream gets more of the loop: a tenth (a 30 ms frame every 0.3 s) puts a
# replay at speed 0 within ~1.2x of headless; a fifth left it at ~1.5x.
BURST_EVENTS = 1_000
BURST_DISPLAY_SHARE = 0.1
LONGEST_FRAME_SECONDS = 0.5  # a frame measured longer waited for something else
# The footer's keys wait for the stream's first frame, or this long for a source
# that has sent nothing yet.
KEYS_HELD_AT_MOST_SECONDS = 0.2
REPORT_NAME = "toolstream-report.json"
TOAST_PATH_WIDTH = 40
MAX_BODY_LINES = 20
# Each jump of the display cursor leaves ~400 objects in reference cycles (Textual's
# strips and caches of the frames drawn), which the app's rare full collections
# (see `collect_garbage_rarely`) keep for a long time: the resident set grew ~4.5 MB
# per 100 jumps. So after every JUMPS_PER_COLLECTION jumps, a full collection runs
# once no jump has come for COLLECT_AFTER_SECONDS: it takes 30-150 ms on a loaded 2-core
# machine (it walks the whole stream's state), and a key pressed meanwhile waits (the
# bench's slowest `]`, 0.5 s after the 50th jump). Jumps that never pause get it after
# the frame of every MOST_JUMPS_UNCOLLECTED-th.
JUMPS_PER_COLLECTION = 50
MOST_JUMPS_UNCOLLECTED = 100
COLLECT_AFTER_SECONDS = 0.5
THE_LAST_EVENT = sys.maxsize  # End's target while the stream is still arriving


# Absolute: the app that opens on this screen reads the same file as its own CSS
# (see ToolstreamApp.CSS_PATH).
CSS_FILE = Path(__file__).with_name("stream.tcss").resolve()


class StreamScreen(Screen[None]):
    CSS_PATH = CSS_FILE
    BINDINGS = [
        Binding("space", "toggle_pause", "Pause", tooltip="Pause or resume the display"),
        Binding(
            "n,shift+right",
            "step(1)",
            "Step",
            tooltip="Show one more wire event (pauses)",
            show=False,
            id="stream.step",
        ),
        Binding(
            "N,shift+left",
            "step(-1)",
            "Step back",
            tooltip="Show one wire event less (pauses)",
            show=False,
            id="stream.step-back",
        ),
        Binding(
            "home",
            "first",
            "First",
            tooltip="Before the first wire event",
            show=False,
            id="stream.first",
        ),
        Binding(
            "end",
            "last",
            "Last",
            tooltip="The stream as it ended (or as received so far)",
            show=False,
            id="stream.last",
        ),
        Binding(
            "g",
            "goto",
            "Go to",
            tooltip="Go to an event number or a time (12.5s)",
            show=False,
            id="stream.goto",
        ),
        Binding(
            "left_square_bracket",
            "anomaly(-1)",
            "Previous anomaly",
            tooltip="Back to the last event where an anomaly was seen",
            show=False,
            id="stream.anomaly-back",
            key_display="[",
        ),
        Binding(
            "right_square_bracket",
            "anomaly(1)",
            "Next anomaly",
            tooltip="On to the next event where an anomaly was seen",
            show=False,
            id="stream.anomaly-next",
            key_display="]",
        ),
        Binding(
            "left_curly_bracket",
            "moment(-1)",
            "Previous call moment",
            tooltip="Back to where a call started, got its name or settled (once you "
            "picked a call with j/k or a click: that call's)",
            show=False,
            id="stream.moment-back",
            key_display="{",
        ),
        Binding(
            "right_curly_bracket",
            "moment(1)",
            "Next call moment",
            tooltip="On to where a call starts, gets its name or settles (once you "
            "picked a call with j/k or a click: that call's)",
            show=False,
            id="stream.moment-next",
            key_display="}",
        ),
        Binding("t", "toggle_lane", "Tree", tooltip="The selected call as tree or raw"),
        Binding("i", "inspect", "Inspect", tooltip="Every fragment of the selected call"),
        Binding("a", "anomalies", "Anomalies", tooltip="Every deviation from the textbook"),
        Binding("w", "timeline", "Timing", tooltip="When every piece arrived", show=False),
        Binding("b", "bundle", "Bundle", tooltip="Write a repro bundle of what arrived"),
        Binding("l", "toggle_log", "Log", tooltip="The raw events, one per line", show=False),
        Binding(
            "v",
            "toggle_envelope",
            "Envelopes",
            tooltip="Raw log: deltas or whole events",
            show=False,
        ),
        Binding(
            "p", "toggle_preview", "Preview", tooltip="Streaming calls parsed so far", show=False
        ),
        Binding(
            "T",
            "toggle_all",
            "All tree/raw",
            tooltip="Every parsed call as tree or raw",
            show=False,
        ),
        Binding("r", "restart", "Rerun", tooltip="Run the stream again from the start", show=False),
        Binding("e", "export", "Export", tooltip="Write the report as JSON", show=False),
        Binding(
            "s", "screenshot", "Screenshot", tooltip="Save an SVG of the screen here", show=False
        ),
        Binding(
            "down,j", "select_lane(1)", "Next call", tooltip="Select the next call", show=False
        ),
        Binding(
            "up,k",
            "select_lane(-1)",
            "Previous call",
            tooltip="Select the previous call",
            show=False,
        ),
        Binding("escape", "back", "Back", tooltip="Back to the list of requests", priority=True),
    ]
    FOOTER_PALETTE_WIDTH = 80  # narrower, the footer leaves out ^p (it still works; ? lists it)

    def __init__(
        self,
        watch: WatchedStream,
        restart: Callable[[], WatchedStream] | None = None,
        *,
        can_go_back: bool = False,
    ) -> None:
        """`restart`: a new watch of the same stream (None: it cannot be rerun, as a
        proxied request); `can_go_back`: escape returns to the screen below."""
        super().__init__()
        self.watched = watch
        self.options = watch.options
        self._restart = restart
        self.can_go_back = can_go_back
        self.cursor = 0  # the last wire event shown
        self.paused = self.options.start_paused or self.options.start_at is not None
        self.previewing = self.options.preview
        self.selected: int | None = None
        # The call the person picked (j/k, a click): selected wherever it has started,
        # remembered where it has not (Home), and the one { } follow alone.
        self.chosen: int | None = None
        self.calls_at = CallsAt()
        self.raw_lanes: set[int] = set()  # parsed calls the person asked to see raw
        self.inspector: InspectorScreen | None = None  # kept between openings
        # Kept too: a go-to prompt dismissed stayed in memory with its widgets'
        # caches (~400 objects each time `g` was pressed).
        self.goto_screen: GotoScreen | None = None
        self.settled_event = asyncio.Event()
        self._bundle_written = False
        self._last_tick = self.options.clock()
        self._redrawn_at, self._events_at_redraw = time.perf_counter(), 0
        self._frame_seconds = 0.0  # what the last draw cost until it was on screen
        self._drawn_for: tuple[int, int, bool] | None = None  # cursor, events, paused
        self.status_bar = StatusBar(id="status")
        self.scrub_bar = ScrubBar(
            lambda width: scrub_view(self.watched.state, self.cursor, width), id="scrub"
        )
        self._going_to = watch.options.start_at  # --at, End: the event to stop at once it arrives
        self._jumps_uncollected = 0
        self._last_jump_at = 0.0
        self.error_banner = Static(id="error-banner")
        self.text_pane = TextPane(watch.state, self.options.typing_cps, id="text-pane")
        self.lanes = LaneColumn(id="lanes")
        self.raw_log = RawLog(id="raw-log")
        self.raw_log.display = False
        self.footer = KeyFooter(compact=True, keys_held=True)

    def compose(self) -> ComposeResult:
        yield self.status_bar
        yield self.scrub_bar
        yield self.error_banner
        with Horizontal(id="main"):
            yield self.text_pane
            yield self.lanes
        yield self.raw_log
        yield self.footer

    def on_mount(self) -> None:
        self.set_interval(TICK_SECONDS, self.tick)
        self.set_timer(KEYS_HELD_AT_MOST_SECONDS, self.footer.show_keys)
        self.draw(None)

    def on_resize(self) -> None:
        self.footer.show_command_palette = self.size.width >= self.FOOTER_PALETTE_WIDTH
        self._drawn_for = None  # lanes are sized to the screen: the next tick redraws

    # -- the cursor and the display tick ------------------------------------------------
    @property
    def horizon(self) -> int:
        """The last wire event received (the event after it once the stream is over)."""
        return self.watched.state.now

    @property
    def settled(self) -> bool:
        """Everything received is on screen (tests and snapshots wait on this)."""
        state = self.watched.state
        return (
            state.ended
            and self.cursor >= self.horizon
            and self.lanes.at_rest()
            and self.text_pane.caught_up
            and all(lane.is_mounted for lane in self.lanes.lanes.values())
            and self.footer.keys_settled
        )

    def tick(self) -> None:
        """The display timer: a display tick when the pace allows one. None once the
        app is shutting down: the timer runs in a task of its own until the screen's
        turn to close comes, and a lane mounted meanwhile is never styled."""
        if self.app.is_running and self.redraw_due():
            self.display_tick()

    def display_tick(self) -> None:
        """The cursor follows the stream (unless paused), and what changed is drawn."""
        if not self.paused:
            self.cursor = self.horizon
        elif self._going_to is not None:
            self._go_on_to(self._going_to)
        now = self.options.clock()
        seconds, self._last_tick = now - self._last_tick, now
        if not self.still():
            self.draw(None if self.paused else seconds)

    def _go_on_to(self, target: int) -> None:
        """--at (and End): the cursor follows what arrives until the event asked
        for is in, or the stream is over."""
        state = self.watched.state
        if state.events >= target or state.ended:
            self._going_to = None
            self.cursor = cursor_for_event(state, target)
        else:
            self.cursor = self.horizon

    def still(self) -> bool:
        """Nothing on screen can have changed since the last draw: the cursor and
        what arrived are the same, no text is left to type, and no clock is shown
        running (the stream is over and on screen, or the display is paused), and
        every lane has the size it wants."""
        if self._drawn_for != (self.cursor, self.watched.state.events, self.paused):
            return False
        if not self.text_pane.caught_up or not self.lanes.at_rest():
            return False
        over = is_over(self.watched.state, self.cursor)
        return self.settled_event.is_set() if over else self.paused

    def redraw_due(self) -> bool:
        """The display has had no more than its share of the loop since the last
        redraw, given what the last frame cost (real time: this paces work, it is
        never displayed)."""
        return redraw_due(
            time.perf_counter() - self._redrawn_at,
            self._frame_seconds,
            self.watched.state.events - self._events_at_redraw,
        )

    def draw(self, seconds: float | None) -> None:
        """Every part of the screen from the state at the cursor. `seconds`: time
        since the last draw, for the typewriter (None: reveal all)."""
        self._redrawn_at, self._events_at_redraw = time.perf_counter(), self.watched.state.events
        self.call_after_refresh(self._frame_drawn, self._redrawn_at)
        state, upto = self.watched.state, self.cursor
        self._drawn_for = (upto, state.events, self.paused)
        over = is_over(state, upto)
        counts = self.calls_at.at(state, upto)
        self.status_bar.show(
            status_view(
                state,
                upto,
                paused=self.paused,
                live_elapsed=self.watched.elapsed(),
                quiet=self.watched.quiet(),
                counts=counts,
            )
        )
        self.text_pane.show(upto, seconds, over)
        self.scrub_bar.redraw()
        indexes = counts.started
        if self.chosen in indexes:
            self.selected = self.chosen
        elif self.selected not in indexes:
            self.selected = indexes[0] if indexes else None
        self.lanes.show(
            state,
            indexes,
            self.selected,
            self.lane_view,
            lambda index: call_row(state, state.calls[index], upto),
            over=over,
            exact_preview=self.paused,
            stamp=(upto, state.events),
        )
        self.text_pane.set_class(not self.text_pane.has_text and bool(indexes), "-empty")
        self.lanes.set_class(not indexes and self.text_pane.has_text, "-empty")
        self._show_error(over)
        if self.raw_log.display:
            self.raw_log.show(
                self.watched.wire_events,
                upto,
                complete=state.ended,
                trailing=state.trailing if over else "",
            )
        if indexes or self.text_pane.has_text or over:
            self.footer.show_keys()  # after the frame that first shows the stream
        if self.settled and not self.settled_event.is_set():
            # What this draw changed is laid out and drawn only at the next refresh.
            self.call_after_refresh(self._settled_on_screen)

    def _frame_drawn(self, began: float) -> None:
        """A draw is on screen: what it cost, layout and rendering included."""
        self._frame_seconds = min(LONGEST_FRAME_SECONDS, time.perf_counter() - began)

    def lane_view(self, slot: CallSlot) -> LaneView:
        return lane_view(
            self.watched.state,
            slot,
            self.cursor,
            raw=slot.index in self.raw_lanes,
            previewing=self.previewing,
        )

    def _settled_on_screen(self) -> None:
        if not self.settled or self.settled_event.is_set():
            return  # a rerun began meanwhile, or an earlier refresh got here first
        self.settled_event.set()
        bundle = self.options.bundle
        if bundle is not None and not self._bundle_written:
            self._bundle_written = True
            self.write_bundle(bundle)

    def _show_error(self, over: bool) -> None:
        state = self.watched.state
        shown = over and state.error is not None
        if shown == self.error_banner.has_class("-shown"):
            return
        self.error_banner.set_class(shown, "-shown")
        if not shown or state.error is None:
            return
        message = Text(inert_text(state.error), "bold")
        body = state.body
        if body and state.http_status and state.http_status >= 400:
            lines = inert_text(body).splitlines()[:MAX_BODY_LINES]
            message.append("\n" + "\n".join(lines), "not bold")
        self.error_banner.update(message)

    # -- a new stream ----------------------------------------------------------------
    def show_stream(self, watch: WatchedStream) -> None:
        """Show another stream (a rerun) from its start."""
        self.watched = watch
        self.cursor = 0
        self.raw_lanes.clear()
        self.selected = self.chosen = None
        self.settled_event.clear()
        self._bundle_written = False
        self.lanes.clear()
        self.text_pane.show_state(watch.state)
        self.error_banner.set_class(False, "-shown")
        self.draw(None)

    # -- actions ---------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self._going_to = None  # paused again, the cursor stays where it is
        self.draw(None)

    # -- moving the display cursor (each move pauses) ------------------------------------
    def move_to(self, cursor: int) -> None:
        """Show the stream as it stood after wire event `cursor`: nothing is read
        again, every part is drawn from the state at the new cursor."""
        self.paused = True
        self._going_to = None
        self.cursor = max(0, min(cursor, self.horizon))
        self.draw(None)
        self._last_jump_at = time.perf_counter()
        self._jumps_uncollected += 1
        if self._jumps_uncollected == JUMPS_PER_COLLECTION:
            self.set_timer(COLLECT_AFTER_SECONDS, self._collect_when_idle)
        elif self._jumps_uncollected == MOST_JUMPS_UNCOLLECTED:
            self.call_after_refresh(self._collect_after_jumps)

    def _collect_when_idle(self) -> None:
        if self._jumps_uncollected < JUMPS_PER_COLLECTION:
            return  # collected meanwhile
        idle = time.perf_counter() - self._last_jump_at
        if idle < COLLECT_AFTER_SECONDS:
            self.set_timer(COLLECT_AFTER_SECONDS - idle, self._collect_when_idle)
        else:
            self._collect_after_jumps()

    def _collect_after_jumps(self) -> None:
        self._jumps_uncollected = 0
        gc.collect()

    def action_step(self, step: int = 1) -> None:
        self.move_to(self.cursor + step)

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self.horizon)
        if not self.watched.state.ended:
            # Still arriving (a recording being read after --at, a live stream): End is
            # the stream as it ends, so the cursor follows what arrives until then.
            self._going_to = THE_LAST_EVENT

    def action_anomaly(self, direction: int) -> None:
        state = self.watched.state
        found = (next_anomaly if direction > 0 else previous_anomaly)(state, self.cursor)
        if found is None:
            self.notify(f"no anomaly {'after' if direction > 0 else 'before'} this event")
            return
        self.move_to(found)

    def action_moment(self, direction: int) -> None:
        """The previous or next moment a call started, got its name or settled; the
        chosen call's alone once the person chose one (j/k, a click)."""
        index = self.chosen
        state = self.watched.state
        find = next_call_moment if direction > 0 else previous_call_moment
        found = find(state, self.cursor, index)
        if found is None:
            which = "this call" if index is not None else "a call"
            where = "after" if direction > 0 else "before"
            self.notify(f"nothing happens to {which} {where} this event")
            return
        self.move_to(found)

    def action_goto(self) -> None:
        from .goto import GotoScreen

        def chosen(position: tuple[str, float] | None) -> None:
            if position is not None:
                self.move_to(cursor_for(self.watched.state, position))

        if self.goto_screen is None:
            self.goto_screen = GotoScreen()
            self.app.install_screen(self.goto_screen, f"goto-{id(self)}")
        self.goto_screen.last_event = self.watched.state.events
        self.app.push_screen(self.goto_screen, chosen)

    def on_scrub_bar_scrubbed(self, message: ScrubBar.Scrubbed) -> None:
        self.move_to(message.cursor)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return self.can_go_back
        if action == "restart":
            return self._restart is not None
        return True

    def action_back(self) -> None:
        self.dismiss()  # the app that pushed it hears that it was left

    def action_restart(self) -> None:
        if self._restart is not None:
            self.show_stream(self._restart())

    def action_toggle_lane(self) -> None:
        index = self.selected
        if index is None:
            return
        slot = self.watched.state.calls[index]
        if not parsed_upto(slot, self.cursor):
            if is_settled(slot, self.cursor):
                self.notify(f"call #{index} has no tree: its arguments did not parse")
            else:
                self.notify(f"call #{index} has no tree yet: it is parsed at its end (p previews)")
            return
        self.raw_lanes ^= {index}
        self.draw(None)

    def action_toggle_all(self) -> None:
        state = self.watched.state
        parsed = {
            i for i in calls_upto(state, self.cursor) if parsed_upto(state.calls[i], self.cursor)
        }
        all_trees = not parsed & self.raw_lanes
        self.raw_lanes = set(parsed) if all_trees else self.raw_lanes - parsed
        self.draw(None)

    def action_toggle_preview(self) -> None:
        """Streaming lanes show what their arguments parse to so far (never final)."""
        self.previewing = not self.previewing
        self.draw(None)

    def action_toggle_log(self) -> None:
        self.raw_log.display = not self.raw_log.display
        self.draw(None)

    def action_toggle_envelope(self) -> None:
        self.raw_log.toggle_envelope()

    def action_select_lane(self, step: int) -> None:
        indexes = self.lanes.indexes
        if not indexes:
            return
        position = indexes.index(self.selected) + step if self.selected in indexes else 0
        self.selected = self.chosen = indexes[position % len(indexes)]
        self.draw(None)

    def on_call_lane_clicked(self, message: CallLane.Clicked) -> None:
        self.selected = self.chosen = message.index
        self.draw(None)
        if message.double:
            self.action_inspect()

    def on_call_list_picked(self, message: CallList.Picked) -> None:
        self.selected = self.chosen = message.index
        self.draw(None)

    def action_inspect(self) -> None:
        if self.selected is None:
            self.notify("no tool call to inspect yet")
            return
        slot = self.watched.state.calls[self.selected]
        rows = FragmentRows(slot.pieces)
        title = f"fragments of call {lane_title(slot, self.cursor)}"

        def count() -> int:
            return rows.count_upto(self.cursor)

        if self.inspector is None:
            from .inspector import InspectorScreen  # the first frame needs no inspector

            self.inspector = InspectorScreen(title, rows, count)
            self.app.install_screen(self.inspector, f"inspector-{id(self)}")
        else:
            self.inspector.inspect(title, rows, count)
        self.app.push_screen(self.inspector)

    def on_unmount(self) -> None:
        """The screen left for good (a proxied request closed): so do its inspector
        and its go-to prompt."""
        for kept in (self.inspector, self.goto_screen):
            if kept is not None and kept not in self.app.screen_stack:
                self.app.uninstall_screen(kept)
                kept.remove()

    # The screens a key opens are imported when first opened: the first frame needs none.
    def action_anomalies(self) -> None:
        from .anomalies import AnomaliesScreen

        self.app.push_screen(AnomaliesScreen(anomalies_seen(self.watched.state, self.cursor)))

    def action_timeline(self) -> None:
        from .timeline import TimelineScreen

        screen = TimelineScreen(
            self.timeline_figures,
            lambda: self.watched.state.ended,
            scrub=lambda width, end: scrub_view(self.watched.state, self.cursor, width, end),
            move=self.move_to,
        )
        self.app.push_screen(screen)

    def timeline_figures(self) -> TimelineFigures:
        """The timing as it stood at the cursor, on the axis of the whole stream
        (paused), or of everything received (live)."""
        from .timeline import TimelineFigures, axis_end

        state, upto = self.watched.state, self.cursor
        whole = TimelineFigures(
            stream_timing(state),
            {index: slot.pieces.times for index, slot in state.calls.items()},
            state.read_times,
        )
        if not self.paused or is_over(state, upto):
            return whole
        arrivals = {
            index: slot.pieces.times[: slot.pieces.count_upto(upto)]
            for index, slot in state.calls.items()
            if slot.started_event <= upto
        }
        reads = state.read_times[: reads_upto(state, upto)]
        return TimelineFigures(stream_timing(state, upto), arrivals, reads, axis_end(whole))

    @property
    def cut_at(self) -> int | None:
        """Where an export or a bundle is cut: the cursor while paused (the report as
        of that event, marked so), None (everything received) while live."""
        return self.cursor if self.paused else None

    def action_export(self) -> None:
        path = self.options.output / REPORT_NAME
        upto = self.cut_at
        state = self.watched.state
        text = report_json(state) if upto is None else report_upto_json(state, upto)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot export to {shown_path(path)}: {exc.strerror}", severity="error")
            return
        where = "" if upto is None else f" as of event {min(upto, state.events):,}"
        self.notify(f"report{where} written to {shown_path(path)}")

    def action_screenshot(self) -> None:
        try:
            path = self.app.save_screenshot(path=str(self.options.output))
        except OSError as exc:
            self.notify(f"cannot save screenshot: {exc.strerror}", severity="error")
            return
        self.notify(f"screenshot saved to {shown_path(Path(path))}")

    def action_bundle(self) -> None:
        """A bundle now; an existing bundle is overwritten only if the person says so."""
        directory = self.options.bundle or fresh_directory(
            self.options.output / f"toolstream-bundle-{time.strftime('%Y%m%d-%H%M%S')}"
        )
        if directory.exists() and any(directory.iterdir()):

            def answered(overwrite: bool | None) -> None:
                if overwrite:
                    self.write_bundle(directory)

            from .confirm import ConfirmScreen

            question = f"{shown_path(directory)} already holds a bundle. Overwrite it?"
            self.app.push_screen(ConfirmScreen(question), answered)
            return
        self.write_bundle(directory)

    def bundle_on_quit(self) -> str | None:
        """With --bundle, a stream quit before its bundle was written is bundled as
        it stands (cut where the person quit). Returns what to say after exit."""
        directory = self.options.bundle
        if directory is None or self._bundle_written:
            return None
        self._bundle_written = True
        if not self.watched.state.ended:
            self.watched.session.interrupt("quit before the stream ended", self.watched.elapsed())
        return self.write_bundle(directory)

    def write_bundle(self, directory: Path) -> str:
        """A repro bundle of what has arrived so far, with the screen as it is now;
        returns (and shows) what happened."""
        from ...watching.bundle import write_bundle  # a bundle is rare: not loaded at start

        try:
            write_bundle(
                directory,
                self.watched.tape,
                self.watched.state,
                self.app.export_screenshot(),
                upto=self.cut_at,
            )
        except OSError as exc:
            message = f"cannot write bundle to {shown_path(directory)}: {exc.strerror}"
            self.notify(message, severity="error")
            return message
        message = f"repro bundle written to {shown_path(directory)}"
        self.notify(message)
        return message


def redraw_due(since_redraw: float, frame_seconds: float, arrived: int) -> bool:
    """Whether to redraw, `since_redraw` seconds after a redraw whose frame took
    `frame_seconds`, with `arrived` wire events since: at most 30 times a second,
    and no more often than keeps the display within its share of the loop."""
    share = BURST_DISPLAY_SHARE if arrived > BURST_EVENTS else DISPLAY_SHARE
    return since_redraw >= max(TICK_SECONDS, frame_seconds * (1 - share) / share)


def shown_path(path: Path) -> str:
    """A path as a toast shows it: relative to the current directory when inside
    it, and cut in the middle rather than broken mid-name."""
    try:
        text = str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        text = str(path)
    return shortened(text, TOAST_PATH_WIDTH)


def fresh_directory(directory: Path) -> Path:
    """`directory`, or with -2, -3… if it exists (two bundles in one second)."""
    candidate, number = directory, 1
    while candidate.exists():
        number += 1
        candidate = directory.with_name(f"{directory.name}-{number}")
    return candidate
