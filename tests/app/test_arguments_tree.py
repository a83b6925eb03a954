"""The arguments tree adds children a page at a time: a node of many children
shows the first page and a "more" node, which adds the next page when expanded,
until every child is in the tree, in order."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets.tree import TreeNode

from toolstream_tui.app.widgets.arguments_tree import PAGE_CHILDREN, ArgumentsTree, More


class Shown(App[None]):
    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value

    def compose(self) -> ComposeResult:
        yield ArgumentsTree()

    def on_mount(self) -> None:
        self.query_one(ArgumentsTree).show_value(self.value)


def labels(node: TreeNode[Any]) -> list[str]:
    return [str(child.label) for child in node.children]


async def expand_every_more(pilot: Pilot[None], node: TreeNode[Any]) -> int:
    """Expand `node`'s "more" node until there is none; how many pages it took."""
    pages = 1
    while node.children and isinstance(node.children[-1].data, More):
        node.children[-1].expand()
        await pilot.pause()
        pages += 1
    return pages


async def test_a_root_of_many_keys_opens_a_page_at_a_time() -> None:
    keys = PAGE_CHILDREN * 2 + 7
    value = {f"k{number}": number for number in range(keys)}
    async with Shown(value).run_test() as pilot:
        root = pilot.app.query_one(ArgumentsTree).root
        shown = labels(root)
        assert len(shown) == PAGE_CHILDREN + 1 and shown[0] == "k0: 0"
        assert shown[-1].startswith(f"… {keys - PAGE_CHILDREN:,} more")
        assert await expand_every_more(pilot, root) == 3
        assert labels(root) == [f"k{number}: {number}" for number in range(keys)]


async def test_a_long_list_inside_opens_a_page_at_a_time() -> None:
    records = [{"n": number} for number in range(PAGE_CHILDREN + 1)]
    async with Shown({"id": "x", "records": records}).run_test() as pilot:
        tree = pilot.app.query_one(ArgumentsTree)
        node = tree.root.children[1]
        assert not node.children, "too many children to add before it is expanded"
        node.expand()
        await pilot.pause()
        assert labels(node)[-1] == "… 1 more (expand for the next 1)"
        assert await expand_every_more(pilot, node) == 2
        assert labels(node) == [f"[{number}]: {{}} 1 key" for number in range(len(records))]
        last = node.children[-1]
        last.expand()
        await pilot.pause()
        assert labels(last) == [f"n: {PAGE_CHILDREN}"]
