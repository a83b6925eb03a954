"""The diff of two recordings on screen: a header line, the stream-wide
differences, then one bordered panel per tool-call index. Everything shown
comes from the JSON-ready dict of `core.diff.diff_states`; model text is made
inert before it is drawn."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from ...core.diff import first_difference
from ...core.exit_codes import EXIT_TROUBLE
from ...core.visible import inert
from ...views.words import plural
from ..signals import quit_on_signals
from ..widgets.key_footer import KeyFooter

VALUE_CHARS = 60  # a value longer than this is cut, with its full length said
OFFSETS_SHOWN = 8  # one-sided boundary offsets listed before "…"
LABEL_WIDTH = 12  # the label column, its last cell always a space
ERROR_CHARS = 200  # of an error message shown; a longer one is shown around where they part
ERROR_CONTEXT = 40  # characters kept before where two long messages part

Lane = dict[str, Any]
SIDE_STYLE = {"a": "red", "b": "green"}
STREAM_FACT_LABELS = {
    "status": "status",
    "http_status": "HTTP status",
    "dialect": "dialect",
    "finish_reason": "finish",
}
CHANGE_MARK = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


# -- text building (no widgets) -------------------------------------------------------


def short_value(value: Any) -> str:
    """A JSON value on one line, inert, cut to VALUE_CHARS."""
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (RecursionError, TypeError, ValueError):
        shown = repr(value)
    shown = inert(shown)
    if len(shown) > VALUE_CHARS:
        return f"{shown[:VALUE_CHARS]}… ({len(shown)} chars)"
    return shown


def labelled(label: str) -> Text:
    return Text(f"{label:<{LABEL_WIDTH - 1}} ", "dim")


def a_to_b(a: Any, b: Any) -> Text:
    line = Text(short_value(a), SIDE_STYLE["a"])
    line.append(" → ", "dim")
    line.append(short_value(b), SIDE_STYLE["b"])
    return line


def header_text(diff: dict[str, Any]) -> Text:
    sources = diff["sources"]
    line = Text()
    line.append(inert(sources["a"]), "bold red")
    line.append("  vs  ", "dim")
    line.append(inert(sources["b"]), "bold green")
    line.append("  ·  ")
    if diff["identical"]:
        line.append("identical", "bold green")
    else:
        line.append("different", "bold yellow")
        line.append(f" ({', '.join(differing_parts(diff))})", "yellow")
    return line


def stream_differs(diff: dict[str, Any]) -> bool:
    anomalies = diff["anomalies"]
    return (
        any(fact in diff for fact in STREAM_FACT_LABELS)
        or "error" in diff
        or not diff["text"]["equal"]
        or not diff.get("body", {"equal": True})["equal"]
        or bool(anomalies["only_a"] or anomalies["only_b"])
    )


def differing_parts(diff: dict[str, Any]) -> list[str]:
    lanes = diff["lanes"]
    differing = sum(1 for lane in lanes if not lane["identical"])
    parts = ["stream"] if stream_differs(diff) else []
    if differing:
        parts.append(f"{differing} of {plural(len(lanes), 'lane')}")
    return parts


def offsets_text(offsets: list[int], total: int) -> str:
    shown = ", ".join(str(offset) for offset in offsets[:OFFSETS_SHOWN])
    return shown + (", …" if total > OFFSETS_SHOWN else "")


def boundary_lines(lane: Lane) -> list[Text]:
    counts = lane["fragments"]
    line = labelled("fragments")
    line.append(f"A {counts['a']} · B {counts['b']} · ")
    if lane["same_boundaries"]:
        line.append("same boundaries")
        return [line]
    line.append("cut differently (not a difference)", "dim")
    lines = [line]
    for side in ("a", "b"):
        total = lane[f"boundaries_only_{side}_total"]
        if total:
            cuts = labelled(f"  only in {side.upper()}")
            cuts.append(f"{plural(total, 'cut')} at ", "dim")
            cuts.append(offsets_text(lane[f"boundaries_only_{side}"], total), SIDE_STYLE[side])
            lines.append(cuts)
    return lines


def change_line(entry: dict[str, Any]) -> Text:
    if entry["change"] == "more":
        return Text(f"  … and {entry['count']} more differences", "dim")
    mark, style = CHANGE_MARK[entry["change"]]
    line = Text(f"{mark} ", style)
    line.append(inert(entry["path"]), "bold")
    line.append("  ")
    if entry["change"] == "changed":
        line.append_text(a_to_b(entry["a"], entry["b"]))
    else:
        side = "a" if entry["change"] == "removed" else "b"
        line.append(short_value(entry[side]), SIDE_STYLE[side])
    return line


def argument_lines(lane: Lane) -> list[Text]:
    line = labelled("arguments")
    if lane["arguments"] is None:
        line.append("not both parsed", "yellow")
        errors = lane["parse_errors"]
        return [line, *(_error_line(side, errors[side]) for side in ("a", "b"))]
    if not lane["arguments"]:
        raw = "same raw buffer" if lane["raw_equal"] else _raw_note(lane)
        line.append(f"equal ({raw})", "green")
        return [line]
    line.append(f"differ (raw buffers from char {lane['raw_first_difference']})", "yellow")
    return [line, *(change_line(entry) for entry in lane["arguments"])]


def _raw_note(lane: Lane) -> str:
    return f"raw buffers differ from char {lane['raw_first_difference']}"


def _error_line(side: str, error: str | None) -> Text:
    line = labelled(f"  {side.upper()}")
    line.append(inert(error) if error else "parsed", "red" if error else "green")
    return line


def identity_lines(lane: Lane) -> list[Text]:
    lines = []
    if "names" in lane:
        line = labelled("name")
        line.append_text(a_to_b(lane["names"]["a"], lane["names"]["b"]))
        lines.append(line)
    if "ids" in lane:
        line = labelled("id")
        line.append_text(a_to_b(lane["ids"]["a"], lane["ids"]["b"]))
        line.append("  (not a difference)", "dim")
        lines.append(line)
    return lines


def anomaly_lines(anomalies: dict[str, list[dict[str, Any]]]) -> list[Text]:
    lines = []
    for side in ("a", "b"):
        for anomaly in anomalies[f"only_{side}"]:
            line = Text(f"⚠ only in {side.upper()}  ", "yellow")
            line.append(inert(anomaly["kind"]), "bold yellow")
            line.append(f"  {inert(anomaly['detail'])}", "dim")
            lines.append(line)
    return lines


def one_sided_lines(lane: Lane) -> list[Text]:
    side = lane["only_in"]
    line = Text(f"only in {side.upper()}", "bold red")
    fragments = plural(lane["fragments"], "fragment")
    line.append(f"  {fragments}, {plural(lane['arguments_raw_length'], 'char')}", "dim")
    arguments = labelled("arguments")
    if lane["error"]:
        arguments.append(inert(lane["error"]), "red")
    else:
        arguments.append(short_value(lane["arguments"]), SIDE_STYLE[side])
    return [line, arguments, *anomaly_lines(lane["anomalies"])]


def lane_lines(lane: Lane) -> list[Text]:
    if "only_in" in lane:
        return one_sided_lines(lane)
    return [
        *identity_lines(lane),
        *boundary_lines(lane),
        *argument_lines(lane),
        *anomaly_lines(lane["anomalies"]),
    ]


def lane_title(lane: Lane) -> Text:
    title = Text(f"#{lane['index']} ", "bold")
    title.append(inert(lane["name"] or "(no name)"), "bold")
    if "names" in lane:
        title.append(f" / {inert(lane['names']['b'] or '(no name)')}", "bold")
    return title


def lane_subtitle(lane: Lane) -> str:
    if "only_in" in lane:
        return f"only in {lane['only_in'].upper()}"
    return "identical" if lane["identical"] else "differs"


def stream_lines(diff: dict[str, Any]) -> list[Text]:
    lines = []
    for fact, label in STREAM_FACT_LABELS.items():
        if fact in diff:
            line = labelled(label)
            line.append_text(a_to_b(diff[fact]["a"], diff[fact]["b"]))
            lines.append(line)
    if "error" in diff:
        lines.extend(error_lines(diff["error"]))
    if not lines:
        lines.append(Text("status, dialect and finish reason: the same", "dim"))
    lines.append(compared_line("text", diff["text"]))
    if "body" in diff:
        lines.append(compared_line("body", diff["body"]))
    return [*lines, *anomaly_lines(diff["anomalies"])]


def compared_line(label: str, compared: dict[str, Any]) -> Text:
    """The text, or a failed response's body: equal, or where the two part. A body's
    length is None on a side that has none."""
    line = labelled(label)
    length_a, length_b = compared["length_a"], compared["length_b"]
    if compared["equal"]:
        line.append(f"equal ({length_a} chars)", "green")
    elif length_a is None or length_b is None:
        line.append("differs", "yellow")
        line.append(f"  (A {_chars(length_a)}, B {_chars(length_b)})", "dim")
    else:
        line.append(f"differs from char {compared['first_difference']}", "yellow")
        line.append(f"  (A {length_a} chars, B {length_b})", "dim")
    return line


def _chars(length: int | None) -> str:
    return "none" if length is None else f"{length} chars"


def error_lines(errors: dict[str, str | None]) -> list[Text]:
    """Each side's error on its own line: two messages often share a long start."""
    a, b = errors["a"], errors["b"]
    at = first_difference(a or "", b or "") or 0
    lines = []
    for side, message in (("a", a), ("b", b)):
        line = labelled("error" if side == "a" else "")
        line.append(f"{side.upper()} ", "bold")
        if message is None:
            line.append("none", "dim")
        else:
            line.append(inert(_around(message, at)), SIDE_STYLE[side])
        lines.append(line)
    return lines


def _around(message: str, at: int) -> str:
    """The message whole when short, else ERROR_CHARS of it from shortly before `at`."""
    if len(message) <= ERROR_CHARS:
        return message
    start = max(0, min(at - ERROR_CONTEXT, len(message) - ERROR_CHARS))
    head = "…" if start else ""
    tail = "…" if start + ERROR_CHARS < len(message) else ""
    return head + message[start : start + ERROR_CHARS] + tail


def joined(lines: list[Text]) -> Text:
    return Text("\n").join(lines)


# -- widgets ----------------------------------------------------------------------------


class DiffPanel(Static):
    """One bordered section: the stream as a whole, or one lane."""

    def __init__(self, title: Text, subtitle: str, lines: list[Text], state: str) -> None:
        super().__init__(joined(lines), classes=f"-{state}")
        self.border_title = title
        self.border_subtitle = subtitle


def stream_panel(diff: dict[str, Any]) -> DiffPanel:
    state = "different" if stream_differs(diff) else "same"
    return DiffPanel(Text("stream", "bold"), "", stream_lines(diff), state)


def lane_panel(lane: Lane) -> DiffPanel:
    state = "one-sided" if "only_in" in lane else ("same" if lane["identical"] else "different")
    return DiffPanel(lane_title(lane), lane_subtitle(lane), lane_lines(lane), state)


class DiffApp(App[int]):
    CSS_PATH = "diff.tcss"
    TITLE = "toolstream-tui diff"
    BINDINGS = [Binding("q", "quit_diff", "Quit", id="quit")]

    def __init__(self, diff: dict[str, Any], code: int, *, theme: str = "textual-dark") -> None:
        super().__init__()
        self.diff = diff
        self.code = code
        self.theme = theme
        self.loaded = asyncio.Event()  # every panel mounted (tests wait on this)
        self.body = VerticalScroll(id="diff-body")

    def compose(self) -> ComposeResult:
        yield Static(header_text(self.diff), id="diff-header")
        yield self.body
        yield KeyFooter()

    async def on_mount(self) -> None:
        panels: list[Widget] = [
            stream_panel(self.diff),
            *(lane_panel(lane) for lane in self.diff["lanes"]),
        ]
        if not self.diff["lanes"]:
            panels.append(Static(Text("no tool calls on either side", "dim"), id="no-lanes"))
        await self.body.mount_all(panels)
        self.body.focus()
        quit_on_signals(lambda number: self.exit(128 + number))
        self.loaded.set()

    def action_quit_diff(self) -> None:
        self.exit(self.code)


def run_diff_app(diff: dict[str, Any], code: int) -> int:
    app = DiffApp(diff, code)
    result = app.run()
    if result is not None:
        return result
    return code if not app.return_code else EXIT_TROUBLE
