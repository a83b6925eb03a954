"""The app benchmark's results as Markdown: the table the docs' performance page's
app section is made of (`python -m bench readme` puts it there), each goal of
goals.py marked met or not, with the command that repeats the run beside it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from . import markers
from .goals import GOALS, Goal

SECTION_HEADING = "## The app in a terminal"  # in docs/performance/index.md
WRAP = 80  # the docs' prose width
KEY_PHASES = {
    "speed-0": "parallel-64, `--speed 0`",
    "paced": "parallel-64, paced",
    "calls-10k": "10,000 calls, `--speed 0`",
    "finished": "parallel-64, after its end",
}


# -- goals --------------------------------------------------------------------------
def judge(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal with the value measured and whether it is met (None: not measured)."""
    return [{**goal_facts(goal), **verdict(goal, figures.get(goal.figure))} for goal in GOALS]


def goal_facts(goal: Goal) -> dict[str, Any]:
    return {"row": goal.row, "figure": goal.figure, "goal": goal.text()}


def verdict(goal: Goal, figure: dict[str, Any] | None) -> dict[str, Any]:
    if not figure:
        return {"value": None, "met": None}
    if "not_finished" in figure or figure.get("n") == 0:
        return {"value": None, "met": False}  # measured, and nothing finished or answered
    value = figure.get(goal.statistic)
    if value is None:
        return {"value": None, "met": None}
    met = value <= goal.limit
    if goal.presses:
        met = met and figure["least_answered"] >= goal.presses and not figure["unanswered"]
    return {"value": value, "met": met}


# -- formatting -----------------------------------------------------------------------
def seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 0.1 else f"{value * 1000:.0f} ms"


def megabytes(value: float) -> str:
    return f"{value:,.0f} MB"


def stream_facts(name: str, streams: dict[str, Any]) -> str:
    facts = streams.get(name)
    if not facts:
        return ""
    return f" ({facts['events']:,} events, {facts['body_bytes'] / 1e6:,.1f} MB)"


def whole_text(name: str, figures: dict[str, Any]) -> str:
    ratio = figures.get(f"whole.{name}.ratio")
    if not ratio:
        return "—"
    headless = figures[f"whole.{name}.headless_seconds"]
    unfinished = ratio.get("not_finished")
    if unfinished:
        return (
            f"not finished after {unfinished['after_seconds']:.0f} s "
            f"(> {unfinished['ratio_at_least']:.0f}x headless {seconds(headless['median'])}; "
            f"status: {unfinished['status'] or '—'})"
        )
    app = figures[f"whole.{name}.app_seconds"]
    return (
        f"**{ratio['median']:.2f}x** (max {ratio['max']:.2f}x): "
        f"app {seconds(app['median'])} ÷ headless {seconds(headless['median'])}"
    )


def key_text(figure: dict[str, Any] | None) -> str:
    if not figure:
        return "—"
    if not figure["n"]:
        text = "no press answered"
    else:
        text = f"median {figure['median']:.0f} ms, **max {figure['max']:.0f} ms**"
    counts = f"{figure['n']} presses answered in {figure['launches']} launch(es)"
    if figure["unanswered"]:
        counts += f", {figure['unanswered']} unanswered"
    if figure["after_end"]:
        counts += f", {figure['after_end']} after the stream's end"
    if figure.get("capped_at_seconds"):
        counts += f", stopped after {figure['capped_at_seconds']:g} s"
    if figure.get("note"):
        counts += f"; {figure['note']}"
    return f"{text} ({counts})"


def spread(figure: dict[str, Any] | None, unit: str) -> str:
    if not figure or not figure.get("n"):
        return "—"
    show = megabytes if unit == "MB" else seconds  # "ms" figures are kept in seconds too
    if figure["n"] == 1:
        return f"**{show(figure['median'])}**"
    return f"**{show(figure['median'])}** (max {show(figure['max'])})"


def rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(what a user sees, measured, goal, met) for every goal."""
    figures, streams = results["figures"], results["streams"]
    verdicts = {entry["figure"]: entry for entry in results["goals"]}
    out = []
    for goal in GOALS:
        kind = goal.figure.split(".")[0]
        figure = figures.get(goal.figure)
        if kind == "whole":
            measured = whole_text(goal.stream, figures)
        elif kind == "keys":
            measured = key_text(figure)
        else:
            measured = spread(figure, goal.unit)
        met = {True: "met", False: "**not met**"}.get(verdicts[goal.figure]["met"], "—")
        seen = goal.row + stream_facts(goal.stream, streams)
        out.append((seen, measured, goal.text(), met))
    return out


def key_table(figures: dict[str, Any]) -> list[str]:
    phases = [name for name in KEY_PHASES if f"keys.{name}" in figures]
    if not phases:
        return []
    names = [case.name for case in markers.KEYS]
    lines = [
        "| key latency, ms: median / max (presses) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for phase in phases:
        cells = []
        for name in names:
            entry = figures[f"keys.{phase}"]["per_key"].get(name, {})  # absent: not pressed
            cell = "—"
            if entry.get("n"):
                cell = f"{entry['median']:.0f} / {entry['max']:.0f} ({entry['n']})"
            if entry.get("unanswered"):
                cell += f", {entry['unanswered']} unanswered"
            cells.append(cell)
        lines.append(f"| {KEY_PHASES[phase]} | " + " | ".join(cells) + " |")
    return lines


def conditions(results: dict[str, Any]) -> str:
    meta = results["meta"]
    machine = meta["machine"]
    load = machine["load_1min"]
    busy = machine.get("cpu_busy_share")
    width, height = meta["terminal"]
    parts = [
        f"{machine['cpus']} CPUs",
        f"load average (1 min) {load.get('median', 0):.1f} median, {load.get('max', 0):.1f} max",
    ]
    if busy is not None:
        parts.append(f"CPUs {busy:.0%} busy on average (all processes)")
    resolution = "; ".join(
        f"{part} {facts['median_ms']:.1f} ms (p99 {facts['p99_ms']:.1f} ms)"
        for part, facts in meta["resolution"].items()
    )
    versions = meta["versions"]
    return (
        f"{meta['started']}, {versions['tmux']} {width}x{height}, Python {versions['python']}, "
        f"textual {versions['textual']}; {', '.join(parts)}. Screen captured every "
        f"{resolution or '—'}: the resolution of every time measured on screen."
    )


def floor_note(floor: dict[str, Any]) -> str:
    """What the first-frame figure stands on: Textual's own start, and the demo's
    pause before its first text."""
    return (
        f"Under the first-frame figure: a minimal Textual app (one `Static`, "
        f"`bench/minimal_app.py`), launched in turn with the demo, showed its first frame "
        f"after {seconds(floor['median'])} (median of {floor['n']}); and the stub sends the "
        f"demo's first text {demo_pause_before_text_ms():g} ms after its first event."
    )


def cpu_note(cpu: dict[str, Any], ratio: dict[str, Any], meta: dict[str, Any]) -> str:
    """What watching a stream costs the machine (no goal: the issue sets none)."""
    paced = meta["paced_seconds"]
    return (
        f"What watching costs: over parallel-64 paced ({paced:g} s, no key pressed), the "
        f"app used {seconds(cpu['app']['median'])} of CPU from launch until `finished` was "
        f"on screen ({cpu['app']['median'] / paced:.0%} of a core; max "
        f"{seconds(cpu['app']['max'])}), headless {seconds(cpu['headless']['median'])} to its "
        f"exit: {ratio['median']:.1f}x (median of {ratio['n']} alternating pairs; the "
        f"kernel counts CPU in 10 ms ticks)."
    )


def demo_pause_before_text_ms() -> float:
    """How long the stub waits, at the demo's own pace, before its first text delta
    (the core reads the demo's events one by one until it holds text)."""
    from toolstream_stubs import load_scenario
    from toolstream_tui.core import StreamSession

    scenario = load_scenario("demo")
    session = StreamSession("demo", live=False)
    for index, event in enumerate(scenario.events):
        session.feed(event, 0.0)
        if session.state.text:
            return index * scenario.delay_ms
    return 0.0


def paragraph(text: str) -> str:
    return textwrap.fill(text, WRAP, break_long_words=False, break_on_hyphens=False)


def markdown(results: dict[str, Any]) -> str:
    """The performance section's body, from one run's results."""
    meta = results["meta"]
    intro = (
        f"`{meta['command']}` (this run: {meta['total_seconds'] / 60:.0f} min; `--quick`, "
        "small streams once, is the test suite's smoke test) runs the app in a real "
        "terminal (tmux) and times what a user sees from outside the process. App ÷ "
        "headless: `toolstream-tui --replay FILE --speed 0` from launch until `finished` is "
        "on screen, then `q`, until the process is gone, divided by the same file "
        "`--headless` (stdout to /dev/null), in paired, alternating rounds "
        f"({meta['rounds']} per stream; median and max of the pairs' ratios). Key → frame: a "
        "key sent to the first captured frame that shows its effect, pressed while the stream "
        f"is on screen (paced: the stream spread over {meta['paced_seconds']:g} s), and in "
        "one phase after its end, where `t` has parsed lanes to flip. Peak RSS from the "
        "kernel (VmHWM, wait4). Goals from issues 12 and 34."
    )
    lines = [
        paragraph(intro),
        "",
        "| what a user sees | measured | goal | |",
        "|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(row)} |" for row in rows(results)]
    keys = key_table(results["figures"])
    if keys:
        lines += ["", *keys]
    floor = results["figures"].get("startup.minimal_textual_app")
    if floor and floor.get("n"):
        lines += ["", paragraph(floor_note(floor))]
    cpu = {name: results["figures"].get(f"cpu.paced.{name}") for name in ("app", "headless")}
    if all(figure and figure.get("n") for figure in cpu.values()):
        lines += ["", paragraph(cpu_note(cpu, results["figures"]["cpu.paced.ratio"], meta))]
    lines += ["", paragraph(conditions(results))]
    if results["problems"]:
        lines += ["", *(f"- problem: {problem}" for problem in results["problems"])]
    return "\n".join(lines) + "\n"


# -- the docs page -----------------------------------------------------------------------
def section_with(page: str, body: str) -> str:
    """The performance page with its app section's body replaced by `body` (up to
    the next heading: the subsections after it are other benchmarks')."""
    found = re.search(rf"^{re.escape(SECTION_HEADING)}\n(.*?)(?=^###? |\Z)", page, re.M | re.S)
    if found is None:
        raise ValueError(f"the page has no {SECTION_HEADING!r} section")
    return page[: found.start(1)] + "\n" + body + "\n" + page[found.end(1) :]


def write_section(path: Path, body: str) -> None:
    path.write_text(section_with(path.read_text(encoding="utf-8"), body), encoding="utf-8")
