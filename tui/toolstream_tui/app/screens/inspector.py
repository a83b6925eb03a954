"""A call's fragments, one row each: exactly how the provider cut the arguments.

The list is virtual: only the rows in view are made (`views.FragmentRows`) and
drawn, so opening it costs the same for ten fragments or millions. It shows the
fragments up to the display cursor, and follows the stream while it is open.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Click
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Static

from ...core.visible import inert
from ...views.fragments import FRAGMENT_COLUMNS, FragmentRows, fragment_cells
from ...views.words import plural
from ..widgets.content_size import set_content_size
from ..widgets.key_footer import KeyFooter
from ..wrapped import fit_cell

FOLLOW_SECONDS = 0.1  # how often an open inspector looks for new fragments
GAP = 2  # cells between columns
SHIFT_STEP = 8  # characters the fragment column moves by on left / right
CUT_MARK = "…"
HEADER_LINES = 1


class FragmentList(ScrollView, can_focus=True):
    """The rows of the first `count` fragments, drawn only when in view, under a
    header that stays; a row cursor, and the fragment column shifted sideways
    to read long fragments."""

    COMPONENT_CLASSES = {
        "fragment-list--header",
        "fragment-list--even-row",
        "fragment-list--cursor",
        "fragment-list--parses",
        "fragment-list--no",
        "fragment-list--cut",
    }
    DEFAULT_CSS = """
    FragmentList { height: 1fr; scrollbar-gutter: stable; overflow-x: hidden; }
    FragmentList > .fragment-list--header { text-style: bold; background: $panel; }
    FragmentList > .fragment-list--even-row { background: $surface-lighten-1 50%; }
    FragmentList > .fragment-list--cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
    }
    FragmentList:focus > .fragment-list--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    FragmentList > .fragment-list--parses { color: $success; }
    FragmentList > .fragment-list--no { color: $text-muted; }
    FragmentList > .fragment-list--cut { color: $text-muted; text-style: bold; }
    """
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("left", "shift(-1)", "Left", show=False),
        Binding("right", "shift(1)", "Right", show=False),
    ]

    def __init__(self, rows: FragmentRows, count: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows = rows
        self.count = count
        self.cursor_row = 0  # from 0
        self.shift = 0  # characters of the fragment column scrolled off to the left
        self._styles: dict[str, Style] = {}

    # -- content ------------------------------------------------------------
    def show(self, count: int) -> None:
        """Show the first `count` fragments; a cursor on the last row follows new ones."""
        if count == self.count:
            return
        following = self.cursor_row >= self.count - 1
        self.count = count
        self.cursor_row = min(self.cursor_row, max(count - 1, 0))
        self._resize()
        if following:
            self.move_cursor(count - 1)
        self.refresh()

    def show_rows(self, rows: FragmentRows, count: int) -> None:
        """Another call's fragments, from the first row."""
        self.rows, self.count = rows, count
        self.cursor_row = self.shift = 0
        self._resize()
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    def _resize(self) -> None:
        set_content_size(self, Size(self.size.width, self.count + HEADER_LINES))

    def on_resize(self) -> None:
        self._resize()

    @property
    def page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER_LINES)

    # -- the cursor -----------------------------------------------------------
    def move_cursor(self, row: int) -> None:
        """Put the cursor on `row` (from 0) and scroll it into view."""
        self.cursor_row = max(0, min(row, self.count - 1))
        top = self.scroll_offset.y
        if self.cursor_row < top:
            top = self.cursor_row
        elif self.cursor_row >= top + self.page_rows:
            top = self.cursor_row - self.page_rows + 1
        self.scroll_to(y=top, animate=False, immediate=True)
        self.refresh()

    def action_move(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step * self.page_rows)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.count - 1)

    def action_shift(self, step: int) -> None:
        self.shift = max(0, self.shift + step * SHIFT_STEP)
        self.refresh()

    def on_click(self, event: Click) -> None:
        row = self.scroll_offset.y + event.y - HEADER_LINES
        if event.y >= HEADER_LINES and 0 <= row < self.count:
            self.move_cursor(row)

    def drawn_rows(self) -> list[str]:
        """The rows in view as drawn, without the header (for tests)."""
        top = self.scroll_offset.y
        shown = min(self.page_rows, self.count - top)
        return [self.render_line(HEADER_LINES + y).text.rstrip() for y in range(shown)]

    # -- rendering ----------------------------------------------------------
    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(f"fragment-list--{name}")
        return style

    def widths(self) -> list[int]:
        return self.rows.widths(self.count, self.size.width, GAP)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y < HEADER_LINES:
            return self._header(self.widths()).crop_extend(0, width, base)
        row = self.scroll_offset.y + y - HEADER_LINES
        if row >= self.count:
            return Strip.blank(width, base)
        return self._row(row, self.widths(), width)

    def _header(self, widths: list[int]) -> Strip:
        cells = [
            fit_cell(title, width, right)
            for (title, _, right), width in zip(FRAGMENT_COLUMNS, widths, strict=True)
        ]
        return Strip([Segment((" " * GAP).join(cells), self.rich_style + self._style("header"))])

    def _row(self, row: int, widths: list[int], width: int) -> Strip:
        text_width = widths[-1]
        shown = self.rows.row(row + 1, self.shift + text_width)
        on_cursor = row == self.cursor_row
        style = self.rich_style
        if on_cursor:
            style += self._style("cursor")
        elif row % 2:
            style += self._style("even-row")
        alone = (
            style if on_cursor else style + self._style("parses" if shown.parses_alone else "no")
        )
        cell_styles = [style] * (len(FRAGMENT_COLUMNS) - 2) + [alone]
        gap = Segment(" " * GAP, style)
        segments: list[Segment] = []
        cells = zip(fragment_cells(shown), widths, FRAGMENT_COLUMNS, cell_styles, strict=False)
        for cell, cell_width, (_, _, right), cell_style in cells:
            segments += [Segment(fit_cell(cell, cell_width, right), cell_style), gap]
        text = shown.text[self.shift :]
        if shown.cut or cell_len(text) > text_width:
            text = set_cell_size(text, max(0, text_width - cell_len(CUT_MARK)))
            segments += [Segment(text, style), Segment(CUT_MARK, style + self._style("cut"))]
        else:
            segments.append(Segment(text, style))
        return Strip(segments).crop_extend(0, width, style)


class InspectorScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    InspectorScreen { background: $background; }
    InspectorScreen > Vertical { border: round $accent; background: $surface; padding: 0 1; }
    InspectorScreen #summary { height: auto; color: $text-muted; }
    """
    BINDINGS = [Binding("escape,q,i", "dismiss", "Close", id="inspector.close")]

    def __init__(self, title: str, rows: FragmentRows, count: Callable[[], int]) -> None:
        """`count`: how many fragments there are at the display cursor (asked again
        every FOLLOW_SECONDS while the inspector is open)."""
        super().__init__()
        self.title_text = title
        self._count = count
        self.box = Vertical()
        self.box.border_title = Text(inert(title))
        self.summary = Static(id="summary")
        self.fragment_list = FragmentList(rows, count(), id="fragments")
        self._following: Timer | None = None

    def inspect(self, title: str, rows: FragmentRows, count: Callable[[], int]) -> None:
        """Show another call. The screen is kept between openings: a new one had to
        be composed and styled, and laid out with the screen under it, before its
        first frame."""
        self.title_text, self._count = title, count
        self.box.border_title = Text(inert(title))
        self.fragment_list.show_rows(rows, count())
        self.show_summary()

    def compose(self) -> ComposeResult:
        with self.box:
            yield self.summary
            yield self.fragment_list
        yield KeyFooter()

    def on_mount(self) -> None:
        self.show_summary()
        self.fragment_list.focus()
        self._following = self.set_interval(FOLLOW_SECONDS, self.follow)

    def on_screen_suspend(self) -> None:
        if self._following is not None:
            self._following.pause()

    def on_screen_resume(self) -> None:
        if self._following is not None:
            self._following.resume()
            self.follow()

    def follow(self) -> None:
        """New fragments at the display cursor, if any, drawn."""
        count = self._count()
        if count != self.fragment_list.count:
            self.fragment_list.show(count)
            self.show_summary()

    def show_summary(self) -> None:
        # How many parse alone would need every fragment parsed, at every open:
        # the column says it for the rows in view, and the summary stays instant.
        count = plural(self.fragment_list.count, "fragment")
        self.summary.update(
            Text(
                f"{count}; arguments are only valid once all are joined "
                "(alone: parses as JSON by itself)"
            )
        )

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
