"""A Vertex AI call's lane: its pieces, one `path = value` line each."""

from __future__ import annotations

from tests.app.test_lane_messages import lane_lines
from tests.helpers.apps import make_app, redrawn_at_rest, wait_received
from toolstream_stubs import StubServer
from toolstream_tui.app.widgets.lane import PieceLines
from toolstream_tui.core.pieces import TextPieces

PIECES_AT_8 = [
    '$.destination.city = "San " …',
    '$.destination.city = "Francisco" …',
    '$.destination.city = ""',
    "$.destination.nights = 3",
    '$.stops[0].name = "Golden Gate" …',
    '$.stops[0].name = " Park"',
]


async def test_a_vertex_lane_shows_each_piece_on_its_own_line(app_stub: StubServer) -> None:
    app = make_app(app_stub, "vertex-partial-args", start_at=8)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_received(app)
        await redrawn_at_rest(pilot)
        lane = app.stream.lanes.lanes[0]
        assert lane_lines(lane)[:6] == PIECES_AT_8
        assert not any("␊" in line for line in lane_lines(lane))


def test_only_the_newline_ending_a_piece_breaks_its_line() -> None:
    """A newline inside a piece (a path may hold one: it is written as sent) stays
    inert; the one ending each piece is the line break."""
    pieces = TextPieces()
    for text in ("$.a\nb = 1\n", '$.c = "x" …\n'):
        pieces.append(text, 1, 0.0)
    lines = PieceLines(pieces)
    assert lines.slice(0, pieces.length) == '$.a␊b = 1\n$.c = "x" …\n'
    assert lines.slice(0, 4) == "$.a␊"  # cut after the inner newline: still inert
