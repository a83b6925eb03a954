"""A scrollable view of text that grows (or, as the display cursor goes back,
shrinks), drawn from its source.

The view keeps no copy of the text: `WrappedLines` remembers where lines start
in a `TaggedText` (a call's fragments in the core, the text pane's runs), and
only the lines in view are sliced, made inert and styled when drawn. Showing
more text costs time proportional to what was added; a redraw costs time
proportional to the screen. The scrollbar's gutter is always kept, so the width
text is wrapped at is the width that is really free.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...core.surrogates import is_high_surrogate, is_low_surrogate, rejoin_pairs
from ..wrapped import Run, TaggedText, WrappedLines
from .content_size import scroll_to_end, set_content_size

MARK_TAG = -1
BASE_TAG = -2


class WrappedView(ScrollView, can_focus=False):
    DEFAULT_CSS = """
    WrappedView { height: 1fr; scrollbar-gutter: stable; overflow-x: hidden; }
    """

    def __init__(
        self,
        source: TaggedText,
        *,
        shown: Callable[[str], str],
        word_wrap: bool = False,
        newlines: bool = True,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """`shown`: how text is drawn (it must keep its length, one character for
        one). `newlines`: a newline breaks the line, else it is drawn."""
        super().__init__(id=id, classes=classes)
        self.shown = shown
        self.word_wrap = word_wrap
        self.newlines = newlines
        self.mark: int | None = None
        self._lines = WrappedLines(source, 80, word_wrap=word_wrap, newlines=newlines)
        self._styles: dict[int, Style] = {}
        self._following = True  # at the last line: stays there as lines are added

    # -- content ------------------------------------------------------------
    @property
    def source(self) -> TaggedText:
        return self._lines.source

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def shown_length(self) -> int:
        return self._lines.length

    def show(self, source: TaggedText, length: int, mark: int | None = None) -> None:
        """Show the first `length` characters of `source`, the character at `mark`
        highlighted (a parse error's position)."""
        if source is not self._lines.source:
            self._lines = self._new_lines(source, self._lines.width)
        shown = self._lines.length
        self._lines.truncate(length)  # the display cursor went back
        self._lines.extend_to(length)
        if Size(self._lines.width, len(self._lines)) != self.virtual_size:
            self._grow()
        elif self._lines.length != shown or mark != self.mark:
            self.refresh()
        self.mark = mark

    def _new_lines(self, source: TaggedText, width: int) -> WrappedLines:
        return WrappedLines(source, width, word_wrap=self.word_wrap, newlines=self.newlines)

    def line_starts(self) -> tuple[int, ...]:
        """Where each line starts in the source (for tests: a fresh wrap agrees)."""
        return tuple(self._lines.starts)

    def plain_lines(self) -> list[str]:
        """The lines as drawn (for tests)."""
        return [self.shown(self._lines.line_text(number)) for number in range(len(self._lines))]

    def _grow(self) -> None:
        """A new content size, following the end if the view was there."""
        set_content_size(self, Size(self._lines.width, len(self._lines)), follow=self._following)
        self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._following = new_value >= self.max_scroll_y

    # -- layout -------------------------------------------------------------
    def on_resize(self) -> None:
        width = max(1, self.scrollable_content_region.width)
        if width == self._lines.width:
            if self._following:  # a shorter view: its last line moved out of sight
                scroll_to_end(self)
            return
        length = self._lines.length
        self._lines = self._new_lines(self._lines.source, width)
        self._lines.extend_to(length)
        self._grow()

    def wrap_width(self) -> int:
        return self._lines.width

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
        if number >= len(self._lines):
            return Strip.blank(width, base)
        shown = self.shown
        segments = [Segment(shown(text), self._style(tag)) for text, tag in self._line_runs(number)]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    def _style(self, tag: int) -> Style:
        """Styles per tag, computed once per style change rather than per line."""
        style = self._styles.get(tag)
        if style is None:
            base = self.rich_style
            style = self._styles[tag] = base if tag == BASE_TAG else base + self._style_for(tag)
        return style

    def _line_runs(self, number: int) -> list[Run]:
        runs = self._lines.line_runs(number)
        mark = self.mark
        if mark is not None and self._lines.line_of(mark) == number:
            runs = _with_mark(runs, mark - self._lines.starts[number])
        return _pairs_rejoined(runs)

    def _style_for(self, tag: int) -> Style:
        return self.mark_style() if tag == MARK_TAG else self.tag_style(tag)


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


def _pairs_rejoined(runs: list[Run]) -> list[Run]:
    """A UTF-16 pair cut between two fragments (or deltas) drawn as the one
    character it encodes: the low half joins the run of its high half."""
    joined: list[Run] = []
    for text, tag in runs:
        if joined and text and is_low_surrogate(text[0]) and is_high_surrogate(joined[-1][0][-1]):
            joined[-1] = (joined[-1][0] + text[0], joined[-1][1])
            text = text[1:]
        if text:
            joined.append((text, tag))
    return [(rejoin_pairs(text), tag) for text, tag in joined]
