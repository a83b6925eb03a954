"""The proxy's request list: every request an agent sends through the proxy, newest
first, live, like a browser's network panel. Enter opens one in the stream view
(text pane, lanes, inspector, timing, log, bundle), live while it streams;
Escape comes back. The list is drawn from the `RequestList` a few times a second;
a listener only marks it stale, so the proxy never waits on the screen."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from ...proxy.requests import Change, RequestList, RequestRecord
from ...sources.base import Clock
from ...views.requests import PASSED, REQUEST_COLUMNS, column_widths, request_row
from ...views.words import plural
from ...watching.options import WatchOptions
from ...watching.stream import WatchedStream
from ..input_first import InputFirstApp
from ..screens.request import RequestScreen
from ..screens.stream import StreamScreen
from ..widgets.content_size import set_content_size
from ..widgets.key_footer import KeyFooter
from ..wrapped import fit_cell

LIST_SECONDS = 0.25  # the list is redrawn four times a second while requests change
TONES = {
    "waiting": Style(color="yellow"),
    "streaming": Style(color="cyan"),
    "finished": Style(color="green"),
    "anomalies": Style(color="yellow", bold=True),
    "truncated": Style(color="red"),
    "error": Style(color="red", bold=True),
    PASSED: Style(dim=True),
}
SELECTED = Style(reverse=True)


def show_text(static: Static, text: str, layout: bool = False) -> None:
    """`text` in a Static, redrawn only when it changed, and laid out again only
    with `layout` (a one-line Static's size does not depend on its text): a layout
    four times a second cost more than drawing every request's row."""
    if str(static.content) != text:
        static.update(Text(text), layout=layout)


def line_of(cells: tuple[str, ...], widths: list[int]) -> str:
    """The cells of the columns drawn (a width of 0: a column a narrow list leaves out)."""
    return " ".join(
        fit_cell(cell, width, right)
        for cell, width, (_, _, right) in zip(cells, widths, REQUEST_COLUMNS, strict=True)
        if width
    )


class RequestTable(ScrollView, can_focus=True):
    """One line per request, drawn only when in view."""

    DEFAULT_CSS = """
    RequestTable { height: 1fr; scrollbar-gutter: stable; overflow-x: hidden; }
    """

    class Opened(Message):
        def __init__(self, request_id: int) -> None:
            super().__init__()
            self.request_id = request_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ids: list[int] = []  # the requests shown, newest first
        self.selected: int | None = None
        self.row: Callable[[int], tuple[str, str]] = lambda request_id: ("", "")
        self.base = Style()  # the widget's own style, looked up once per draw

    def show(
        self, ids: list[int], selected: int | None, row: Callable[[int], tuple[str, str]]
    ) -> None:
        self.ids, self.selected, self.row = ids, selected, row
        self.base = self.rich_style  # it walks the DOM: once here, not once per line
        set_content_size(self, Size(self.size.width, len(ids)))
        if selected in ids:
            position = ids.index(selected)
            top, height = int(self.scroll_y), max(1, self.size.height)
            if not top <= position < top + height:
                self.scroll_to(y=max(0, position - height + 1), animate=False, immediate=True)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        number = int(self.scroll_y) + y
        width = self.size.width
        base = self.base
        if number >= len(self.ids):
            return Strip.blank(width, base)
        request_id = self.ids[number]
        text, tone = self.row(request_id)
        style = base + TONES.get(tone, Style())
        if request_id == self.selected:
            style += SELECTED
        return Strip([Segment(text, style)]).crop_extend(0, width, base)

    def on_click(self, event: Click) -> None:
        number = int(self.scroll_y) + event.y
        if 0 <= number < len(self.ids):
            self.selected = self.ids[number]
            self.post_message(self.Opened(self.selected))


class RequestListScreen(Screen[None]):
    DEFAULT_CSS = """
    RequestListScreen { layout: vertical; }
    RequestListScreen #proxy-status { height: 1; background: $panel; padding: 0 1; }
    RequestListScreen #columns { height: 1; color: $text-muted; text-style: bold; padding: 0 1; }
    RequestListScreen RequestTable { padding: 0 1; }
    RequestListScreen #no-requests { color: $text-muted; padding: 1 1; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open", tooltip="The selected request's stream"),
        Binding("down,j", "move(1)", "Next", tooltip="Select an older request", show=False),
        Binding("up,k", "move(-1)", "Previous", tooltip="Select a newer request", show=False),
        Binding("f", "toggle_follow", "Follow", tooltip="Keep the newest request selected"),
        Binding("a", "toggle_anomalies", "Anomalies only", tooltip="Only requests with anomalies"),
        Binding(
            "r",
            "request",
            "Request",
            tooltip="The selected request's headers and body, secrets redacted",
            show=False,  # in the keys panel (?); the footer's line is full
        ),
    ]

    def __init__(
        self,
        log: RequestList,
        listening: str,
        upstream: str,
        clock: Clock,
        origin: str | None = None,
    ) -> None:
        """`clock`: time.monotonic, or a test's (it times the requests still live).
        `origin`: where the requests came from, when not from a listening proxy (a
        capture file)."""
        super().__init__()
        self.request_list = log
        self.clock = clock
        self.listening = listening
        self.upstream = upstream
        self.origin = origin
        self.follow = True  # the newest request stays selected
        self.anomalies_only = False
        self.selected: int | None = None
        self.status = Static(id="proxy-status")
        self.columns = Static(id="columns")
        self.table = RequestTable(id="requests")
        self.empty = Static(id="no-requests")

    def compose(self) -> ComposeResult:
        yield self.status
        yield self.columns
        yield self.empty
        yield self.table
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.set_interval(LIST_SECONDS, self.draw)
        self.draw()

    def shown_ids(self) -> list[int]:
        records = self.request_list.records
        ids = sorted(records, reverse=True)
        if self.anomalies_only:
            ids = [i for i in ids if records[i].shown_anomalies]
        return ids

    def draw(self) -> None:
        ids = self.shown_ids()
        if self.follow or self.selected not in ids:
            self.selected = ids[0] if ids else None
        widths = column_widths(max(40, self.table.size.width - 2))
        now = self.clock()
        # The records as of this draw: the table paints lines until the next one,
        # and the log may forget a request (--keep) in between.
        records = {request_id: self.request_list.records[request_id] for request_id in ids}

        def row(request_id: int) -> tuple[str, str]:
            shown = request_row(records[request_id], now, widths)
            return line_of(shown.cells, widths), shown.tone

        show_text(self.columns, line_of(tuple(t for t, _, _ in REQUEST_COLUMNS), widths))
        self.table.show(ids, self.selected, row)
        self.empty.display = not ids
        show_text(self.empty, self.empty_text(), layout=True)  # it may wrap
        show_text(self.status, self.status_text(ids))

    def empty_text(self) -> str:
        if self.anomalies_only and self.request_list.records:
            return "no request with an anomaly yet (a: show all)"
        return f"no requests yet: point your agent at {self.listening} (e.g. OPENAI_BASE_URL)"

    def status_text(self, ids: list[int]) -> str:
        records = self.request_list.records.values()
        streaming = sum(1 for record in records if not record.over)
        with_anomalies = sum(1 for record in records if record.shown_anomalies)
        # By importance: a narrow terminal cuts the addresses at the end, never the
        # counts or whether the newest request is followed.
        parts = [plural(len(self.request_list.records), "request"), f"{streaming} streaming"]
        if with_anomalies:
            parts.append(f"⚠ {with_anomalies} with anomalies")
        if self.anomalies_only:
            parts.append(f"showing {len(ids)} with anomalies")
        if self.request_list.otlp is not None:  # --otlp: spans sent, waiting, dropped
            parts.append(self.request_list.otlp.status())
        parts.append("following newest" if self.follow else "f: follow newest")
        parts.append(self.origin or f"listening on {self.listening} → {self.upstream}")
        return " · ".join(parts)

    # -- actions ---------------------------------------------------------------------
    def action_move(self, step: int) -> None:
        ids = self.shown_ids()
        if not ids:
            return
        position = ids.index(self.selected) + step if self.selected in ids else 0
        self.selected = ids[max(0, min(position, len(ids) - 1))]
        self.follow = False
        self.draw()

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        self.draw()

    def action_toggle_anomalies(self) -> None:
        self.anomalies_only = not self.anomalies_only
        self.draw()

    def action_open(self) -> None:
        if self.selected is not None:
            self.app.open_request(self.selected)  # type: ignore[attr-defined]

    def action_request(self) -> None:
        record = self.request_list.records.get(self.selected) if self.selected is not None else None
        if record is not None:
            request = record.tape.request if record.tape is not None else None
            title = f"request {record.id}: {record.method} {record.path}"
            self.app.push_screen(RequestScreen(title, request))

    def on_request_table_opened(self, message: RequestTable.Opened) -> None:
        self.selected = message.request_id
        self.follow = False
        self.action_open()


class RequestListApp(InputFirstApp):
    TITLE = "toolstream-tui proxy"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark,f1", "toggle_keys", "Keys", id="keys", key_display="?"),
    ]

    def __init__(
        self,
        log: RequestList,
        listening: str,
        upstream: str,
        *,
        options: WatchOptions | None = None,
        exit_after: int | None = None,
        origin: str | None = None,
    ) -> None:
        super().__init__()
        self.request_list = log
        self.options = options or WatchOptions(limits=log.limits, clock=time.monotonic)
        self.exit_after = exit_after
        self.requests = RequestListScreen(
            log, listening, upstream, self.options.clock, origin=origin
        )
        self.watches: dict[int, WatchedStream] = {}  # the requests opened, while they are kept
        log.pacer = self.pacer
        log.subscribe(self.changed)

    def on_mount(self) -> None:
        self.push_screen(self.requests)

    def changed(self, record: RequestRecord, change: Change) -> None:
        """Called by the log for every change: remember only that data came."""
        watch = self.watches.get(record.id)
        if watch is not None:
            watch.received()
        if change is Change.DROPPED and not self._in_view(record.id):
            self._forget(record.id)
        done = self.exit_after is not None and self.request_list.finished_count >= self.exit_after
        if change is Change.FINISHED and done:
            self.exit(0)

    def open_request(self, request_id: int) -> None:
        """The stream view of one request, live while it streams."""
        record = self.request_list.records.get(request_id)
        if record is None:
            return
        watch = self.watches.get(request_id)
        if watch is None:
            watch = WatchedStream(
                record.session.state.source,
                self.options,
                session=record.session,
                tape=record.tape.share() if record.tape is not None else None,
                started=record.started,
            )
            self.watches[request_id] = watch
        self.push_screen(
            StreamScreen(watch, can_go_back=True), callback=lambda _: self._left(request_id)
        )

    def _left(self, request_id: int) -> None:
        """A request's view was left: its watch goes if the log has let it go."""
        if request_id not in self.request_list.records and not self._in_view(request_id):
            self._forget(request_id)

    def _in_view(self, request_id: int) -> bool:
        watch = self.watches.get(request_id)
        return watch is not None and any(
            isinstance(screen, StreamScreen) and screen.watched is watch
            for screen in self.screen_stack
        )

    def _forget(self, request_id: int) -> None:
        watch = self.watches.pop(request_id, None)
        if watch is not None:
            watch.close()

    def action_toggle_keys(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()
