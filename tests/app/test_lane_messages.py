"""A lane's errors (its schema errors, or why it did not parse): every one
listed when the lane has the rows, else whole ones and a last row saying how
many more there are; the lane's fields and counter lines stay in view."""

from __future__ import annotations

import pytest

from tests.helpers.apps import make_app, wait_settled
from tests.helpers.screen import screen_cells
from toolstream_stubs import StubServer
from toolstream_tui.app.widgets.lane import CallLane
from toolstream_tui.views.lanes import lane_rows, messages_listed

ERRORS = [
    "$: Additional properties are not allowed ('hourly' was unexpected)",
    "$.days: 30 is greater than the maximum of 14",
    "$.unit: 'kelvin' is not one of ['celsius', 'fahrenheit']",
]
TREE = ["▼ {} 4 keys", '├ city: "Oslo"', '├ unit: "kelvin"', "├ days: 30", "└ hourly: true"]
FIELDS = "fields city 0.00s · unit 0.00s · days 0.00s · hourly 0.00s"
COUNTER = "3 fragments · 62 chars · 0.00s"


def lane_lines(lane: CallLane) -> list[str]:
    """The lines inside a lane's frame, as on screen."""
    box = lane.content_region
    rows = screen_cells(lane.app)[box.y : box.bottom]
    return ["".join(row[box.x : box.right]).rstrip() for row in rows]


@pytest.mark.parametrize(
    ("size", "lines"),
    [
        # the audit's case: the first error wraps, and all three fit beside the tree
        ((110, 36), [*TREE, ERRORS[0][:54], ERRORS[0][55:], *ERRORS[1:], FIELDS, COUNTER]),
        ((160, 40), [*TREE, *ERRORS, FIELDS, COUNTER]),
        # three lanes in 14 rows: this one gets 4 inside its frame, its fields
        # line gives way to a second row of errors
        (
            (110, 22),
            [
                TREE[0],
                "$: Additional properties are not allowed ('hourly' was…",
                "… 2 more schema errors (e: report)",
                COUNTER,
            ],
        ),
    ],
    ids=["110x36", "160x40", "110x22"],
)
async def test_a_lane_lists_every_error_or_says_how_many_more(
    app_stub: StubServer, size: tuple[int, int], lines: list[str]
) -> None:
    app = make_app(app_stub, "schema-mismatch")
    async with app.run_test(size=size) as pilot:
        await wait_settled(app)
        await pilot.pause()
        lane = app.stream.lanes.lanes[0]
        frame_bottom = "".join(screen_cells(app)[lane.region.bottom - 1])
        assert "═ 3 schema errors · ⚠ 1 ═" in frame_bottom
        assert lane_lines(lane) == lines


def test_messages_that_fit_are_all_listed() -> None:
    assert messages_listed([2, 1, 1], 4) == (3, 0)
    assert messages_listed([2, 1, 1], 9) == (3, 0)


def test_messages_that_do_not_fit_leave_a_row_to_say_how_many_more() -> None:
    assert messages_listed([2, 1, 1], 3) == (1, 0)  # 2 rows listed, 1 row: "… 2 more"
    assert messages_listed([1, 1, 1], 2) == (1, 0)
    assert messages_listed([2, 1, 1], 2) == (0, 1)  # the first cut to its first row
    assert messages_listed([2, 1, 1], 1) == (0, 0)  # only "… 3 …"
    assert messages_listed([5], 3) == (0, 3)  # a lone message is cut, nothing more to say


def test_a_lane_shares_its_rows_all_to_each_when_all_fit() -> None:
    assert lane_rows(inner=11, content=5, messages=4, fields=True) == (4, True)
    assert lane_rows(inner=20, content=5, messages=4, fields=True) == (4, True)
    assert lane_rows(inner=3, content=1, messages=1, fields=False) == (1, False)


def test_a_squeezed_lane_keeps_three_rows_for_its_messages_then_drops_its_fields() -> None:
    assert lane_rows(inner=10, content=5, messages=4, fields=True) == (3, True)
    assert lane_rows(inner=14, content=2, messages=12, fields=True) == (10, True)
    assert lane_rows(inner=8, content=5, messages=6, fields=True) == (3, True)
    # short of rows for three: the fields line makes way, a row of content stays
    assert lane_rows(inner=4, content=5, messages=4, fields=True) == (2, False)
    assert lane_rows(inner=4, content=5, messages=1, fields=True) == (1, True)
    assert lane_rows(inner=3, content=5, messages=4, fields=True) == (1, False)
