"""A view's content grows without a layout of the screen, and is drawn exactly
as a layout would draw it: scrollbars appear when the content outgrows the view,
their thumbs follow the size and the scroll; a buffer at its end stays there,
one scrolled up stays where it was put."""

from __future__ import annotations

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.pilot import Pilot
from textual.scroll_view import ScrollView
from textual.strip import Strip

from toolstream_tui.app.widgets.content_size import set_content_size
from toolstream_tui.app.widgets.wrapped_view import WrappedView
from toolstream_tui.app.wrapped import RunText


class Numbered(ScrollView):
    """Line `n` reads `n` and is as wide as the content."""

    DEFAULT_CSS = "Numbered { width: 30; height: 8; }"

    def render_line(self, y: int) -> Strip:
        number = int(self.scroll_y) + y
        if number >= self.virtual_size.height:
            return Strip.blank(self.size.width)
        text = f"{number}".ljust(self.virtual_size.width, ".")
        scroll_x = int(self.scroll_x)
        return Strip([Segment(text)]).crop_extend(scroll_x, scroll_x + self.size.width, None)


class Growing(App[None]):
    def compose(self) -> ComposeResult:
        yield Numbered()


def drawn(app: Growing) -> tuple[object, ...]:
    """What the screen shows of the view and its scrollbars."""
    view = app.query_one(Numbered)
    bars = []
    for shown, bar in (
        (view.show_vertical_scrollbar, view.vertical_scrollbar),
        (view.show_horizontal_scrollbar, view.horizontal_scrollbar),
    ):
        bars.append(
            (shown, bar.window_virtual_size, bar.window_size, bar.position) if shown else shown
        )
    return (tuple(bars), view.scroll_offset, app.export_screenshot())


async def grow_and_compare(pilot: Pilot[None], sizes: list[Size], follow: bool) -> None:
    app = pilot.app
    view = app.query_one(Numbered)
    for size in sizes:
        set_content_size(view, size, follow=follow and view.is_vertical_scroll_end)
        view.refresh()
        await pilot.pause()
        if view.show_vertical_scrollbar:  # the thumb where the view is
            assert view.vertical_scrollbar.position == view.scroll_y, size
        grown = drawn(app)
        view.refresh(layout=True)
        await pilot.pause()
        assert grown == drawn(app), size


async def test_growing_taller_draws_what_a_layout_draws() -> None:
    async with Growing().run_test(size=(40, 12)) as pilot:
        await grow_and_compare(pilot, [Size(20, height) for height in range(1, 25)], follow=True)
        view = pilot.app.query_one(Numbered)
        assert view.show_vertical_scrollbar and view.is_vertical_scroll_end


async def test_growing_wider_and_taller_draws_what_a_layout_draws() -> None:
    sizes = [Size(width, height) for width, height in zip(range(20, 40), range(2, 22), strict=True)]
    async with Growing().run_test(size=(40, 12)) as pilot:
        await grow_and_compare(pilot, sizes, follow=False)
        view = pilot.app.query_one(Numbered)
        assert view.show_vertical_scrollbar and view.show_horizontal_scrollbar


async def test_shrinking_draws_what_a_layout_draws() -> None:
    sizes = [Size(20, 30), Size(20, 20), Size(20, 3), Size(50, 3), Size(10, 2)]
    async with Growing().run_test(size=(40, 12)) as pilot:
        await grow_and_compare(pilot, sizes, follow=True)
        view = pilot.app.query_one(Numbered)
        assert not view.show_vertical_scrollbar and not view.show_horizontal_scrollbar


async def test_shrinking_below_the_scroll_draws_what_a_layout_draws() -> None:
    """Scrolled to the end of 30 lines and 50 columns, not following: shorter and
    narrower content (scrollbars still shown) moves the view back to its new end."""
    async with Growing().run_test(size=(40, 12)) as pilot:
        view = pilot.app.query_one(Numbered)
        await grow_and_compare(pilot, [Size(50, 30)], follow=False)
        view.scroll_to(x=view.max_scroll_x, y=view.max_scroll_y, animate=False, immediate=True)
        await pilot.pause()
        await grow_and_compare(pilot, [Size(45, 20), Size(40, 12)], follow=False)
        assert view.show_vertical_scrollbar and view.show_horizontal_scrollbar
        assert view.scroll_offset == (view.max_scroll_x, view.max_scroll_y)


class Buffer(App[None]):
    CSS = "WrappedView { width: 22; height: 6; }"

    def __init__(self) -> None:
        super().__init__()
        self.text = RunText()

    def compose(self) -> ComposeResult:
        yield WrappedView(self.text, shown=str)

    async def add(self, pilot: Pilot[None], lines: int) -> WrappedView:
        """`lines` more lines of 20 characters (the width left beside the scrollbar)."""
        for _ in range(lines):
            self.text.append("x" * 20, 0)
        view = self.query_one(WrappedView)
        view.show(self.text, self.text.length)
        await pilot.pause()
        return view


async def test_a_buffer_at_its_end_stays_there_as_it_grows_and_shrinks() -> None:
    app = Buffer()
    async with app.run_test(size=(40, 12)) as pilot:
        view = await app.add(pilot, 3)
        for _ in range(4):
            view = await app.add(pilot, 2)
            assert view.scroll_y == max(0, view.line_count - 6)
        view.styles.height = 3
        await pilot.pause()
        assert view.scroll_y == view.line_count - 3


async def test_a_buffer_scrolled_up_stays_where_it_was_put() -> None:
    app = Buffer()
    async with app.run_test(size=(40, 12)) as pilot:
        view = await app.add(pilot, 10)
        view.scroll_to(y=1, animate=False, immediate=True)
        await app.add(pilot, 4)
        view.styles.height = 3
        await pilot.pause()
        assert view.scroll_y == 1
        view.scroll_end(animate=False, immediate=True)  # back at the end: follows again
        view = await app.add(pilot, 2)
        assert view.scroll_y == view.line_count - 3
