"""A scrollable view of text that grows by appends.

Lines are cut as text arrives (`WrappedLines`) and only the visible ones are
rendered, so appending costs time proportional to what was appended and a
screen refresh costs time proportional to the screen. Appends are collected and
shown by `flush()`, which the app calls on its display tick; a hidden view
(the raw log, a lane showing its tree) only wraps when it is shown again.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..wrapped import Run, WrappedLines


class WrappedView(ScrollView, can_focus=False):
    DEFAULT_CSS = """
    WrappedView { height: 1fr; }
    """

    def __init__(
        self, *, word_wrap: bool = False, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.word_wrap = word_wrap
        self.runs: list[Run] = []
        self.mark: int | None = None
        self._wrapped = WrappedLines(80, word_wrap=word_wrap, shown=self.shown)
        self._wrapped_runs = 0
        self._changed = False
        self._styles: dict[int, Style] = {}

    # -- content ------------------------------------------------------------
    def append(self, text: str, tag: int = 0) -> None:
        if text:
            self.runs.append((text, tag))
            self._changed = True

    def extend(self, runs: list[Run]) -> None:
        if runs:
            self.runs.extend(runs)
            self._changed = True

    def clear(self) -> None:
        self.runs = []
        self.mark = None
        self._rewrap(self._wrapped.width)
        self.flush()

    def _rewrap(self, width: int) -> None:
        self._wrapped = WrappedLines(width, word_wrap=self.word_wrap, shown=self.shown)
        self._wrapped_runs = 0
        self._changed = True

    def _catch_up(self) -> None:
        """Cut the runs appended since the last call into lines."""
        self._wrapped.extend(self.runs[self._wrapped_runs :])
        self._wrapped_runs = len(self.runs)

    def shown(self, text: str) -> str:
        """How appended text is drawn; must keep its length (offsets stay valid).
        Applied when the text is first wrapped, so hidden views pay nothing."""
        return text

    def set_mark(self, offset: int | None) -> None:
        """Highlight the character at `offset` (a parse-error position)."""
        self.mark = offset
        self._changed = True

    def plain_lines(self) -> list[str]:
        self._catch_up()
        return [self._wrapped.line_text(number) for number in range(len(self._wrapped))]

    def flush(self) -> None:
        """Show what was appended since the last flush, following the end if the
        view was at the end."""
        if not self._changed or not self.display:
            return
        self._changed = False
        self._catch_up()
        grow(self, Size(self._wrapped.width, len(self._wrapped)))

    # -- layout -------------------------------------------------------------
    def on_resize(self) -> None:
        width = max(1, self.scrollable_content_region.width)
        if width == self._wrapped.width:
            return
        self._rewrap(width)
        self.flush()

    # -- rendering ----------------------------------------------------------
    def tag_style(self, tag: int) -> Style:
        return Style()

    def mark_style(self) -> Style:
        return Style(reverse=True, bold=True)

    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y
        base = self._style(BASE_TAG)
        width = self.size.width
        if number >= len(self._wrapped):
            return Strip.blank(width, base)
        segments = [Segment(text, self._style(tag)) for text, tag in self._line_runs(number)]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    def _style(self, tag: int) -> Style:
        """Styles per tag, computed once per style change rather than per line."""
        style = self._styles.get(tag)
        if style is None:
            base = self.rich_style
            style = self._styles[tag] = base if tag == BASE_TAG else base + self._style_for(tag)
        return style

    def _line_runs(self, number: int) -> list[Run]:
        runs = self._wrapped.line_runs(number)
        mark = self.mark
        if mark is None or self._wrapped.line_of(mark) != number:
            return runs
        return _with_mark(runs, mark - self._wrapped.starts[number])

    def _style_for(self, tag: int) -> Style:
        return self.mark_style() if tag == MARK_TAG else self.tag_style(tag)


def grow(view: ScrollView, size: Size) -> None:
    """Give a scroll view a new content size, following the end if it was there.
    Growing content changes nothing outside the view, so this skips the screen
    layout that assigning `virtual_size` asks for (with 64 lanes, a reflow of
    every lane on every tick) and updates the scrollbars as Textual does on resize."""
    following = view.is_vertical_scroll_end
    view.set_reactive(ScrollView.virtual_size, size)
    view._scroll_update(size)
    view.refresh()
    if following:
        view.scroll_end(animate=False, immediate=True, x_axis=False)


MARK_TAG = -1
BASE_TAG = -2


def _with_mark(runs: list[Run], offset: int) -> list[Run]:
    """The runs with the character at `offset` given MARK_TAG (or a marker cell
    after the line's end when the error is at the end of the buffer)."""
    marked: list[Run] = []
    position = 0
    for text, tag in runs:
        if position <= offset < position + len(text):
            cut = offset - position
            marked += [(text[:cut], tag), (text[cut], MARK_TAG), (text[cut + 1 :], tag)]
        else:
            marked.append((text, tag))
        position += len(text)
    if offset >= position:
        marked.append(("◀", MARK_TAG))
    return [run for run in marked if run[0]]
