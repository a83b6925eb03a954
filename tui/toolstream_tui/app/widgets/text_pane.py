"""The assistant's text as a typewriter: word-wrapped, following the end,
reasoning and refusals set apart. With a typing speed, text is revealed at a
steady rate however bursty the stream; otherwise as received."""

from __future__ import annotations

from collections import deque

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...core.events import Channel
from ...core.surrogates import PairJoiner
from ...core.visible import inert_text
from .wrapped_view import WrappedView

WAITING = "waiting for text…"
CHANNEL_TAGS = {Channel.CONTENT: 0, Channel.REASONING: 1, Channel.REFUSAL: 2}
LABEL_TAG = 3
CHANNEL_LABELS = {Channel.REASONING: "thinking ", Channel.REFUSAL: "refusal "}


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

    def __init__(self, typing_cps: float | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.typing_cps = typing_cps
        self._pending: deque[tuple[Channel, str]] = deque()
        self._joiners = {channel: PairJoiner() for channel in Channel}
        self._channel: Channel | None = None
        self._budget = 0.0
        self.revealed = 0
        self.border_title = Text("assistant")
        self.placeholder = Static(Text(WAITING), id="placeholder")
        self.typed = TypedText(word_wrap=True)

    def compose(self) -> ComposeResult:
        yield self.placeholder
        yield self.typed

    @property
    def caught_up(self) -> bool:
        return not self._pending

    def receive(self, channel: Channel, text: str) -> None:
        text = self._joiners[channel].feed(text)  # a UTF-16 pair cut between deltas
        if text:
            self._pending.append((channel, inert_text(text)))

    def reveal(self, seconds: float | None) -> None:
        """Show pending text: all of it, or `seconds` worth at the typing speed."""
        if self.typing_cps is None or seconds is None:
            budget = None
        else:
            self._budget = min(self._budget + seconds * self.typing_cps, 1e9)
            budget = int(self._budget)
        shown = 0
        while self._pending and (budget is None or shown < budget):
            channel, text = self._pending.popleft()
            if budget is not None and shown + len(text) > budget:
                self._pending.appendleft((channel, text[budget - shown :]))
                text = text[: budget - shown]
            self._show(channel, text)
            shown += len(text)
        if budget is not None:
            self._budget -= shown
            if not self._pending:
                self._budget = 0.0
        self.revealed += shown
        self.typed.flush()

    def _show(self, channel: Channel, text: str) -> None:
        if channel != self._channel:
            if self._channel is not None:
                self.typed.append("\n", CHANNEL_TAGS[channel])
            label = CHANNEL_LABELS.get(channel)
            if label:
                self.typed.append(label, LABEL_TAG)
                self.typed.append(" ", CHANNEL_TAGS[channel])
            self._channel = channel
            self.placeholder.display = False
        self.typed.append(text, CHANNEL_TAGS[channel])

    def mark_ended(self) -> None:
        for channel, joiner in self._joiners.items():
            held = joiner.flush()  # half a pair that never got its other half
            if held:
                self._pending.append((channel, inert_text(held)))
        if self._channel is None and not self._pending:
            self.placeholder.update(Text("no assistant text in this stream"))

    def clear(self) -> None:
        self._pending.clear()
        self._joiners = {channel: PairJoiner() for channel in Channel}
        self._channel = None
        self._budget = 0.0
        self.revealed = 0
        self.typed.clear()
        self.placeholder.update(Text(WAITING))
        self.placeholder.display = True
