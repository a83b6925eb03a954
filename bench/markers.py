"""What the app shows, read off a captured frame. Every row of the app benchmark
decides "the key took effect" or "the stream is on screen" through this one
table, so when the app's look changes, this file is the one to update.

The markers follow what the app draws today (tui/toolstream_tui/app/):
- the status bar is the first row: `state · anomalies · elapsed · N events ·
  bytes · dialect · source · …`, fields cut from the right when narrow; paused,
  `PAUSED · at event 31,204 of 217,383 · 4.81 s` replaces the event count;
- a lane is a box titled `#index name · id`, its state (`streaming`, `parsed`…)
  in its bottom border; its border is round (`╭`), double (`╔`) when selected;
  a tree view starts with its root, `▼ {} n keys`;
- the inspector is a modal titled `fragments of call #index …`;
- the assistant pane is the left box of the second row of boxes, showing
  `waiting for text…` until text arrives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from .terminal import Frame

STATUS_ROW = 0
ASSISTANT_FIRST_ROW = 3  # under the status bar, the scrub bar and the boxes' top border
STATE = re.compile(r"^ ?(connecting|streaming|finished|truncated|error)\b")
EVENTS = re.compile(r" · (\d+) events\b| at event ([\d,]+) of ")
PAUSED = " PAUSED "
GOTO_PROMPT = "or a time like 12.5s"
LANE_TITLE = re.compile(r"([╭╔])[─═] #(\d+) ")
FOCUSED_CORNER = "╔"
FOCUSED_BOTTOM = "╚"
TREE_ROOT = re.compile(r"[▼▶] (\{\}|\[\])")
INSPECTOR_TITLE = "fragments of call #"
WAITING_FOR_TEXT = "waiting for text…"
ENDED = ("finished", "truncated", "error")


# -- the status bar -------------------------------------------------------------
def status(frame: Frame) -> str:
    return frame.lines[STATUS_ROW] if frame.lines else ""


def status_facts(frame: Frame) -> str:
    """The status bar without the source (a path of this machine)."""
    fields = status(frame).strip().split(" · ")
    return " · ".join(field for field in fields if "/" not in field)


def state(frame: Frame) -> str | None:
    """connecting, streaming, finished, truncated or error; None before the first paint."""
    found = STATE.search(status(frame))
    return found.group(1) if found else None


def ended(frame: Frame) -> bool:
    return state(frame) in ENDED


def finished(frame: Frame) -> bool:
    return state(frame) == "finished"


def events_shown(frame: Frame) -> int | None:
    found = EVENTS.search(status(frame))
    return int((found.group(1) or found.group(2)).replace(",", "")) if found else None


def paused(frame: Frame) -> bool:
    return PAUSED in status(frame)


def goto_prompt(frame: Frame) -> bool:
    """`g`'s prompt is open, waiting for an event number or a time."""
    return any(GOTO_PROMPT in line for line in frame.lines)


# -- lanes ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LaneBox:
    index: int
    row: int  # of its title
    focused: bool


def lanes(frame: Frame) -> list[LaneBox]:
    """The lanes whose title is on screen, top to bottom."""
    boxes = []
    for row, line in enumerate(frame.lines):
        for found in LANE_TITLE.finditer(line):
            focused = found.group(1) == FOCUSED_CORNER
            boxes.append(LaneBox(int(found.group(2)), row, focused))
    return boxes


def focused_lane(frame: Frame) -> int | None:
    return next((box.index for box in lanes(frame) if box.focused), None)


def focused_view(frame: Frame) -> tuple[int, str] | None:
    """The focused lane and whether it shows its tree or its raw buffer."""
    box = next((box for box in lanes(frame) if box.focused), None)
    if box is None or box.row + 1 >= len(frame.lines):
        return None
    first_row = frame.lines[box.row + 1]
    return box.index, "tree" if TREE_ROOT.search(first_row) else "raw"


def focused_parsed(frame: Frame) -> bool:
    """The selected lane's bottom border, when on screen, says it is parsed (only
    then has it a tree to flip to)."""
    box = next((box for box in lanes(frame) if box.focused), None)
    if box is None:
        return False
    bottom = next((line for line in frame.lines[box.row + 1 :] if FOCUSED_BOTTOM in line), "")
    return " parsed " in bottom


def inspector_open(frame: Frame) -> bool:
    return any(INSPECTOR_TITLE in line for line in frame.lines)


def assistant_text(frame: Frame) -> str:
    """The first row of the assistant pane ('' when blank or still waiting)."""
    if len(frame.lines) <= ASSISTANT_FIRST_ROW:
        return ""
    parts = frame.lines[ASSISTANT_FIRST_ROW].split("│")
    text = parts[1].strip() if len(parts) > 1 else ""
    return "" if text == WAITING_FOR_TEXT else text


def content(frame: Frame) -> bool:
    """The first frame with content: the status bar, and a lane or some text."""
    return state(frame) is not None and (bool(lanes(frame)) or bool(assistant_text(frame)))


# -- keys ---------------------------------------------------------------------------
def changed(before: Hashable, after: Hashable) -> bool:
    return after != before


def another_lane(before: Hashable, after: Hashable) -> bool:
    """Focus moved to a lane on screen (not merely out of view)."""
    return after is not None and after != before


def same_lane_other_view(before: Hashable, after: Hashable) -> bool:
    """The focused lane flipped between tree and raw (not: focus or scroll moved)."""
    return (
        isinstance(before, tuple)
        and isinstance(after, tuple)
        and after[0] == before[0]
        and after[1] != before[1]
    )


@dataclass(frozen=True, slots=True)
class KeyCase:
    """One key press: `probe` reads what the key changes; its effect is on screen in
    the first frame where `answered(probe before the press, probe now)`. `ready`
    says whether the key can be pressed now (close needs an open inspector)."""

    name: str
    key: str  # tmux's name, for send-keys
    probe: Callable[[Frame], Hashable]
    ready: Callable[[Frame], bool]
    answered: Callable[[Hashable, Hashable], bool] = changed
    end_changes_it: bool = False  # the stream's end alone can change the probe
    while_streaming: bool = True  # can be pressed while the keys' stream is still on


def on_main_screen(frame: Frame) -> bool:
    return not inspector_open(frame)


def lane_in_view(frame: Frame) -> bool:
    return on_main_screen(frame) and bool(lanes(frame))


def finished_with_lanes(frame: Frame) -> bool:
    return finished(frame) and lane_in_view(frame)


def parsed_lane_focused(frame: Frame) -> bool:
    return on_main_screen(frame) and focused_parsed(frame)


KEYS = (
    # `j`, not `down`: with many lanes the column scrolls on `down` and keeps the focus.
    KeyCase("focus next lane", "j", focused_lane, lane_in_view, another_lane),
    # A streaming lane has no tree yet (`t` says so in a toast); at the finish every
    # lane turns to its tree by itself.
    KeyCase("tree/raw", "t", focused_view, parsed_lane_focused, same_lane_other_view, True, False),
    KeyCase("open inspector", "i", inspector_open, lane_in_view),
    KeyCase("close inspector", "i", inspector_open, inspector_open),
    KeyCase("pause", "Space", paused, lambda frame: on_main_screen(frame) and not paused(frame)),
    KeyCase("resume", "Space", paused, lambda frame: on_main_screen(frame) and paused(frame)),
)
STREAMING_KEYS = tuple(case for case in KEYS if case.while_streaming)
QUIT_KEY = "q"
