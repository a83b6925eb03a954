"""Wrapped lines: however text is cut into runs and batches, the lines are the
ones a plain character-by-character wrap gives."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import get_character_cell_size

from toolstream_tui.app.wrapped import ONE_CELL_RANGES, Run, RunText, WrappedLines, cells_of
from toolstream_tui.core.visible import inert

# ASCII, a space to wrap words at, newlines, a combining accent (0 cells), CJK
# and emoji (2 cells), Latin and box drawing (1 cell, past ASCII), a tab.
ALPHABET = "ab \n\u0301数🚀é─\t"

Line = list[Run]


def wrap_by_character(runs: list[Run], width: int, word_wrap: bool) -> list[Line]:
    """The specification: place characters one by one; a character that does not
    fit starts a new line (carrying the word it cuts, in word-wrap mode), unless
    the line is empty; in word-wrap mode a space that does not fit on a full line
    stays at its end, past the width, rather than start a line of its own."""
    lines: list[list[tuple[str, int]]] = [[]]
    column = 0
    kept_space = False  # the last line kept a space past its width
    for text, tag in runs:
        for char in text:
            if char == "\n":
                lines.append([])
                column, kept_space = 0, False
                continue
            cells = cells_of(char)
            overflows = column + cells > width and bool(lines[-1])
            if word_wrap and char == " " and overflows and not kept_space:
                lines[-1].append((char, tag))  # a full line keeps the space that ends it
                column, kept_space = column + cells, True
                continue
            if overflows:
                kept_space = False
            while column + cells > width and lines[-1]:
                carried: list[tuple[str, int]] = []
                if word_wrap:
                    spaces = [n for n, (c, _) in enumerate(lines[-1]) if c == " "]
                    if spaces:
                        carried = lines[-1][spaces[-1] + 1 :]
                        del lines[-1][spaces[-1] + 1 :]
                lines.append(carried)
                column = sum(cells_of(c) for c, _ in carried)
            lines[-1].append((char, tag))
            column += cells
    return [merged(line) for line in lines]


def merged(characters: list[tuple[str, int]]) -> Line:
    runs: Line = []
    for char, tag in characters:
        if runs and runs[-1][1] == tag:
            runs[-1] = (runs[-1][0] + char, tag)
        else:
            runs.append((char, tag))
    return runs


def lines_of(wrapped: WrappedLines) -> list[Line]:
    return [wrapped.line_runs(number) for number in range(len(wrapped))]


def wrapped_runs(width: int, word_wrap: bool = False, newlines: bool = True) -> WrappedLines:
    return WrappedLines(RunText(), width, word_wrap=word_wrap, newlines=newlines)


def extend(wrapped: WrappedLines, runs: list[Run]) -> None:
    """Append `runs` to the text and wrap up to its end."""
    source = wrapped.source
    assert isinstance(source, RunText)
    for text, tag in runs:
        source.append(text, tag)
    wrapped.extend_to(source.length)


runs_strategy = st.lists(
    st.tuples(st.text(alphabet=ALPHABET, max_size=30), st.integers(0, 3)), max_size=25
)


@given(
    runs=runs_strategy,
    width=st.integers(1, 12),
    word_wrap=st.booleans(),
    cuts=st.lists(st.integers(0, 25), max_size=6),
)
def test_lines_match_a_character_by_character_wrap(
    runs: list[Run], width: int, word_wrap: bool, cuts: list[int]
) -> None:
    wrapped = wrapped_runs(width, word_wrap=word_wrap)
    bounds = [0, *sorted(cut for cut in cuts if cut <= len(runs)), len(runs)]
    for start, end in pairwise(bounds):
        extend(wrapped, runs[start:end])
    assert lines_of(wrapped) == wrap_by_character(runs, width, word_wrap)
    assert wrapped.length == sum(len(text) for text, _ in runs)


@given(runs=runs_strategy, width=st.integers(1, 12), word_wrap=st.booleans())
def test_each_offset_lies_on_the_line_line_of_names(
    runs: list[Run], width: int, word_wrap: bool
) -> None:
    wrapped = wrapped_runs(width, word_wrap=word_wrap)
    for run in runs:
        extend(wrapped, [run])
    text = "".join(text for text, _ in runs)
    for offset, char in enumerate(text):
        number = wrapped.line_of(offset)
        start = wrapped.starts[number]
        if char != "\n":
            assert wrapped.line_text(number)[offset - start] == char


def test_a_long_ascii_line_is_cut_every_width_characters() -> None:
    wrapped = wrapped_runs(7)
    extend(wrapped, [("x" * 20, 1), ("y" * 3, 2)])
    assert [wrapped.line_text(n) for n in range(len(wrapped))] == [
        "xxxxxxx",
        "xxxxxxx",
        "xxxxxxy",
        "yy",
    ]
    assert wrapped.line_runs(2) == [("xxxxxx", 1), ("y", 2)]


def test_a_full_line_breaks_only_when_more_text_arrives() -> None:
    wrapped = wrapped_runs(3)
    extend(wrapped, [("abc", 0)])
    assert len(wrapped) == 1
    extend(wrapped, [("d", 0)])
    assert [wrapped.line_text(n) for n in range(len(wrapped))] == ["abc", "d"]


def test_a_newline_that_does_not_break_is_one_cell_as_drawn() -> None:
    """A lane draws a newline as ␊ and a control character as its picture: one
    cell each, wrapped where they are drawn."""
    wrapped = wrapped_runs(4, newlines=False)
    extend(wrapped, [("a\nb", 0), ("\x1b[2J", 1)])
    assert len(wrapped) == 2, "the newline is drawn as ␊, not broken at"
    assert wrapped.line_runs(0) == [("a\nb", 0), ("\x1b", 1)]
    assert [inert(text) for text, _ in wrapped.line_runs(0)] == ["a␊b", "␛"]


def test_invisible_characters_take_the_cell_of_their_picture() -> None:
    """A zero-width or C1 character is drawn as ¤: it takes one cell, so a line of
    them is not longer than the view."""
    assert cells_of("\u200b") == cells_of("\x9b") == 1
    wrapped = wrapped_runs(3, newlines=False)
    extend(wrapped, [("\u200b" * 7, 0)])
    assert [len(wrapped.line_text(n)) for n in range(len(wrapped))] == [3, 3, 1]


def test_every_character_taken_as_one_cell_is_one_cell() -> None:
    for low, high in ONE_CELL_RANGES:
        for code in range(low, high + 1):
            assert cells_of(chr(code)) == 1
            if code >= 0x80:
                assert get_character_cell_size(chr(code)) == 1
