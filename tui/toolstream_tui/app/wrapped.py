"""Text cut into display lines as it grows.

The text is not copied: a `TaggedText` source holds it (a call's fragments in
the core, or the text pane's runs) and `WrappedLines` keeps only where each line
starts. Extending costs time proportional to the new text, never to what is
already there, so a 10 MB argument buffer or a 200k-delta answer stays linear.
Widths are terminal cells of the text as it is drawn (control characters as
one-cell pictures), so CJK text wraps correctly; line breaks are found with
string searches and arithmetic over runs of one-cell characters, not a Python
step per character. A line is sliced out and split by tag only when it is drawn.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from typing import Protocol

from rich.cells import cell_len, get_character_cell_size, set_cell_size

from ..core.pieces import TextPieces
from ..core.visible import inert

Run = tuple[str, int]  # text, and a tag the view turns into a style

# Characters one cell wide as drawn: all of ASCII but the newline (a control
# character is drawn as a one-cell picture), and ranges Rich treats as one cell.
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
    """The cells one character takes as drawn (its inert picture, if it has one)."""
    return 1 if char.isascii() else get_character_cell_size(inert(char))


def fit_cell(text: str, width: int, right: bool) -> str:
    """`text` in exactly `width` cells, cut with … when longer (a wide character,
    Chinese say, takes two: counting characters shifted the columns after it)."""
    if cell_len(text) > width:
        text = set_cell_size(text, max(0, width - 1)) + "…"
    padding = " " * (width - cell_len(text))
    return padding + text if right else text + padding


class TaggedText(Protocol):
    """Text that only grows, with a tag for every character."""

    @property
    def length(self) -> int: ...

    def slice(self, start: int, end: int) -> str: ...

    def tag_ends(self, start: int, end: int) -> list[tuple[int, int]]:
        """The runs of one tag covering `start`..`end`: (offset where it ends, tag)."""
        ...


class PieceText:
    """Text kept as `TextPieces`, each piece's characters under one tag."""

    def __init__(self, pieces: TextPieces) -> None:
        self.pieces = pieces

    @property
    def length(self) -> int:
        return self.pieces.length

    def slice(self, start: int, end: int) -> str:
        return self.pieces.slice(start, end)

    def tag_of(self, number: int) -> int:
        return 0

    def tag_ends(self, start: int, end: int) -> list[tuple[int, int]]:
        ends = self.pieces.ends
        number = bisect_right(ends, start)
        found: list[tuple[int, int]] = []
        while number < len(ends):
            found.append((min(ends[number], end), self.tag_of(number)))
            if ends[number] >= end:
                break
            number += 1
        return found


class FragmentText(PieceText):
    """A call's argument buffer, tagged by fragment parity so the cuts show."""

    def tag_of(self, number: int) -> int:
        return (number + 1) % 2


class RunText(PieceText):
    """Text appended as runs of one tag each (the text pane's channels and labels)."""

    def __init__(self) -> None:
        super().__init__(TextPieces())
        self.tags = array("b")

    def append(self, text: str, tag: int) -> None:
        if text:
            self.pieces.append(text, 0, 0.0)
            self.tags.append(tag)

    def tag_of(self, number: int) -> int:
        return self.tags[number]


class WrappedLines:
    def __init__(
        self, source: TaggedText, width: int, *, word_wrap: bool = False, newlines: bool = True
    ) -> None:
        """`newlines`: a newline breaks the line (False: it is drawn as ␊)."""
        self.source = source
        self.width = max(1, width)
        self.word_wrap = word_wrap
        self.newlines = newlines
        self.starts = array("q", [0])  # offset of each line's first character
        self.length = 0  # characters of the source wrapped so far
        self._tail = ""  # the last line's text so far

    def __len__(self) -> int:
        return len(self.starts)

    def extend_to(self, length: int) -> None:
        """Wrap the source's text up to `length` characters."""
        if length <= self.length:
            return
        text = self.source.slice(self.length, length)
        work, base = self._tail + text, self.starts[-1]
        self.length = length
        self._tail = work[self._break_lines(work, base) :]

    def truncate(self, length: int) -> None:
        """Wrap only the first `length` characters, as if no more had come: the lines
        whose breaks text past `length` may have decided are wrapped again. A break
        is decided by the first character that does not fit after it (less than a
        line's width on), by the one after that when it is a space a full line
        keeps, or by a newline, so every line starting more than a width before
        `length` stays as it is."""
        if length >= self.length:
            return
        kept = max(1, bisect_left(self.starts, length - self.width - 1))
        del self.starts[kept:]
        self.length = self.starts[-1]
        self._tail = ""
        self.extend_to(length)

    def line_of(self, offset: int) -> int:
        return max(0, bisect_right(self.starts, offset) - 1)

    def line_span(self, number: int) -> tuple[int, int]:
        """Where line `number` starts and ends in the source (its newline left out)."""
        start = self.starts[number]
        end = self.starts[number + 1] if number + 1 < len(self.starts) else self.length
        return start, end

    def line_runs(self, number: int) -> list[Run]:
        """Line `number` as runs of one tag each (its newline left out)."""
        start, end = self.line_span(number)
        text = self.source.slice(start, end)
        if self.newlines and text.endswith("\n"):
            text, end = text[:-1], end - 1
        runs: list[Run] = []
        at = start
        for run_end, tag in self.source.tag_ends(start, end):
            piece = text[at - start : run_end - start]
            if runs and runs[-1][1] == tag:
                runs[-1] = (runs[-1][0] + piece, tag)
            elif piece:
                runs.append((piece, tag))
            at = run_end
        return runs

    def line_text(self, number: int) -> str:
        return "".join(text for text, _ in self.line_runs(number))

    # -- breaking -----------------------------------------------------------
    def _break_lines(self, work: str, base: int) -> int:
        """Record where `work` (the last line's text and what was just appended,
        starting at source offset `base`) breaks into lines; return the offset in
        `work` of the last line's start."""
        start, ascii_only = 0, work.isascii()
        while True:
            newline = work.find("\n", start) if self.newlines else -1
            end = len(work) if newline < 0 else newline
            start = self._wrap(work, start, end, base, ascii_only)
            if newline < 0:
                return start
            start = newline + 1
            self.starts.append(base + start)

    def _wrap(self, work: str, start: int, end: int, base: int, ascii_only: bool) -> int:
        """Break `work[start:end]` (no line-breaking newline in it) into lines of
        `width` cells; a line breaks only once a character after it has arrived."""
        width = self.width
        if ascii_only and not self.word_wrap:
            breaks = range(start + width, end, width)
            self.starts.extend(base + cut for cut in breaks)
            return breaks[-1] if breaks else start
        while (cut := self._first_unfitting(work, start, end)) < end:
            if self.word_wrap and work[cut] == " ":
                cut += 1  # a space that ends a full line stays on it, past the width
                if cut == end:
                    break  # the line breaks after it once the next character is in
            elif self.word_wrap and (space := work.rfind(" ", start, cut)) >= 0:
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
