"""The documentation pages (docs/, the MkDocs site) that tests hold to the code:
where a promise is written, a test reads it from here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def docs_page(name: str) -> str:
    """The Markdown of `docs/NAME` (e.g. "headless.md", "reference/anomalies.md")."""
    return (DOCS / name).read_text(encoding="utf-8")


def section(page: str, heading: str) -> str:
    """A page's text under `heading` (a whole heading line, `## Name`), up to the
    next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    after = page.split(f"\n{heading}\n", 1)[1]
    ends = [after.find(f"\n{'#' * depth} ") for depth in range(1, len(level) + 1)]
    return after[: min((end for end in ends if end >= 0), default=len(after))]
