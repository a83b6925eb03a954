"""The documentation pages (docs/, the MkDocs site) that tests hold to the code:
where a promise is written, a test reads it from here."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.helpers.paths import PROJECT

ROOT = PROJECT
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


def reference_generator() -> ModuleType:
    """tools/docs_reference.py, the MkDocs hook that writes the reference pages (tools/
    is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "tools" / "docs_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
