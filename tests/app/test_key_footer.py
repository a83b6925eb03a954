"""The footer shows the keys that fit, each whole: narrower terminals leave out
whole keys (the screen's own from the right first, quit and `?` last) and, below
80 columns, the palette's `^p`, also after the terminal shrinks."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from textual.app import App

from tests.helpers.apps import make_app, wait_settled
from tests.helpers.screen import screen_rows
from tests.helpers.waiting import until
from toolstream_stubs import StubServer
from toolstream_tui.app.widgets.key_footer import keys_that_fit

ALL_KEYS = "space Pause t Tree i Inspect a Anomalies b Bundle q Quit ? Keys"
WITHOUT_BUNDLE = "space Pause t Tree i Inspect a Anomalies q Quit ? Keys"
WITH_PALETTE = ALL_KEYS.ljust(108) + "▏^p palette"  # docked right, a margin after it


def footer_row(app: App[Any]) -> str:
    return screen_rows(app)[-1].rstrip()


@pytest.mark.parametrize(
    ("first", "then", "shown"),
    [
        ((120, 20), None, WITH_PALETTE),
        ((120, 20), (60, 20), WITHOUT_BUNDLE),
        ((60, 10), None, WITHOUT_BUNDLE),
        ((60, 20), (120, 20), WITH_PALETTE),
        ((120, 20), (70, 20), ALL_KEYS),
        ((120, 20), (40, 20), "space Pause t Tree q Quit ? Keys"),
    ],
    ids=["120", "120-to-60", "60", "60-to-120", "120-to-70", "120-to-40"],
)
async def test_the_footer_shows_whole_keys_that_fit_after_a_resize(
    app_stub: StubServer,
    first: tuple[int, int],
    then: tuple[int, int] | None,
    shown: str,
) -> None:
    app = make_app(app_stub, "demo")
    async with app.run_test(size=first) as pilot:
        await wait_settled(app)
        if then is not None:
            await pilot.resize_terminal(*then)
        # the footer rebuilds its keys after a refresh: waited for, failing below if never
        with contextlib.suppress(AssertionError):
            await until(pilot, lambda: footer_row(app) == shown, f"the footer {shown!r}")
        assert footer_row(app) == shown


def test_the_screens_keys_go_first_from_the_right_then_quit_before_keys() -> None:
    widths = [12, 7, 10, 12, 9, 7, 7]  # pause … bundle, then the app's quit and keys
    app_owned = [False] * 5 + [True] * 2
    assert keys_that_fit(widths, app_owned, 64) == [True] * 7
    assert keys_that_fit(widths, app_owned, 60) == [True] * 4 + [False] + [True] * 2
    assert keys_that_fit(widths, app_owned, 14) == [False] * 5 + [True] * 2
    assert keys_that_fit(widths, app_owned, 13) == [False] * 6 + [True]
    assert keys_that_fit(widths, app_owned, 6) == [False] * 7
