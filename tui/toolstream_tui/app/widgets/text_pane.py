"""The assistant's text as a typewriter: word-wrapped, following the end,
reasoning and refusals set apart by a label. It draws the core's text pieces
at the display cursor; with a typing speed, text is revealed at a steady rate
however bursty the stream, otherwise as far as the cursor."""

from __future__ import annotations

from array import array
from bisect import bisect_right

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...core.events import Channel
from ...core.state import CHANNELS, StreamState
from ...core.visible import inert_wrapped
from .wrapped_view import WrappedView

WAITING = "waiting for text…"
NO_TEXT = "no assistant text in this stream"
CHANNEL_TAGS = {Channel.CONTENT: 0, Channel.REASONING: 1, Channel.REFUSAL: 2}
LABEL_TAG = 3
CHANNEL_LABELS = {Channel.REASONING: "thinking ", Channel.REFUSAL: "refusal "}


class ChannelText:
    """The stream's text as drawn: the core's pieces of every channel in order,
    with a line break and a label where the channel changes. Nothing is copied:
    runs of one channel map the drawn offsets onto the core's."""

    def __init__(self, state: StreamState) -> None:
        self.state = state
        self.pieces_read = 0
        self.length = 0  # drawn characters, labels included, of the pieces read
        self._channel: Channel | None = None
        self._starts = array("q")  # where each run is drawn, its label first
        self._text_starts = array("q")  # where each run's text is drawn
        self._offsets = array("q")  # each run's first character in the core's text
        self._channels = array("b")
        self._first_pieces = array("q")  # each run's first piece

    def read(self, count: int) -> None:
        """Take the core's first `count` text pieces (fewer than taken: the display
        cursor went back)."""
        if count < self.pieces_read:
            self._forget_from(count)
            return
        pieces, codes = self.state.text_pieces, self.state.text_channels
        for number in range(self.pieces_read, count):
            channel = CHANNELS[codes[number]]
            if channel is not self._channel:
                offset = pieces.start_of(number)
                if self._starts:  # the run before ends where this one begins
                    self.length = self._text_starts[-1] + offset - self._offsets[-1]
                self._start_run(channel, offset)
                self._first_pieces.append(number)
        if count > self.pieces_read:
            end = pieces.ends[count - 1]
            self.length = self._text_starts[-1] + end - self._offsets[-1]
            self.pieces_read = count

    def _forget_from(self, count: int) -> None:
        """Keep the first `count` pieces only: the runs that began later go, and
        the last run kept ends where piece `count - 1` does."""
        runs = bisect_right(self._first_pieces, count - 1) if count else 0
        for kept in (self._starts, self._text_starts, self._offsets, self._channels):
            del kept[runs:]
        del self._first_pieces[runs:]
        self.pieces_read = count
        if not runs:
            self.length, self._channel = 0, None
            return
        end = self.state.text_pieces.ends[count - 1]
        self.length = self._text_starts[-1] + end - self._offsets[-1]
        self._channel = CHANNELS[self._channels[-1]]

    def _start_run(self, channel: Channel, offset: int) -> None:
        self._starts.append(self.length)
        self.length += len(self._prefix(len(self._channels), channel))
        self._text_starts.append(self.length)
        self._offsets.append(offset)
        self._channels.append(CHANNEL_TAGS[channel])
        self._channel = channel

    @staticmethod
    def _prefix(run: int, channel: Channel) -> str:
        label = CHANNEL_LABELS.get(channel)
        return ("\n" if run else "") + (f"{label} " if label else "")

    def _run_at(self, offset: int) -> int:
        return bisect_right(self._starts, offset) - 1

    def slice(self, start: int, end: int) -> str:
        parts = []
        run = max(0, self._run_at(start))
        while start < end and run < len(self._starts):
            run_end = self._starts[run + 1] if run + 1 < len(self._starts) else self.length
            text_start = self._text_starts[run]
            if start < text_start:
                prefix = self._prefix(run, CHANNELS[self._channels[run]])
                run_start = self._starts[run]
                parts.append(prefix[start - run_start : min(end, text_start) - run_start])
                start = min(end, text_start)
            stop = min(end, run_end)
            if start < stop:
                shift = self._offsets[run] - text_start
                parts.append(self.state.text_pieces.slice(start + shift, stop + shift))
                start = stop
            run += 1
        return "".join(parts)

    def tag_ends(self, start: int, end: int) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for run in range(max(0, self._run_at(start)), len(self._starts)):
            for segment_end, tag in self._segments(run):
                if segment_end > start:
                    found.append((min(segment_end, end), tag))
                    start = segment_end
                if start >= end:
                    return found
        return found

    def _segments(self, run: int) -> list[tuple[int, int]]:
        """Run `run` as (where it ends, tag): its line break, label and text."""
        tag = self._channels[run]
        label = CHANNEL_LABELS.get(CHANNELS[tag])
        end = self._starts[run + 1] if run + 1 < len(self._starts) else self.length
        if not label:
            return [(end, tag)]
        label_start = self._starts[run] + (1 if run else 0)
        return [(label_start, tag), (label_start + len(label), LABEL_TAG), (end, tag)]


class TypedText(WrappedView):
    COMPONENT_CLASSES = {
        "typed-text--content",
        "typed-text--reasoning",
        "typed-text--refusal",
        "typed-text--label",
    }
    DEFAULT_CSS = """
    TypedText > .typed-text--content { color: $text; }
    TypedText > .typed-text--reasoning { color: $text-muted; text-style: italic; }
    TypedText > .typed-text--refusal { color: $error; text-style: bold; }
    TypedText > .typed-text--label { color: $background; background: $secondary; }
    """
    _NAMES = ("content", "reasoning", "refusal", "label")

    def tag_style(self, tag: int) -> Style:
        return self.get_component_rich_style(f"typed-text--{self._NAMES[tag]}")


class TextPane(Vertical):
    DEFAULT_CSS = """
    TextPane { border: round $primary; padding: 0 1; }
    TextPane > #placeholder { color: $text-muted; }
    """

    def __init__(self, state: StreamState, typing_cps: float | None, *, id: str | None = None):
        super().__init__(id=id)
        self.typing_cps = typing_cps
        self.text = ChannelText(state)
        self._budget = 0.0
        self.border_title = Text("assistant")
        self.placeholder = Static(Text(WAITING), id="placeholder")
        self._said = WAITING
        self.typed = TypedText(self.text, shown=inert_wrapped, word_wrap=True)

    def compose(self) -> ComposeResult:
        yield self.placeholder
        yield self.typed

    @property
    def revealed(self) -> int:
        return self.typed.shown_length

    @property
    def caught_up(self) -> bool:
        return self.revealed >= self.text.length

    def show(self, upto: int, seconds: float | None, over: bool) -> None:
        """The text up to wire event `upto`: all of it, or `seconds` worth at the
        typing speed. `over`: the stream has ended (say so if it had no text)."""
        self.text.read(self.text.state.text_pieces.count_upto(upto))
        target = self.text.length
        if self.typing_cps is not None and seconds is not None:
            self._budget = min(self._budget + seconds * self.typing_cps, 1e9)
            target = min(target, self.revealed + int(self._budget))
            self._budget -= target - self.revealed
            if target >= self.text.length:
                self._budget = 0.0
        if target != self.revealed:
            self.typed.show(self.text, target)
        self.placeholder.display = self.text.length == 0
        if self.text.length == 0:
            self._say(NO_TEXT if over else WAITING)

    def _say(self, words: str) -> None:
        # An update lays the screen out again: only when the words change, not per tick.
        if words != self._said:
            self._said = words
            self.placeholder.update(Text(words))

    @property
    def has_text(self) -> bool:
        return self.text.length > 0

    def show_state(self, state: StreamState) -> None:
        """Show another stream's text (a rerun), from its start."""
        self.text = ChannelText(state)
        self._budget = 0.0
        self.typed.show(self.text, 0)
        self._say(WAITING)
        self.placeholder.display = True
