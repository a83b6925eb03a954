"""A line-API view's content size, changed without laying out the whole screen.

Assigning `virtual_size` asks Textual for a layout of the screen: every widget
arranged again, on every tick while the lanes grow. Content that grows inside a
view changes nothing outside it, unless a scrollbar appears or goes (the view's
text gets narrower). So the layout is asked for only then; otherwise the
scrollbars are given the new size through their public reactives, and a view
scrolled past the end of content that shrank is moved back.

A view that follows its end is scrolled there at once, even when its scrollbar
only appears at the coming layout (until then Textual refuses to scroll a view
whose scrollbar is hidden, and the view would stay at the top).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_content_size(view: ScrollView, size: Size, *, follow: bool = False) -> None:
    """`follow`: show the last line afterwards."""
    old = view.virtual_size
    if size != old:
        _resize(view, size, old)
    if follow:
        scroll_to_end(view)


def scroll_to_end(view: ScrollView) -> None:
    """The last line in view, whether or not the scrollbar is shown yet."""
    view.scroll_to(y=view.max_scroll_y, animate=False, force=True, immediate=True)
    # A scrollbar about to appear is not told of the scroll: its thumb would be
    # drawn at the top.
    view.vertical_scrollbar.position = view.scroll_y


def _resize(view: ScrollView, size: Size, old: Size) -> None:
    room = view.container_size
    wanted = _bars_wanted(view, size)
    if not room or None in wanted or wanted != _bars_wanted(view, old):
        view.virtual_size = size
        return
    view.set_reactive(Widget.virtual_size, size)
    if view.show_vertical_scrollbar:
        bar = view.vertical_scrollbar
        bar.window_virtual_size = size.height
        bar.window_size = room.height - view.scrollbar_size_horizontal
    if view.show_horizontal_scrollbar:
        bar = view.horizontal_scrollbar
        bar.window_virtual_size = size.width
        bar.window_size = room.width - view.scrollbar_size_vertical
    if size.width < old.width or size.height < old.height:
        _keep_in_range(view)


def _keep_in_range(view: ScrollView) -> None:
    """Shorter or narrower content: a view scrolled past its new end moves back."""
    x, y = min(view.scroll_x, view.max_scroll_x), min(view.scroll_y, view.max_scroll_y)
    if (x, y) != (view.scroll_x, view.scroll_y):
        view.scroll_to(x=x, y=y, animate=False, force=True, immediate=True)
    view.vertical_scrollbar.position = view.scroll_y
    view.horizontal_scrollbar.position = view.scroll_x


def _bars_wanted(view: ScrollView, size: Size) -> tuple[bool | None, bool | None]:
    """Per axis, whether content of `size` shows a scrollbar: True or False when
    that holds whatever the other bar does, None when it depends on it."""
    styles, room = view.styles, view.container_size
    return (
        _bar_wanted(styles.overflow_x, size.width, room.width, styles.scrollbar_size_vertical),
        _bar_wanted(styles.overflow_y, size.height, room.height, styles.scrollbar_size_horizontal),
    )


def _bar_wanted(overflow: str, length: int, room: int, other_bar: int) -> bool | None:
    if overflow != "auto":
        return overflow == "scroll"
    if length > room:
        return True
    if length <= room - other_bar:
        return False
    return None
