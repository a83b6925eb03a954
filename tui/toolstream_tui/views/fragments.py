"""The inspector's table of a call's fragments, as they arrived."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.pieces import TextPieces
from ..core.strict_json import loads
from ..core.visible import escaped

# -- the fragment inspector -------------------------------------------------------------
FRAGMENT_COLUMNS = (  # title, least width, right-aligned; the fragment last, in what is left
    ("#", 1, True),
    ("event", 5, True),
    ("arrived", 7, True),
    ("len", 3, True),
    ("alone", 6, False),
    ("fragment (exact, escaped)", 0, False),
)


def parses_alone(fragment: str) -> bool:
    """Would this fragment parse as JSON by itself? (Almost never — which is why
    fragments are accumulated and parsed once, at the finish.) The same parser as
    the call's own parse, so a call sent whole says it parses here too."""
    try:
        loads(fragment)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class FragmentRow:
    number: int  # from 1
    event: int  # the wire event that carried it
    arrived: float  # seconds since the request
    length: int  # characters
    parses_alone: bool
    text: str  # the fragment as a JSON string literal (see `escaped`)
    cut: bool  # `text` is only its start


class FragmentRows:
    """One call's fragments as the inspector's rows, each made when asked for: the
    inspector draws the rows in view, never all of them, so a call of millions of
    fragments costs what a call of ten does. Whether a fragment parses alone is
    remembered once found (fragments never change; a big one is slow to parse)."""

    def __init__(self, pieces: TextPieces) -> None:
        self.pieces = pieces
        self._alone: dict[int, bool] = {}

    def count_upto(self, upto: int) -> int:
        return self.pieces.count_upto(upto)

    def row(self, number: int, limit: int | None = None) -> FragmentRow:
        """Fragment `number` (from 1). `limit`: at most that many characters of its
        text, which is then the start of the whole (each character is escaped on
        its own, so only what is kept needs escaping)."""
        pieces = self.pieces
        index = number - 1
        fragment = pieces.piece(index)
        alone = self._alone.get(number)
        if alone is None:
            alone = self._alone[number] = parses_alone(fragment)
        if limit is None:
            text, cut = escaped(fragment), False
        else:
            text = escaped(fragment[:limit])
            cut = len(text) > limit  # always so when the fragment is longer than `limit`
            text = text[:limit] if cut else text
        return FragmentRow(
            number, pieces.events[index], pieces.times[index], len(fragment), alone, text, cut
        )

    def widths(self, count: int, width: int, gap: int = 2) -> list[int]:
        """Column widths for the first `count` fragments in `width` cells, found
        without reading them: events and times only grow, and no fragment is longer
        than all of them together."""
        pieces = self.pieces
        last = count - 1
        widest = (
            (len(str(count)), len(str(pieces.events[last])), len(f"{pieces.times[last]:.3f}s"))
            if count
            else (0, 0, 0)
        )
        length = len(str(pieces.ends[last])) if count else 0
        needs = [*widest, length, 0, 0]
        widths = [
            max(least, need) for (_, least, _), need in zip(FRAGMENT_COLUMNS, needs, strict=True)
        ]
        widths[-1] = max(1, width - sum(widths) - gap * (len(widths) - 1))
        return widths


def fragment_cells(row: FragmentRow) -> tuple[str, ...]:
    """The row's cells but the fragment, in FRAGMENT_COLUMNS order."""
    alone = "parses" if row.parses_alone else "no"
    return (str(row.number), str(row.event), f"{row.arrived:.3f}s", str(row.length), alone)
