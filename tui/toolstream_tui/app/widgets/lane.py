"""One lane per tool call: the raw argument buffer growing (fragments shaded
alternately), a counter line, and after the finish the parsed tree — or the
parse error with its position marked in the buffer."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import Click
from textual.message import Message
from textual.widgets import Static

from ...core.events import Anomaly, CallStarted
from ...core.fields import FieldClock, FieldTiming
from ...core.preview import ArgumentsPreview
from ...core.schema import SchemaError
from ...core.state import CallSlot
from ...core.visible import inert
from .arguments_tree import ArgumentsTree
from .wrapped_view import WrappedView

FIELDS_SHOWN = 12  # a line has room for a dozen at most; all are in the report


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

    def shown(self, text: str) -> str:
        return inert(text)

    def tag_style(self, tag: int) -> Style:
        parity = "odd" if tag else "even"
        return self.get_component_rich_style(f"argument-buffer--{parity}")

    def mark_style(self) -> Style:
        return self.get_component_rich_style("argument-buffer--mark")


class CallLane(Vertical, can_focus=True):
    """Title: index, function name, id. Subtitle: state and anomaly badge."""

    DEFAULT_CSS = """
    CallLane {
        height: 1fr;
        min-height: 7;
        border: round $secondary;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    CallLane:focus { border: round $accent; }
    CallLane.-parsed { border: round $success; }
    CallLane.-parsed:focus { border: double $success; }
    CallLane.-failed, CallLane.-truncated { border: round $error; }
    CallLane.-failed:focus, CallLane.-truncated:focus { border: double $error; }
    CallLane.-has-anomalies { border-subtitle-color: $warning; }
    CallLane.-schema { border: round $warning; }
    CallLane.-schema:focus { border: double $warning; }
    CallLane > ArgumentBuffer, CallLane > ArgumentsTree { height: 1fr; }
    CallLane > .lane--error { color: $error; height: auto; max-height: 3; }
    CallLane.-schema > .lane--error { color: $warning; max-height: 4; }
    CallLane > .lane--counter, CallLane > .lane--fields { color: $text-muted; height: 1; }
    """

    class Selected(Message):
        def __init__(self, lane: CallLane) -> None:
            super().__init__()
            self.lane = lane

    def __init__(self, started: CallStarted) -> None:
        super().__init__(id=f"lane-{started.index}")
        self.index = started.index
        self.call_id = started.call_id
        self.item_id = started.item_id
        self.name_ = started.name
        self.started = started.t
        self.latest = started.t
        self.fragments = 0
        self.chars = 0
        self.state = "streaming"
        self.anomalies: list[Anomaly] = []
        self.arguments: Any = None
        self.parsed = False
        self._tree_pending = False
        # Built here, not in compose, so fragments can arrive before the lane mounts.
        self.buffer = ArgumentBuffer(id="raw")
        self.arguments_tree = ArgumentsTree(id="tree")
        self.preview_tree = ArgumentsTree(id="preview")
        self.error_line = Static(classes="lane--error")
        self.error_line.display = False
        self.fields_line = Static(classes="lane--fields")
        self.fields_line.display = False
        self.counter = Static(classes="lane--counter")
        self.field_clock = FieldClock()
        self._fields_shown: tuple[list[FieldTiming], int] = ([], 0)
        self.preview = ArgumentsPreview()
        self._view = "raw"
        self._apply_view()

    def compose(self) -> ComposeResult:
        yield self.buffer
        yield self.arguments_tree
        yield self.preview_tree
        yield self.error_line
        yield self.fields_line
        yield self.counter

    def on_mount(self) -> None:
        self.refresh_counter()

    # -- updates from the stream -----------------------------------------------

    def identify(self, call_id: str | None, name: str | None) -> None:
        self.call_id, self.name_ = call_id, name
        self._refresh_titles()

    def sync(self, slot: CallSlot, upto_event: int, exact_preview: bool = False) -> None:
        """Show the call's fragments that arrived up to wire event `upto_event` (the
        last one the display has shown), in one step however many there are; and
        build the parsed tree if it is due (64 lanes flipping at once build only
        the trees in view), or the preview if it is on and due."""
        if self._tree_pending:
            self._tree_pending = False
            self.arguments_tree.show_value(self.arguments)
        self.take_fragments(slot, upto_event)
        if self.view == "preview" and self.preview.due(self.chars, exact_preview):
            self.preview.update("".join(slot.fragments[: self.fragments]))
            self.preview_tree.show_preview(
                self.preview.value, self.preview.length, self.preview.error
            )

    def take_fragments(self, slot: CallSlot, upto_event: int) -> None:
        """The call's fragments that arrived up to wire event `upto_event`."""
        start = self.fragments
        if start == len(slot.fragments):
            return
        end = bisect_right(slot.fragment_events, upto_event, lo=start)
        if end == start:
            return
        fragments = slot.fragments[start:end]
        parities = [number % 2 for number in range(start + 1, end + 1)]  # for the shading
        self.buffer.extend(list(zip(fragments, parities, strict=True)))
        self.fragments = end
        self.chars += sum(map(len, fragments))
        self.latest = slot.fragment_times[end - 1]
        self.field_clock.add(fragments, slot.fragment_times[start:end])
        self._refresh_fields()
        self.flush()

    def show_parsed(self, arguments: Any, error: str | None, position: int | None) -> None:
        if error is None:
            self.parsed = True
            self.arguments = arguments
            self.state = "parsed"
            self.set_class(True, "-parsed")
            self._tree_pending = True  # built when the lane is next in view (sync)
            self.view = "tree"
        else:
            self.state = "invalid JSON"
            self.view = "raw"
            self.set_class(True, "-failed")
            self._show_error(error)
            self.buffer.set_mark(position)
        self._refresh_titles()

    def show_schema_errors(self, errors: list[SchemaError]) -> None:
        """The arguments parsed, but the tool's declared schema rejects them."""
        self.state = plural(len(errors), "schema error")
        self.set_class(True, "-schema")
        self._show_error(*(f"{error.path}: {error.message}" for error in errors))
        self._refresh_titles()

    def mark_ended(self, status: str, error: str | None) -> None:
        """The stream ended before this call was parsed."""
        if self.parsed or self.state == "invalid JSON":
            return
        self.state = status
        self.view = "raw"
        self.set_class(True, "-truncated")
        if error:
            self._show_error(error)
        self._refresh_titles()

    def add_anomaly(self, anomaly: Anomaly) -> None:
        self.anomalies.append(anomaly)
        self.set_class(True, "-has-anomalies")
        self._refresh_titles()

    @property
    def show_tree(self) -> bool:
        return self.view == "tree"

    @show_tree.setter
    def show_tree(self, show_tree: bool) -> None:
        if self.parsed:
            self.view = "tree" if show_tree else "raw"

    def toggle_view(self) -> None:
        if self.parsed:
            self.show_tree = not self.show_tree

    def set_previewing(self, previewing: bool) -> None:
        """While the call streams: the preview tree, or the raw buffer."""
        if self.state == "streaming":
            self.view = "preview" if previewing else "raw"

    @property
    def view(self) -> str:
        return self._view

    @view.setter
    def view(self, view: str) -> None:
        self._view = view
        self._apply_view()

    def _apply_view(self) -> None:
        """Show one of raw buffer, parsed tree or preview; works before mounting too."""
        self.buffer.display = self.view == "raw"
        self.arguments_tree.display = self.view == "tree"
        self.preview_tree.display = self.view == "preview"
        self.buffer.flush()
        self._refresh_titles()

    def flush(self) -> None:
        self.buffer.flush()
        self.refresh_counter()

    # -- rendering --------------------------------------------------------------
    def refresh_counter(self) -> None:
        elapsed = max(0.0, self.latest - self.started)
        self.counter.update(
            Text(f"{plural(self.fragments, 'fragment')} · {self.chars} chars · {elapsed:.2f}s"),
            layout=False,
        )

    def _refresh_fields(self) -> None:
        """When each top-level field's value was complete (seconds since the request);
        `…` while its value is still arriving."""
        timings = self.field_clock.timings(FIELDS_SHOWN)
        shown = (timings, self.field_clock.count)
        if not timings or shown == self._fields_shown:
            return  # unchanged: redrawing it every tick costs a frame's render
        self._fields_shown = shown
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("fields ", "bold")
        for number, field in enumerate(timings):
            line.append(" · " if number else "")
            line.append(inert(field.key))
            line.append(" …" if field.complete is None else f" {field.complete:.2f}s")
        if self.field_clock.count > FIELDS_SHOWN:
            line.append(f" · +{self.field_clock.count - FIELDS_SHOWN} more", "italic")
        self.fields_line.update(line, layout=False)
        self.fields_line.display = True

    def _show_error(self, *lines: str) -> None:
        self.error_line.update(Text("\n".join(map(inert, lines))))
        self.error_line.display = True

    def _refresh_titles(self) -> None:
        name = inert(self.name_) if self.name_ else "?"
        call_id = inert(self.call_id) if self.call_id else "no id"
        item = f" · {inert(self.item_id)}" if self.item_id else ""
        self.border_title = Text(f"#{self.index} {name} · {call_id}{item}")
        badge = f" · ⚠ {len(self.anomalies)}" if self.anomalies else ""
        preview = " · preview" if self.view == "preview" else ""
        self.border_subtitle = Text(f"{self.state}{preview}{badge}")

    def on_click(self, event: Click) -> None:
        """A click selects the lane; a double click opens its fragment inspector."""
        self.focus()
        if event.chain >= 2:
            self.post_message(self.Selected(self))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"
