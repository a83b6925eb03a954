"""Counting words and sizes the way every screen writes them."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 event`, `23,057 events`: thousands grouped, as everywhere on screen."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def human_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.2f} MB"


def shortened(text: str, width: int) -> str:
    """Text cut in the middle to `width` characters (a URL, a file path)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    keep = width - 1
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2) :]
