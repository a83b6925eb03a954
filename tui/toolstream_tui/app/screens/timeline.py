"""The timeline: when the stream's reads and each call's fragments arrived, on
one time axis, with the milestones, the silences over the stall threshold and
when each top-level argument field became known. Times are seconds since the
request was sent."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widget import Widget

from ...core.fields import FieldTiming
from ...core.timing import CallTiming, Gap, StreamTiming, TextRate, gaps
from ...core.visible import inert
from ...views.scrub import ScrubView
from ..widgets.key_footer import KeyFooter
from ..widgets.scrub_bar import ScrubBar

FOLLOW_SECONDS = 1.0
BLOCKS = "▁▂▃▄▅▆▇█"
LABEL_WIDTH = 18
MIN_STRIP_WIDTH = 10
TICK_SPACING = 9  # columns between ticks at least, so labels like "12.5s" never touch
MAX_FIELDS = 16  # per call: an object with thousands of keys must not flood the screen
MAX_KEY_WIDTH = 24
STREAM_STYLE = "bright_blue"
CALL_STYLE = "green"
SILENCE_STYLE = "bold red"
BEFORE_STYLE = "dim"
NAMED_STYLE = "bold yellow"
FINISH_STYLE = "bold magenta"
SILENCE_MARK, BEFORE_MARK, MARKER = "·", "─", "┃"


@dataclass(frozen=True, slots=True)
class TimelineFigures:
    """What the timeline draws: the stream's timing, and the arrival times of
    every call's fragments (by call index) and of every read. The times are the
    core's own arrays, not copies: they may grow after the figures are taken,
    and only those up to the axis' end (the last time known then) are drawn."""

    timing: StreamTiming
    arrivals: Mapping[int, Sequence[float]]
    reads: Sequence[float]
    end: float | None = None  # the axis' end, when it is not the last time known (a cut)


def milestones(timing: StreamTiming) -> list[tuple[str, float | None]]:
    return [
        ("response head", timing.response),
        ("first byte", timing.first_byte),
        ("first text", timing.first_text),
        ("first tool name", timing.first_tool_name),
        ("first argument byte", timing.first_argument_byte),
        ("first usable field", timing.first_usable_field),
        ("finish", timing.finish),
        ("last byte", timing.last_byte),
    ]


# -- bins: pure, linear in the number of times ------------------------------------


def bin_index(t: float, start: float, end: float, width: int) -> int | None:
    """The column of time `t` on an axis of `width` columns from `start` to `end`
    (`end` itself falls in the last column); None outside the axis."""
    if width <= 0 or not start <= t <= end:
        return None
    span = end - start
    if span <= 0:
        return 0
    return min(int((t - start) / span * width), width - 1)


def bin_counts(times: Iterable[float], start: float, end: float, width: int) -> list[int]:
    """How many of `times` fall in each of `width` equal bins of [start, end]."""
    counts = [0] * max(width, 0)
    if width <= 0 or end < start:
        return counts
    # Divide, not multiply by width / span: that overflows when span is tiny.
    span = (end - start) or 1.0
    last = width - 1
    for t in times:
        if start <= t <= end:
            counts[min(int((t - start) / span * width), last)] += 1
    return counts


def sparkline(counts: Sequence[int]) -> str:
    """One block per count, scaled by the busiest; a space where the count is 0."""
    peak = max(counts, default=0)
    if peak <= 0:
        return " " * len(counts)
    return "".join(
        BLOCKS[math.ceil(len(BLOCKS) * count / peak) - 1] if count > 0 else " " for count in counts
    )


def silent_bins(silences: Iterable[Gap], start: float, end: float, width: int) -> list[bool]:
    """The bins each silence overlaps. Silences over the threshold are at least
    that long and do not overlap, so the bins marked add up to about `width`."""
    silent = [False] * max(width, 0)
    for gap in silences:
        first = bin_index(max(gap.start, start), start, end, width)
        last = bin_index(min(gap.start + gap.seconds, end), start, end, width)
        if first is not None and last is not None:
            silent[first : last + 1] = [True] * (last + 1 - first)
    return silent


def axis_end(figures: TimelineFigures) -> float:
    """The last time known (1 s when nothing is known or everything came at 0), or
    the end the figures were given."""
    if figures.end is not None:
        return figures.end
    known = [t for _, t in milestones(figures.timing)]
    known.append(max(figures.reads, default=None))
    known.extend(max(times, default=None) for times in figures.arrivals.values())
    for call in figures.timing.calls:
        known.extend((call.started, call.named))
    latest = max((t for t in known if t is not None), default=0.0)
    return latest if latest > 0 else 1.0


def tick_step(span: float, width: int, spacing: int = TICK_SPACING) -> float:
    """The smallest step of 1, 2 or 5 times a power of ten that leaves at least
    `spacing` columns between ticks."""
    least = span * spacing / max(width, 1)
    if least <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(least))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= least * (1 - 1e-9))


def axis_rows(end: float, width: int) -> tuple[str, str]:
    """The tick labels and the tick marks of an axis from 0 to `end`."""
    step = tick_step(end, width)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    labels, marks = [" "] * width, ["─"] * width
    free = 0
    for number in range(int(end / step + 1e-9) + 1):
        t = number * step
        column = bin_index(min(t, end), 0.0, end, width)
        if column is None:
            continue
        marks[column] = "┬"
        label = f"{t:.{decimals}f}s"
        if column >= free and column + len(label) <= width:
            labels[column : column + len(label)] = label
            free = column + len(label) + 1
    return "".join(labels), "".join(marks)


def seconds(t: float | None) -> str:
    return "—" if t is None else f"{t:.3f} s"


# -- drawing ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArrivalStrip:
    """One row of the chart: what arrived when, and what to mark."""

    label: Text
    times: Sequence[float]
    style: str
    begins: float | None  # bins before this are drawn as "not yet"
    silences: Sequence[Gap]
    marker: float | None = None
    marker_style: str = ""


def draw_strip(strip: ArrivalStrip, end: float, width: int) -> Text:
    """The strip's cells: arrivals as a sparkline (a marker's bin in its style),
    then the marker, silences and the time before the strip began."""
    counts = bin_counts(strip.times, 0.0, end, width)
    blocks = sparkline(counts)
    silent = silent_bins(strip.silences, 0.0, end, width)
    marked = None if strip.marker is None else bin_index(strip.marker, 0.0, end, width)
    begins = 0 if strip.begins is None else bin_index(strip.begins, 0.0, end, width) or 0
    cells: list[tuple[str, str]] = []
    for column, count in enumerate(counts):
        if count:
            style = strip.marker_style if column == marked else strip.style
            cells.append((blocks[column], style))
        elif column == marked:
            cells.append((MARKER, strip.marker_style))
        elif silent[column]:
            cells.append((SILENCE_MARK, SILENCE_STYLE))
        elif column < begins:
            cells.append((BEFORE_MARK, BEFORE_STYLE))
        else:
            cells.append((" ", ""))
    text = Text(no_wrap=True, overflow="crop")
    for style, run in groupby(cells, key=lambda cell: cell[1]):
        text.append("".join(char for char, _ in run), style)
    return text


def strip_row(strip: ArrivalStrip, end: float, width: int) -> Text:
    label = strip.label.copy()
    label.truncate(LABEL_WIDTH, overflow="ellipsis", pad=True)
    return Text.assemble(label, " ", draw_strip(strip, end, width - LABEL_WIDTH - 1))


def flow(items: Sequence[Text], width: int, indent: int = 0, separator: str = "   ") -> list[Text]:
    """The items on as few lines as fit in `width`, each line indented."""
    lines: list[Text] = []
    line = Text(" " * indent)
    for item in items:
        if line.cell_len > indent and line.cell_len + len(separator) + item.cell_len > width:
            lines.append(line)
            line = Text(" " * indent)
        if line.cell_len > indent:
            line.append(separator)
        line.append_text(item)
    if line.cell_len > indent:
        lines.append(line)
    return lines


def columns(items: Sequence[Text], width: int, gutter: int = 3) -> list[Text]:
    """The items in as many aligned columns as fit, read down each column."""
    split = fit_columns(items, width, gutter)
    widths = [max(item.cell_len for item in column) for column in split]
    lines = []
    for row in range(len(split[0]) if split else 0):
        line = Text()
        for column, column_width in zip(split, widths, strict=True):
            if row < len(column):
                cell = column[row].copy()
                cell.pad_right(column_width - cell.cell_len + gutter)
                line.append_text(cell)
        line.rstrip()
        lines.append(line)
    return lines


def fit_columns(items: Sequence[Text], width: int, gutter: int) -> list[Sequence[Text]]:
    """The items cut into the most columns whose widths fit in `width` (at least one)."""
    split: list[Sequence[Text]] = [items] if items else []
    for count in range(2, len(items) + 1):
        height = math.ceil(len(items) / count)
        attempt = [items[n : n + height] for n in range(0, len(items), height)]
        widths = [max(item.cell_len for item in column) for column in attempt]
        if sum(widths) + gutter * (len(attempt) - 1) > width:
            break
        split = attempt
    return split


def labelled(label: str, value: str) -> Text:
    return Text.assemble((label, "dim"), " ", (value, "bold"))


def milestone_lines(timing: StreamTiming, width: int) -> list[Text]:
    items = [labelled(label, seconds(t)) for label, t in milestones(timing)]
    items[0] = Text.assemble(("request → ", "dim"), items[0])
    return columns(items, width)


def text_summary(text: TextRate) -> Text:
    deltas, spent, rate = text.deltas, text.seconds, text.deltas_per_second
    if not deltas:
        return labelled("text", "none")
    summary = f"{deltas} delta{'s' if deltas != 1 else ''}"
    if spent is not None and rate is not None:
        summary += f" in {spent:.3f} s ≈ {rate:g} tokens/s"
    return labelled("text", summary)


def stall_summary(timing: StreamTiming) -> Text:
    listed, total = timing.stalls, timing.stalls_total
    summary = f"{total} over {timing.stall_threshold:g} s"
    if total > len(listed):
        summary += f" ({len(listed)} listed)"
    if listed:
        longest = max(listed, key=lambda stall: stall.seconds)
        summary += f", longest {longest.seconds:.3f} s from {longest.start:.3f} s"
    text = labelled("stalls", summary)
    if total:
        text.stylize("red", len("stalls "))
    return text


def legend(threshold: float, end: float, strip_width: int) -> list[Text]:
    def key(mark: str, style: str, meaning: str) -> Text:
        return Text.assemble((mark, style), (f" {meaning}", "dim"))

    return [
        key("▁▃█", STREAM_STYLE, "arrivals (scaled per row)"),
        key(SILENCE_MARK, SILENCE_STYLE, f"silence over {threshold:g} s"),
        key(BEFORE_MARK, BEFORE_STYLE, "not started"),
        key(MARKER, NAMED_STYLE, "named"),
        key(MARKER, FINISH_STYLE, "finish"),
        Text(f"column ≈ {end / max(strip_width, 1):.2g} s", "dim"),
    ]


def call_label(call: CallTiming) -> Text:
    name = call.name
    return Text.assemble(
        (f"#{call.index} ", "bold"), (inert(name), "bold") if name else ("?", "dim")
    )


def call_details(call: CallTiming) -> list[Text]:
    count, gap_count = call.fragments, call.gaps_total
    fragments = Text.assemble(("fragments ", "dim"), (str(count), "bold"))
    if count:
        first, last = seconds(call.first_fragment), seconds(call.last_fragment)
        fragments.append_text(Text.assemble((" from ", "dim"), (first, "bold")))
        fragments.append_text(Text.assemble((" to ", "dim"), (last, "bold")))
    return [
        labelled("started", seconds(call.started)),
        fragments,
        Text(f"{gap_count} gap{'s' if gap_count != 1 else ''}", "red" if gap_count else "dim"),
    ]


def field_times(call: CallTiming) -> list[Text]:
    fields = call.fields
    items = [field_time(field) for field in fields[:MAX_FIELDS]]
    if len(fields) > MAX_FIELDS:
        items.append(Text(f"+{len(fields) - MAX_FIELDS} more fields", "dim"))
    return items


def field_time(field: FieldTiming) -> Text:
    key = Text(inert(field.key))
    key.truncate(MAX_KEY_WIDTH, overflow="ellipsis")
    named, complete = field.named, field.complete
    when = f"{named:.2f}→"
    when += "…" if complete is None else f"{complete:.2f} s"
    return Text.assemble(key, " ", (when, "dim"))


class Chart(Widget):
    """Lines drawn for the width the widget gets, drawn again when it changes."""

    def __init__(self, draw: Callable[[int], list[Text]], *, classes: str = "") -> None:
        super().__init__(classes=classes)
        self._draw = draw
        self._drawn: tuple[int, list[Text]] | None = None

    def redraw(self) -> None:
        self._drawn = None
        self.refresh(layout=True)

    def lines(self, width: int) -> list[Text]:
        if self._drawn is None or self._drawn[0] != width:
            self._drawn = (width, self._draw(width))
        return self._drawn[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        return Text("\n", no_wrap=True, overflow="crop").join(self.lines(self.content_size.width))


class TimelineScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    TimelineScreen { align: center middle; }
    TimelineScreen > Vertical {
        width: 95%; height: 90%; border: round $accent; background: $surface; padding: 0 1;
    }
    TimelineScreen Chart { height: auto; }
    TimelineScreen .fixed { padding-right: 1; }
    TimelineScreen .summary { margin-bottom: 1; }
    TimelineScreen #timeline-scrub { padding: 0 1 0 19; background: $surface; }
    TimelineScreen VerticalScroll {
        height: 1fr; scrollbar-gutter: stable; scrollbar-size-vertical: 1;
    }
    """
    BINDINGS = [Binding("escape,q,w", "dismiss", "Close", id="timeline.close")]

    def __init__(
        self,
        figures: Callable[[], TimelineFigures],
        ended: Callable[[], bool],
        *,
        scrub: Callable[[int, float], ScrubView] | None = None,
        move: Callable[[int], None] | None = None,
    ) -> None:
        """`figures`: the stream's timing and arrival times as of now (at the display
        cursor); `ended`: whether the stream is over (until then the screen follows
        it, redrawn every FOLLOW_SECONDS: each redraw reads every arrival);
        `scrub(width, end)`: a scrub bar under the axis, and `move(cursor)` where a
        click or a drag on it moves the display cursor."""
        super().__init__()
        self._figures = figures
        self._ended = ended
        self._scrub = scrub
        self._move = move
        self.scrub_bar: ScrubBar | None = None
        if scrub is not None:
            self.scrub_bar = ScrubBar(lambda width: scrub(width, self.end), id="timeline-scrub")
        self._final = ended()
        self._follower: Timer | None = None
        self.take(figures())

    def take(self, figures: TimelineFigures) -> None:
        self.figures = figures
        self.end = axis_end(figures)
        self.threshold = figures.timing.stall_threshold
        # Silences do not depend on the width: found once, not on every resize.
        self.stream_strip = self.make_stream_strip()
        self.call_strips = [self.make_call_strip(call) for call in self.figures.timing.calls]

    def follow(self) -> None:
        """Newer figures of a stream still arriving, drawn in place; once more after
        it has ended, then no more."""
        self._final = self._ended()
        self.take(self._figures())
        for chart in self.query(Chart):
            chart.redraw()
        if self._final and self._follower is not None:
            self._follower.stop()

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = Text("timeline")
            yield Chart(self.summary_lines, classes="fixed summary")
            yield Chart(self.axis_lines, classes="fixed")
            if self.scrub_bar is not None:
                yield self.scrub_bar
            with VerticalScroll():
                yield Chart(self.call_lines)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
        self._follower = None if self._final else self.set_interval(FOLLOW_SECONDS, self.follow)

    def strip_width(self, width: int) -> int:
        return max(width - LABEL_WIDTH - 1, MIN_STRIP_WIDTH)

    def summary_lines(self, width: int) -> list[Text]:
        timing = self.figures.timing
        lines = milestone_lines(timing, width)
        lines += flow([text_summary(timing.text), stall_summary(timing)], width)
        return lines + flow(legend(self.threshold, self.end, self.strip_width(width)), width)

    def axis_lines(self, width: int) -> list[Text]:
        strip_width = self.strip_width(width)
        labels, marks = axis_rows(self.end, strip_width)
        return [
            Text("since the request".ljust(LABEL_WIDTH + 1) + labels, "dim"),
            Text(" " * (LABEL_WIDTH + 1) + marks, "dim"),
            strip_row(self.stream_strip, self.end, LABEL_WIDTH + 1 + strip_width),
        ]

    def call_lines(self, width: int) -> list[Text]:
        strip_width = self.strip_width(width)
        indent = LABEL_WIDTH + 1
        lines: list[Text] = []
        for call, strip in zip(self.figures.timing.calls, self.call_strips, strict=True):
            lines.append(strip_row(strip, self.end, indent + strip_width))
            lines += flow(call_details(call), indent + strip_width, indent, " · ")
            lines += flow(field_times(call), indent + strip_width, indent)
        return lines or [Text("no tool calls in this stream", "dim")]

    def make_stream_strip(self) -> ArrivalStrip:
        reads, timing = self.figures.reads, self.figures.timing
        return ArrivalStrip(
            label=Text("stream (reads)", "bold"),
            times=reads,
            style=STREAM_STYLE,
            begins=timing.response,
            silences=gaps(reads, self.threshold, timing.response),
            marker=timing.finish,
            marker_style=FINISH_STYLE,
        )

    def make_call_strip(self, call: CallTiming) -> ArrivalStrip:
        times = self.figures.arrivals.get(call.index, ())
        return ArrivalStrip(
            label=call_label(call),
            times=times,
            style=CALL_STYLE,
            begins=call.started,
            silences=gaps(times, self.threshold, call.started),
            marker=call.named,
            marker_style=NAMED_STYLE,
        )

    def on_scrub_bar_scrubbed(self, message: ScrubBar.Scrubbed) -> None:
        """The display cursor moves there, and the timeline shows the stream as it
        stood then."""
        message.stop()
        if self._move is None:
            return
        self._move(message.cursor)
        self.take(self._figures())
        for chart in self.query(Chart):
            chart.redraw()
        if self.scrub_bar is not None:
            self.scrub_bar.redraw()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
