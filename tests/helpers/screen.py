"""The screen as the person sees it, one string per terminal row, read from the
SVG Textual exports (its public picture of the screen): each run of text in it
names its row and where it starts."""

from __future__ import annotations

import html
import re
from typing import Any

from rich.cells import cell_len
from textual.app import App

_TEXT_RUN = re.compile(
    r'<text [^>]*?x="(?P<x>[\d.]+)"[^>]*?textLength="(?P<length>[\d.]+)"'
    r'[^>]*?clip-path="url\(#[\w-]+-line-(?P<row>\d+)\)"[^>]*>(?P<text>[^<]*)</text>'
)


def screen_rows(app: App[Any]) -> list[str]:
    """Every row of `app`'s screen, blank cells as spaces."""
    return ["".join(row) for row in screen_cells(app)]


def screen_cells(app: App[Any]) -> list[list[str]]:
    """Every cell of `app`'s screen by row and column: its character, a space
    when blank, "" when the second half of a wide character."""
    width, height = app.size
    rows: list[list[str]] = [[" "] * width for _ in range(height)]
    for run in _TEXT_RUN.finditer(app.export_screenshot()):
        text = html.unescape(run["text"]).replace("\xa0", " ")
        # x is the column times a cell's width; textLength that width times len(text)
        column = round(float(run["x"]) * len(text) / float(run["length"]))
        row = rows[int(run["row"])]
        for char in text:
            size = cell_len(char)
            if not size and 0 < column <= width:
                row[column - 1] += char  # a combining mark, on the cell before it
            elif column + size <= width:
                row[column : column + size] = [char] + [""] * (size - 1)
            column += size
    return rows
