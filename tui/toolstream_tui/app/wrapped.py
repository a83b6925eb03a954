"""Text cut into display lines as it arrives.

Appending costs time proportional to the appended text, never to what is
already there, so a 1 MB argument buffer or a 200k-delta answer stays linear.
Each run of text carries a tag (a fragment's parity, a text channel) that the view
turns into a style. Widths are terminal cells, so CJK text wraps correctly.

The text is kept as the chunks it arrived in, and a line is only a start
offset: a batch of runs is joined once and its line breaks are found with
string searches and arithmetic over runs of one-cell characters, so the cost
per fragment is a list append, not a pass through Python per character. A line
is sliced out and split by tag only when it is drawn.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from operator import itemgetter

from rich.cells import get_character_cell_size

Run = tuple[str, int]

# Characters one cell wide: all of ASCII but the newline (a control character
# here is already drawn as a visible picture), and ranges Rich treats as one cell.
ONE_CELL_RANGES = (
    (0x00, 0x09),
    (0x0B, 0x7F),
    (0xA0, 0xAC),
    (0xAE, 0x2FF),  # Latin
    (0x370, 0x482),  # Greek, Cyrillic
    (0x2500, 0x25FC),  # box drawing, shapes
    (0x2800, 0x28FF),  # Braille
)
_ONE_CELL = re.compile(
    "["
    + "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ONE_CELL_RANGES)
    + "]+"
)


def cells_of(char: str) -> int:
    """The cells one character takes, as the wrapping counts them."""
    return 1 if char.isascii() else get_character_cell_size(char)


def _identity(text: str) -> str:
    return text


class WrappedLines:
    def __init__(
        self, width: int, *, word_wrap: bool = False, shown: Callable[[str], str] = _identity
    ) -> None:
        self.width = max(1, width)
        self.word_wrap = word_wrap
        self.shown = shown  # how text is drawn; must keep its length
        self.starts: list[int] = [0]  # buffer offset of each line's first character
        self.length = 0
        self._chunks: list[str] = []
        self._chunk_starts: list[int] = []
        self._run_starts: list[int] = []
        self._run_tags: list[int] = []
        self._tail = ""  # the last line's text so far

    def __len__(self) -> int:
        return len(self.starts)

    def extend(self, runs: list[Run]) -> None:
        texts = [text for text, _ in runs]
        text = self.shown("".join(texts))
        if not text:
            return
        self._run_starts += accumulate(map(len, texts[:-1]), initial=self.length)
        self._run_tags += map(itemgetter(1), runs)
        self._chunks.append(text)
        self._chunk_starts.append(self.length)
        work, base = self._tail + text, self.starts[-1]
        self.length += len(text)
        self._tail = work[self._break_lines(work, base) :]

    def line_of(self, offset: int) -> int:
        return max(0, bisect_right(self.starts, offset) - 1)

    def line_runs(self, number: int) -> list[Run]:
        """Line `number` as runs of one tag each (its newline left out)."""
        start = self.starts[number]
        end = self.starts[number + 1] if number + 1 < len(self.starts) else self.length
        text = self._slice(start, end)
        if text.endswith("\n"):
            text, end = text[:-1], end - 1
        runs: list[Run] = []
        run = max(0, bisect_right(self._run_starts, start) - 1)
        while run < len(self._run_starts) and self._run_starts[run] < end:
            following = run + 1 < len(self._run_starts)
            run_end = self._run_starts[run + 1] if following else end
            piece = text[max(self._run_starts[run], start) - start : min(run_end, end) - start]
            tag = self._run_tags[run]
            if runs and runs[-1][1] == tag:
                runs[-1] = (runs[-1][0] + piece, tag)
            elif piece:
                runs.append((piece, tag))
            run += 1
        return runs

    def line_text(self, number: int) -> str:
        return "".join(text for text, _ in self.line_runs(number))

    # -- breaking -----------------------------------------------------------
    def _break_lines(self, work: str, base: int) -> int:
        """Record where `work` (the last line's text and what was just appended,
        starting at buffer offset `base`) breaks into lines; return the offset in
        `work` of the last line's start."""
        start, ascii_only = 0, work.isascii()
        while True:
            newline = work.find("\n", start)
            end = len(work) if newline < 0 else newline
            start = self._wrap(work, start, end, base, ascii_only)
            if newline < 0:
                return start
            start = newline + 1
            self.starts.append(base + start)

    def _wrap(self, work: str, start: int, end: int, base: int, ascii_only: bool) -> int:
        """Break `work[start:end]`, which has no newline, into lines of `width`
        cells; a line breaks only once a character after it has arrived."""
        width = self.width
        if ascii_only and not self.word_wrap:
            breaks = range(start + width, end, width)
            self.starts += (base + cut for cut in breaks)
            return breaks[-1] if breaks else start
        while (cut := self._first_unfitting(work, start, end)) < end:
            if self.word_wrap and (space := work.rfind(" ", start, cut)) >= 0:
                cut = space + 1  # the word cut in half goes to the next line
            self.starts.append(base + cut)
            start = cut
        return start

    def _first_unfitting(self, work: str, start: int, end: int) -> int:
        """The first character of `work[start:end]` that does not fit on a line
        from `start` (`end` if all fit). A line holds at least one character."""
        room, at = self.width, start
        while at < end:
            one_cell = _ONE_CELL.match(work, at, min(end, at + room + 1))
            if one_cell is not None:
                count = one_cell.end() - at
                if count > room:
                    return at + room
                room -= count
                at += count
                continue
            cells = cells_of(work[at])
            if cells > room:
                return at if at > start else start + 1
            room -= cells
            at += 1
        return end

    def _slice(self, start: int, end: int) -> str:
        chunk = bisect_right(self._chunk_starts, start) - 1
        parts: list[str] = []
        while start < end:
            chunk_start = self._chunk_starts[chunk]
            text = self._chunks[chunk]
            parts.append(text[start - chunk_start : end - chunk_start])
            start = chunk_start + len(text)
            chunk += 1
        return "".join(parts)
