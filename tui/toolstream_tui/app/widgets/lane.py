"""One lane per tool call in view: the raw argument buffer growing (fragments
shaded alternately), a counter line, and once parsed the tree — or the parse
error with its position marked in the buffer. A lane draws its `LaneView` and
reads the buffer straight from the call's pieces in the core; it keeps nothing
of the stream but what it last drew."""

from __future__ import annotations

from bisect import bisect_left

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Vertical
from textual.content import Content
from textual.events import Click
from textual.message import Message
from textual.widgets import Static

from ...core.preview import ArgumentsPreview
from ...core.state import CallSlot
from ...core.visible import inert
from ...views.lanes import LaneView, lane_rows, messages_listed, more_messages_note
from ..wrapped import FragmentText, TaggedText, fit_cell
from .arguments_tree import ArgumentsTree
from .wrapped_view import WrappedView

FRAME_ROWS = 2  # the border's top (title) and bottom (state) rows
LEAST_ROWS = 5  # frame, two lines of content and the counter


class PieceLines(FragmentText):
    """A call's buffer of `path = value` lines, one a piece (Vertex AI): the newline
    ending each piece is kept, to break the line; any other is its picture, ␊."""

    def slice(self, start: int, end: int) -> str:
        text = self.pieces.slice(start, end)
        if "\n" not in text:
            return text
        ends, parts, at = self.pieces.ends, [], 0
        while (newline := text.find("\n", at)) >= 0:
            after = start + newline + 1
            number = bisect_left(ends, after)
            separator = number < len(ends) and ends[number] == after
            parts.append(text[at:newline] + ("\n" if separator else "\u240a"))
            at = newline + 1
        parts.append(text[at:])
        return "".join(parts)


class ArgumentBuffer(WrappedView):
    COMPONENT_CLASSES = {
        "argument-buffer--even",
        "argument-buffer--odd",
        "argument-buffer--mark",
    }
    DEFAULT_CSS = """
    ArgumentBuffer { background: $surface; }
    ArgumentBuffer > .argument-buffer--even { color: $text; }
    ArgumentBuffer > .argument-buffer--odd { color: $text; background: $primary 25%; }
    ArgumentBuffer > .argument-buffer--mark { background: $error; color: $text; text-style: bold; }
    """

    def __init__(self, fragments: FragmentText) -> None:
        super().__init__(fragments, shown=inert, newlines=False, id="raw")

    def show(self, source: TaggedText, length: int, mark: int | None = None) -> None:
        # Lines are wrapped again when the source changes: with its own rule for newlines.
        self.newlines = isinstance(source, PieceLines)
        super().show(source, length, mark)

    def tag_style(self, tag: int) -> Style:
        parity = "odd" if tag else "even"
        return self.get_component_rich_style(f"argument-buffer--{parity}")

    def mark_style(self) -> Style:
        return self.get_component_rich_style("argument-buffer--mark")


class CallLane(Vertical):
    """Title: index, function name, id. Subtitle: state and anomaly badge. The
    selected lane's frame is doubled, in its tone's colour."""

    # The frame's colour per tone, its subtitle's when the call has anomalies, and
    # a schema error's: each set on the lane itself, never as a class, which would
    # restyle the lane and all its parts (most of a frame's time when lanes flip).
    COMPONENT_CLASSES = {
        "call-lane--streaming",
        "call-lane--selected",
        "call-lane--parsed",
        "call-lane--failed",
        "call-lane--truncated",
        "call-lane--schema",
        "call-lane--anomalies",
    }
    DEFAULT_CSS = """
    CallLane {
        height: auto;
        border: round $secondary;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    CallLane > .call-lane--streaming { color: $secondary; }
    CallLane > .call-lane--selected { color: $accent; }
    CallLane > .call-lane--parsed { color: $success; }
    CallLane > .call-lane--failed { color: $error; }
    CallLane > .call-lane--truncated { color: $error; }
    CallLane > .call-lane--schema { color: $warning; }
    CallLane > .call-lane--anomalies { color: $warning; }
    CallLane > ArgumentBuffer, CallLane > ArgumentsTree { height: 1fr; }
    CallLane > .lane--error { color: $error; height: auto; }
    CallLane > .lane--error.-schema { color: $warning; }
    CallLane > .lane--counter, CallLane > .lane--fields { color: $text-muted; height: 1; }
    """

    class Clicked(Message):
        def __init__(self, index: int, double: bool) -> None:
            super().__init__()
            self.index = index
            self.double = double

    def __init__(self, slot: CallSlot) -> None:
        super().__init__()
        self.slot = slot
        self.view: LaneView | None = None
        self.fragments = FragmentText(slot.pieces)  # the call's arguments, read in the core
        self.piece_lines = PieceLines(slot.pieces)
        self.buffer = ArgumentBuffer(self.fragments)
        self.arguments_tree = ArgumentsTree(id="tree")
        self.preview_tree = ArgumentsTree(id="preview")
        self.message_line = Static(classes="lane--error")
        self.fields_line = Static(classes="lane--fields")
        self.counter = Static(classes="lane--counter")
        self.preview = ArgumentsPreview()
        self.selected = False
        self._tree_built = False
        self._messages_fitted: tuple[object, ...] = ()  # what the message line was fitted to
        self._wrapped: tuple[tuple[str, ...], int, list[list[str]]] = ((), 0, [])
        for part in (self.arguments_tree, self.preview_tree, self.message_line, self.fields_line):
            part.display = False

    @property
    def index(self) -> int:
        return self.slot.index

    def compose(self) -> ComposeResult:
        yield self.buffer
        yield self.arguments_tree
        yield self.preview_tree
        yield self.message_line
        yield self.fields_line
        yield self.counter

    def show_call(self, slot: CallSlot) -> None:
        """Another call in this lane (the window of lanes moved): nothing drawn of
        the old one stays. Cheaper than a new lane, which is composed and styled."""
        self.slot, self.view = slot, None
        self._messages_fitted = ()
        self.fragments = FragmentText(slot.pieces)
        self.piece_lines = PieceLines(slot.pieces)
        self.preview = ArgumentsPreview()
        self._tree_built = False

    # -- drawing the view ---------------------------------------------------------
    def show(self, view: LaneView, selected: bool = False, exact_preview: bool = False) -> None:
        """Draw `view`, framed as selected or not; `exact_preview`: re-parse a
        preview on any growth (stepping)."""
        old, self.view = self.view, view
        if old is None or old.tone != view.tone or selected != self.selected:
            self._frame(view.tone, selected)
        if view.mode == "raw":
            source = self.piece_lines if view.lines else self.fragments
            self.buffer.show(source, view.chars, view.mark)
        elif view.mode == "tree" and not self._tree_built:
            self._tree_built = True
            self.arguments_tree.show_value(self.slot.arguments)
        elif view.mode == "preview" and self._preview_due(view.chars, exact_preview):
            self.preview.update(self.slot.pieces.slice(0, view.chars), pieces=view.lines)
            self.preview_tree.show_preview(
                self.preview.value, self.preview.length, self.preview.error
            )
        if old == view:
            return
        if old is None or old.mode != view.mode:
            self.buffer.display = view.mode == "raw"
            self.arguments_tree.display = view.mode == "tree"
            self.preview_tree.display = view.mode == "preview"
        if old is None or (old.title, old.subtitle, old.anomalies) != (
            view.title,
            view.subtitle,
            view.anomalies,
        ):
            self.border_title = Text(view.title)
            self.border_subtitle = self._subtitle(view)
        if old is None or (old.fields, old.more_fields) != (view.fields, view.more_fields):
            self._show_fields(view)
        if old is None or (old.messages, old.tone, old.mode, old.fields) != (
            view.messages,
            view.tone,
            view.mode,
            view.fields,
        ):
            self._show_messages(view)
        if old is None or old.counter != view.counter:
            self.counter.update(Text(view.counter), layout=False)

    def _preview_due(self, chars: int, exact: bool) -> bool:
        """A preview of `chars` characters is worth parsing now; one of more than
        that (the display cursor went back) is parsed again at once."""
        if chars < self.preview.length:
            self.preview = ArgumentsPreview()
            return True
        return self.preview.due(chars, exact)

    def _frame(self, tone: str, selected: bool) -> None:
        """The frame in its tone's colour; the selected lane's is doubled, and
        while streaming it has the accent colour."""
        self.selected = selected
        name = "selected" if selected and tone == "streaming" else tone
        color = self.get_component_rich_style(f"call-lane--{name}").color
        self.styles.border = ("double" if selected else "round", Color.from_rich_color(color))

    def _subtitle(self, view: LaneView) -> Text:
        """The call's state, in the warning colour when it has anomalies."""
        if not view.anomalies:
            return Text(view.subtitle)
        color = self.get_component_rich_style("call-lane--anomalies").color
        return Text(view.subtitle, Style(color=color))

    def notify_style_update(self) -> None:
        """The colours set on the lane come from the stylesheet: a new theme has
        them set again."""
        super().notify_style_update()
        self.call_after_refresh(self._recolor)

    def _recolor(self) -> None:
        view = self.view
        if view is not None:
            self._frame(view.tone, self.selected)
            self.border_subtitle = self._subtitle(view)

    def _show_messages(self, view: LaneView) -> None:
        if not view.messages:
            self._messages_fitted = ()
            if self.message_line.display:  # an update lays the screen out
                self.message_line.display = False
            return
        self.message_line.set_class(view.tone == "schema", "-schema")  # restyles the line alone
        self._fit_messages(view)

    def on_resize(self) -> None:
        """The messages' rows and wrapping follow the lane's size."""
        if self.view is not None and self.view.messages:
            self._fit_messages(self.view)

    def _fit_messages(self, view: LaneView) -> None:
        """The messages in the rows the lane has for them (`lane_rows`): all of them
        when they fit, else whole ones and a last row saying how many more."""
        width = max(1, self.content_region.width)
        wrapped = self._wrapped_messages(view.messages, width)
        rows, fields = sum(map(len, wrapped)), bool(view.fields)
        if self.content_region.height:  # else not laid out yet: sized by what it wants
            content = self._content_rows(view)
            rows, fields = lane_rows(self.content_region.height, content, rows, fields)
        self.fields_line.display = fields  # unchanged, neither lays anything out
        self.message_line.display = bool(rows)
        fitted = (view.messages, view.tone, width, rows)
        if rows and fitted != self._messages_fitted:
            self._messages_fitted = fitted
            lines = message_lines(view, wrapped, rows, width)
            self.message_line.update(Text("\n".join(lines)))
            # Its rows set, not measured: refitted on a resize, the line could keep the
            # auto height of its text before, and hide the counter under it.
            self.message_line.styles.height = rows

    def _wrapped_messages(self, messages: tuple[str, ...], width: int) -> list[list[str]]:
        """Each message's lines as the message line wraps them at `width` (Textual's
        own wrapping: the rows counted are the rows drawn)."""
        if self._wrapped[:2] != (messages, width):
            lines = [
                [line.plain for line in Content(inert(message)).wrap(width)] for message in messages
            ]
            self._wrapped = (messages, width, lines)
        return self._wrapped[2]

    def _show_fields(self, view: LaneView) -> None:
        """When each top-level field's value was complete (seconds since the request);
        `…` while its value is still arriving."""
        if not view.fields:
            self.fields_line.display = False
            return
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("fields ", "bold")
        for number, (key, complete) in enumerate(view.fields):
            line.append(" · " if number else "")
            line.append(key)
            line.append(" …" if complete is None else f" {complete:.2f}s")
        if view.more_fields:
            line.append(f" · +{view.more_fields} more", "italic")
        self.fields_line.update(line, layout=False)
        self.fields_line.display = True

    # -- size ---------------------------------------------------------------------------
    def wrapped_to_fit(self) -> bool:
        """The raw buffer is wrapped at the width it has (not one it had before
        its last layout)."""
        if not self.buffer.display:
            return True
        return self.buffer.wrap_width() == max(1, self.buffer.scrollable_content_region.width)

    def rows_wanted(self) -> int:
        """The rows this lane needs to show all it has (its frame included)."""
        view = self.view
        if view is None:
            return LEAST_ROWS
        width = max(1, self.content_region.width)
        messages = sum(map(len, self._wrapped_messages(view.messages, width)))
        return FRAME_ROWS + max(1, self._content_rows(view)) + messages + bool(view.fields) + 1

    def _content_rows(self, view: LaneView) -> int:
        """The lines of the buffer or tree the lane shows."""
        if view.mode == "raw":
            return self.buffer.line_count
        tree = self.arguments_tree if view.mode == "tree" else self.preview_tree
        return tree.line_count()

    def on_click(self, event: Click) -> None:
        """A click selects the lane; a double click opens its fragment inspector."""
        self.post_message(self.Clicked(self.index, event.chain >= 2))


def message_lines(view: LaneView, wrapped: list[list[str]], rows: int, width: int) -> list[str]:
    """The lines listing `view`'s messages (`wrapped` at `width`) in `rows` rows."""
    heights = [len(lines) for lines in wrapped]
    whole, cut = messages_listed(heights, rows)
    lines = [inert(message) for message in view.messages[:whole]]
    if cut:  # the first rows of the next message, marked as cut
        *first, last = wrapped[whole][:cut]
        lines += [*first, fit_cell(last + "…", width, right=False).rstrip()]
    listed = whole + bool(cut)
    if listed < len(view.messages) and sum(heights[:whole]) + cut < rows:
        note = more_messages_note(listed, len(view.messages), view.tone)
        lines.append(fit_cell(note, width, right=False).rstrip())
    return lines
