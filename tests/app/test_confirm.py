"""The question asked before a bundle is overwritten: its words and keys on
screen, whatever the width."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.containers import Vertical
from textual.pilot import Pilot

from tests.helpers.apps import make_app, wait_settled
from tests.helpers.screen import screen_cells, screen_rows
from toolstream_stubs import StubServer
from toolstream_tui.app.screens.confirm import ConfirmScreen

Snap = Callable[..., bool]
QUESTION = "bq already holds a bundle. Overwrite it?"
KEYS = "y: yes · n: no"


async def asked_to_overwrite(pilot: Pilot[Any]) -> None:
    """`--bundle bq` has written bq once the stream settled; `b` asks before
    writing over it (the toast saying it was written is cleared first)."""
    app = pilot.app
    await wait_settled(app)  # type: ignore[arg-type]
    app.clear_notifications()
    await pilot.press("b")
    await pilot.pause()
    assert isinstance(app.screen, ConfirmScreen)
    await pilot.wait_for_scheduled_animations()


@pytest.mark.parametrize("size", [(120, 40), (60, 20)])
async def test_the_overwrite_question_shows_its_words_and_keys(
    app_stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(app_stub, "demo", bundle=Path("bq"))
    async with app.run_test(size=size) as pilot:
        await asked_to_overwrite(pilot)
        rows = screen_rows(app)
    assert any(QUESTION in row for row in rows), rows
    assert any(KEYS in row for row in rows), rows


async def test_a_long_question_wraps_inside_the_dialog(
    app_stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In 40 columns the question is longer than the dialog can be: it wraps,
    every word of it on screen."""
    monkeypatch.chdir(tmp_path)
    app = make_app(app_stub, "demo", bundle=Path("bq"))
    async with app.run_test(size=(40, 20)) as pilot:
        await asked_to_overwrite(pilot)
        box = app.screen.query_one(Vertical).content_region
        rows = screen_cells(app)[box.y : box.bottom]
    inside = ["".join(row[box.x : box.right]).strip() for row in rows]
    assert " ".join(inside[:-1]) == QUESTION, rows
    assert inside[-1] == KEYS, rows


def test_overwrite_question_snapshot(
    snap_compare: Snap, app_stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`demo` finished with `--bundle bq` already written, `b` pressed: over the
    dimmed stream, a box framed in the warning colour, as wide as its text,
    asking "bq already holds a bundle. Overwrite it?" with "y: yes · n: no"
    muted under it."""
    monkeypatch.chdir(tmp_path)
    app = make_app(app_stub, "demo", bundle=Path("bq"))
    assert snap_compare(app, terminal_size=(120, 40), run_before=asked_to_overwrite)
