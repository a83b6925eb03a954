"""The fragment inspector: rows made one at a time from the core's pieces
(`views.FragmentRows`), and the virtual list that draws only those in view, up
to the display cursor, following the stream while it is open."""

from __future__ import annotations

import json
from typing import Any

from textual.app import App

from tests.helpers.sse import sse
from tests.helpers.streaming import chunk, run, tc
from toolstream_tui.app.screens.inspector import FragmentList, InspectorScreen
from toolstream_tui.app.screens.stream import StreamScreen
from toolstream_tui.core import StreamSession
from toolstream_tui.core.visible import escaped
from toolstream_tui.views.fragments import FragmentRows
from toolstream_tui.watching.options import WatchOptions
from toolstream_tui.watching.stream import WatchedStream

SIZE = (120, 40)
MANY = 100_000
FOLLOW_POLLS = 2_000  # 100 s at most: only a hang is caught, never a slow machine


def call_events(fragments: list[str]) -> list[dict[str, Any] | str]:
    """One call whose arguments arrive as `fragments`, one wire event each."""
    return [
        chunk(tc(0, "call_1", "f", "")),
        *(chunk(tc(0, args=fragment)) for fragment in fragments),
        chunk(finish="tool_calls"),
        "[DONE]",
    ]


def numbered_fragments(count: int) -> list[str]:
    """`{"n":[0,1,…,0]}` in `count` fragments: only the first and last differ."""
    return ['{"n":[', *(f"{number}," for number in range(count - 2)), "0]}"]


def fed_session(events: list[dict[str, Any] | str], *, ended: bool = True) -> StreamSession:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(sse(*events), 0.5)
    if ended:
        session.close(1.0)
    return session


class OneStream(App[None]):
    """A stream screen over a session fed beforehand (no source, no worker)."""

    def __init__(
        self, session: StreamSession, *, can_go_back: bool = False, **options: Any
    ) -> None:
        super().__init__()
        self.stream = StreamScreen(
            WatchedStream("test", WatchOptions(clock=lambda: 0.0, **options), session=session),
            can_go_back=can_go_back,
        )

    def on_mount(self) -> None:
        self.push_screen(self.stream)


def fragment_of(line: str) -> str:
    """The fragment a drawn row shows, read back from its escaped form."""
    return json.loads(line.split(maxsplit=5)[5])


def numbers(lines: list[str]) -> list[int]:
    return [int(line.split()[0]) for line in lines]


async def open_inspector(app: OneStream, pilot: Any) -> FragmentList:
    await pilot.pause()
    await pilot.press("i")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, InspectorScreen)
    return screen.fragment_list


# -- rows, without Textual ------------------------------------------------------------
def test_a_row_is_its_fragment_with_where_and_when_it_arrived() -> None:
    r = run(sse(*call_events(['{"a":', "1", '"\x1b"}'])))
    pieces = r.session.state.calls[0].pieces
    rows = FragmentRows(pieces)
    first, second, third = (rows.row(number) for number in (1, 2, 3))
    assert (first.number, first.length, first.text, first.parses_alone) == (
        1,
        5,
        '"{\\"a\\":"',
        False,
    )
    assert (second.text, second.parses_alone) == ('"1"', True)  # a number is JSON alone
    assert third.text == '"\\"\\u001b\\"}"' and third.length == 4
    assert [row.event for row in (first, second, third)] == list(pieces.events)
    assert [row.arrived for row in (first, second, third)] == list(pieces.times)
    assert not any(row.cut for row in (first, second, third))


def test_a_row_cut_to_a_limit_is_the_start_of_the_whole() -> None:
    fragment = '"\x1b' + "x" * 1000  # escapes make the text longer than the fragment
    r = run(sse(*call_events([fragment])))
    rows = FragmentRows(r.session.state.calls[0].pieces)
    whole = rows.row(1).text
    assert whole == escaped(fragment)
    for limit in (1, 3, 8, 500, len(whole) - 1):
        cut = rows.row(1, limit)
        assert cut.cut and cut.text == whole[:limit]
    assert rows.row(1, len(whole)) == rows.row(1)


def test_column_widths_fit_the_widest_value_without_reading_every_row() -> None:
    r = run(sse(*call_events(numbered_fragments(1_200))))
    rows = FragmentRows(r.session.state.calls[0].pieces)
    number, event, arrived, length, alone, fragment = rows.widths(1_200, 100, gap=2)
    assert (number, event, arrived, length, alone) == (4, 5, 7, 4, 6)  # "1200"; 4889 characters
    assert number + event + arrived + length + alone + fragment + 5 * 2 == 100


# -- the list in the app --------------------------------------------------------------
async def test_a_call_of_100k_fragments_opens_at_its_first_rows_and_ends_at_its_last() -> None:
    fragments = numbered_fragments(MANY)
    app = OneStream(fed_session(call_events(fragments)))
    async with app.run_test(size=SIZE) as pilot:
        fragment_list = await open_inspector(app, pilot)
        shown = fragment_list.drawn_rows()
        page = len(shown)
        assert page > 10
        assert numbers(shown) == list(range(1, page + 1))
        assert [fragment_of(line) for line in shown] == fragments[:page]
        await pilot.press("end")
        await pilot.pause()
        shown = fragment_list.drawn_rows()
        assert numbers(shown) == list(range(MANY - page + 1, MANY + 1))
        assert [fragment_of(line) for line in shown] == fragments[-page:]
        await pilot.press("home")
        await pilot.pause()
        assert numbers(fragment_list.drawn_rows()) == list(range(1, page + 1))


async def test_the_rows_are_the_fragments_headless_reports_up_to_a_stepped_cursor() -> None:
    events = call_events(numbered_fragments(300))
    cursor = 60  # the last wire event shown, stepped to as a person would
    app = OneStream(fed_session(events), start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*["n"] * cursor)
        assert app.stream.cursor == cursor
        fragment_list = await open_inspector(app, pilot)
        seen: dict[int, str] = {}
        for _ in range(fragment_list.count):  # page down until every row was in view
            seen |= {int(line.split()[0]): line for line in fragment_list.drawn_rows()}
            if len(seen) == fragment_list.count:
                break
            await pilot.press("pagedown")
            await pilot.pause()
    report = run(sse(*events[:cursor])).calls[0]  # headless, on what the cursor shows
    assert sorted(seen) == list(range(1, report["fragments"] + 1))
    assert "".join(fragment_of(seen[number]) for number in sorted(seen)) == report["arguments_raw"]


async def test_an_open_inspector_follows_a_live_stream() -> None:
    fragments = numbered_fragments(400)
    events = call_events(fragments)
    session = fed_session(events[:100], ended=False)
    app = OneStream(session)
    async with app.run_test(size=SIZE) as pilot:
        fragment_list = await open_inspector(app, pilot)
        assert fragment_list.count == 99
        await pilot.press("end")  # the cursor on the last row follows new ones
        session.feed(sse(*events[100:200]), 0.6)
        for _ in range(FOLLOW_POLLS):  # the stream screen's tick, then the inspector's
            if fragment_list.count == 199:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        assert fragment_list.count == 199
        shown = fragment_list.drawn_rows()
        assert numbers(shown)[-1] == 199
        assert fragment_of(shown[-1]) == fragments[198]
        assert fragment_list.cursor_row == 198


async def test_a_paused_display_shows_no_fragment_that_arrived_after_it() -> None:
    events = call_events(numbered_fragments(50))
    session = fed_session(events[:20], ended=False)
    app = OneStream(session, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for _ in range(10):
            await pilot.press("n")
        fragment_list = await open_inspector(app, pilot)
        assert fragment_list.count == 9  # events 2 to 10 carried fragments
        session.feed(sse(*events[20:]), 0.6)
        app.screen.follow()  # type: ignore[attr-defined]
        assert fragment_list.count == 9
        assert numbers(fragment_list.drawn_rows()) == list(range(1, 10))


async def test_the_inspector_opened_again_shows_the_newly_selected_call_and_follows_it() -> None:
    """The screen is kept between openings: each opening shows the selected call
    from its first row, and follows that call while it streams."""
    first, second = numbered_fragments(60), numbered_fragments(90)
    events: list[dict[str, Any] | str] = [
        chunk(tc(0, "call_1", "f", "")),
        chunk(tc(1, "call_2", "g", "")),
        *(chunk(tc(0, args=fragment)) for fragment in first),
        *(chunk(tc(1, args=fragment)) for fragment in second[:40]),
    ]
    session = fed_session(events, ended=False)
    app = OneStream(session)
    async with app.run_test(size=SIZE) as pilot:
        fragment_list = await open_inspector(app, pilot)
        inspector = app.screen
        assert "call #0 f" in str(inspector.box.border_title)  # type: ignore[attr-defined]
        await pilot.press("end")
        await pilot.pause()
        assert fragment_list.cursor_row == 59
        await pilot.press("i")
        await pilot.press("j")
        await pilot.pause()
        assert app.stream.selected == 1
        again = await open_inspector(app, pilot)
        assert app.screen is inspector and again is fragment_list
        assert "call #1 g" in str(inspector.box.border_title)  # type: ignore[attr-defined]
        assert fragment_list.cursor_row == 0 and fragment_list.scroll_offset.y == 0
        shown = fragment_list.drawn_rows()
        assert numbers(shown) == list(range(1, len(shown) + 1))
        assert [fragment_of(line) for line in shown] == second[: len(shown)]
        session.feed(sse(*(chunk(tc(1, args=fragment)) for fragment in second[40:])), 0.6)
        for _ in range(FOLLOW_POLLS):  # the stream screen's tick, then the inspector's
            if fragment_list.count == 90:
                break
            await pilot.pause(0.05)
        assert fragment_list.count == 90


async def test_a_stream_screen_that_leaves_takes_its_inspector_with_it() -> None:
    app = OneStream(fed_session(call_events(numbered_fragments(10))), can_go_back=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_inspector(app, pilot)
        inspector = app.screen
        await pilot.press("i")
        await pilot.pause()
        assert app.is_screen_installed(inspector)
        await pilot.press("escape")  # back, as from a proxied request
        await pilot.pause()
        assert app.screen is not app.stream
        assert not app.is_screen_installed(inspector) and not inspector.is_attached
