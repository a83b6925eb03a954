"""A parsed-arguments tree: keys, typed values and array indices. Children are
added when a node is first expanded, so a 10k-node object opens instantly, and
a page at a time: a node of a million items shows the first PAGE_CHILDREN and
a "more" node that adds the next page when expanded."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...core.visible import inert

EAGER_LEVELS = 2
EAGER_CHILD_LIMIT = 50
MAX_VALUE_CHARS = 400
PAGE_CHILDREN = 500  # children added at a time: a million items open as fast as a page


def value_label(key: str | None, value: Any) -> Text:
    label = Text()
    if key is not None:
        label.append(key, "bold")
        label.append(": ")
    label.append_text(_value_text(value))
    return label


def _value_text(value: Any) -> Text:
    if isinstance(value, dict):
        return Text(f"{{}} {len(value)} key{'s' if len(value) != 1 else ''}", "dim")
    if isinstance(value, list):
        return Text(f"[] {len(value)} item{'s' if len(value) != 1 else ''}", "dim")
    if isinstance(value, str):
        shown = inert(value)
        if len(shown) > MAX_VALUE_CHARS:
            shown = shown[:MAX_VALUE_CHARS] + f"… ({len(value)} chars)"
        return Text(f'"{shown}"', "green")
    if isinstance(value, bool) or value is None:
        return Text("null" if value is None else str(value).lower(), "magenta italic")
    return Text(repr(value), "cyan")


def _size(value: Any) -> int:
    """How many children a value has, without making them (a list of a million
    records is counted, not labelled, to learn that it is too big to expand)."""
    return len(value) if isinstance(value, (dict, list)) else 0


def _children(value: Any, start: int, count: int) -> list[tuple[str, Any]]:
    """`count` children of `value` from the `start`th: (label, value) pairs."""
    if isinstance(value, dict):
        items = islice(value.items(), start, start + count)
        return [(inert(str(key)), item) for key, item in items]
    if isinstance(value, list):
        return [(f"[{number}]", value[number]) for number in range(start, start + count)]
    return []


@dataclass(frozen=True, slots=True)
class More:
    """A node's children from `start` on, not added yet."""

    value: Any
    start: int


class ArgumentsTree(Tree[Any]):
    DEFAULT_CSS = """
    ArgumentsTree { height: 1fr; background: $surface; padding: 0; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("arguments"), id=id)
        self.show_root = True
        self.guide_depth = 2

    def show_value(self, value: Any) -> None:
        self.clear()
        self.root.set_label(value_label(None, value))
        self._show(value)

    def show_preview(self, value: Any, length: int, error: str | None) -> None:
        """What the first `length` characters parse to so far, marked as a preview."""
        self.clear()
        label = Text(f"preview of {length} chars, not final · ", "italic yellow")
        if value is None and error is not None:
            label.append("nothing parses yet", "italic")
        else:
            label.append_text(value_label(None, value))
        self.root.set_label(label)
        self._show(value)

    def _show(self, value: Any) -> None:
        self.root.data = value
        self._populate(self.root, depth=0)
        self.root.expand()

    def _populate(self, node: TreeNode[Any], depth: int) -> None:
        if not node.children and _size(node.data):
            self._add_page(node, node.data, 0, depth)

    def _add_page(self, node: TreeNode[Any], value: Any, start: int, depth: int) -> None:
        """Children of `node` from the `start`th of `value`'s, a page of them, and
        a "more" node for the rest."""
        count = min(PAGE_CHILDREN, _size(value) - start)
        for key, item in _children(value, start, count):
            if _size(item):
                child = node.add(value_label(key, item), data=item)
                if depth + 1 < EAGER_LEVELS and _size(item) <= EAGER_CHILD_LIMIT:
                    self._populate(child, depth + 1)
                    child.expand()
            else:
                node.add_leaf(value_label(key, item), data=item)
        rest = _size(value) - start - count
        if rest:
            label = Text(f"… {rest:,} more (expand for the next {min(rest, PAGE_CHILDREN)})")
            label.stylize("dim italic")
            node.add(label, data=More(value, start + count))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Any]) -> None:
        event.stop()
        node = event.node
        more = node.data
        if isinstance(more, More) and node.parent is not None:
            parent = node.parent
            node.remove()
            self._add_page(parent, more.value, more.start, depth=EAGER_LEVELS)
        else:
            self._populate(node, depth=EAGER_LEVELS)

    def line_count(self) -> int:
        """The lines the tree takes as it is expanded now (its lane sizes itself by it)."""
        count = 0
        pending = [self.root]
        while pending:
            node = pending.pop()
            count += 1
            if node.is_expanded:
                pending.extend(node.children)
        return count

    def plain_labels(self) -> list[str]:
        """Every populated node's label, depth-first (for tests)."""
        labels: list[str] = []

        def walk(node: TreeNode[Any], depth: int) -> None:
            labels.append("  " * depth + str(node.label))
            for child in node.children:
                walk(child, depth + 1)

        walk(self.root, 0)
        return labels
