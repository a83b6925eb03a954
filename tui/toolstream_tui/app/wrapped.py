"""Text cut into display lines as it arrives.

Appending costs time proportional to the appended text, never to what is
already there, so a 1 MB argument buffer or a 200k-delta answer stays linear.
Each run of text carries a tag (fragment number, text channel) that the view
turns into a style. Widths are terminal cells, so CJK text wraps correctly.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.cells import get_character_cell_size

Run = tuple[str, int]


def _fit(text: str, room: int) -> tuple[int, int]:
    """How many characters of `text` fit in `room` cells, and their cell width."""
    if text.isascii():
        count = min(len(text), room)
        return count, count
    used = 0
    for count, char in enumerate(text):
        size = get_character_cell_size(char)
        if used + size > room:
            return count, used
        used += size
    return len(text), used


class WrappedLines:
    def __init__(self, width: int, *, word_wrap: bool = False) -> None:
        self.width = max(1, width)
        self.word_wrap = word_wrap
        self.lines: list[list[Run]] = [[]]
        self.starts: list[int] = [0]  # buffer offset of each line's first character
        self.length = 0
        self._column = 0

    def append(self, text: str, tag: int) -> None:
        if self._column + len(text) <= self.width and text.isascii() and "\n" not in text:
            self._add(text, tag, len(text))  # fits the current line: the usual fragment
            return
        first = True
        for piece in text.split("\n"):
            if not first:
                self.length += 1  # the newline itself belongs to the line it ends
                self._break_line()
            first = False
            self._append_piece(piece, tag)

    def line_of(self, offset: int) -> int:
        return max(0, bisect_right(self.starts, offset) - 1)

    def _append_piece(self, text: str, tag: int) -> None:
        while text:
            count, cells = _fit(text, self.width - self._column)
            if count == 0:
                if self._column == 0:  # a character wider than the whole line
                    count, cells = 1, self.width
                else:
                    self._wrap_line()
                    continue
            self._add(text[:count], tag, cells)
            text = text[count:]
            if self._column >= self.width and text:
                self._wrap_line()

    def _add(self, text: str, tag: int, cells: int) -> None:
        line = self.lines[-1]
        if line and line[-1][1] == tag:
            line[-1] = (line[-1][0] + text, tag)
        else:
            line.append((text, tag))
        self.length += len(text)
        self._column += cells

    def _break_line(self) -> None:
        self.lines.append([])
        self.starts.append(self.length)
        self._column = 0

    def _wrap_line(self) -> None:
        """Start a new line; in word-wrap mode carry a word cut in half along."""
        carried = self._cut_last_word() if self.word_wrap else []
        self._break_line()
        for text, tag in carried:
            cells = sum(get_character_cell_size(char) for char in text)
            self._add(text, tag, cells)
            self.length -= len(text)  # carried characters were counted already
        self.starts[-1] = self.length - sum(len(text) for text, _ in carried)

    def _cut_last_word(self) -> list[Run]:
        line = self.lines[-1]
        joined = "".join(text for text, _ in line)
        space = joined.rfind(" ")
        if space < 0 or space == len(joined) - 1:
            return []
        return _split_runs(line, space + 1)


def _split_runs(line: list[Run], offset: int) -> list[Run]:
    """Cut `line` in place at character `offset`; return the runs after the cut."""
    position = 0
    for number, (text, tag) in enumerate(line):
        if position + len(text) > offset:
            head, tail = text[: offset - position], text[offset - position :]
            rest = [(tail, tag), *line[number + 1 :]]
            del line[number:]
            if head:
                line.append((head, tag))
            return rest
        position += len(text)
    return []
