"""Whether a file is a capture another tool saved (a HAR file, a zipped HAR, a
mitmproxy flow file) or a recording, told from its first bytes alone. Kept apart
from `captures`, which reads captures, so that a replay of a recording decides
without importing it."""

from __future__ import annotations

import re
from pathlib import Path

from .recording import RecordingError
from .replay import open_regular

HAR = "HAR"
FLOWS = "mitmproxy flow"
ZIP = "zip"  # Playwright saves a HAR and its bodies in one
SNIFF_BYTES = 4096
ZIP_MAGIC = b"PK\x03\x04"
HAR_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"\s*:')
TNETSTRING_START = re.compile(rb"(\d{1,12}):")  # match() anchors it where it is asked


def capture_kind(head: bytes) -> str | None:
    """HAR, FLOWS, or None (not a capture: a recording), from a file's first bytes.
    A HAR is a JSON object whose first key is "log"; a flow file, a tnetstring
    dictionary (its length, a colon, and a `}` tag where the length says)."""
    if HAR_START.match(head):
        return HAR
    start = TNETSTRING_START.match(head)
    if start is None:
        return None
    tag_at = start.end() + int(start.group(1))
    if tag_at >= len(head):  # the first flow is longer than the head: its opening says
        return FLOWS if head[start.end() : start.end() + 1].isdigit() else None
    return FLOWS if head[tag_at : tag_at + 1] == b"}" else None


def file_capture_kind(path: Path) -> str | None:
    """HAR, FLOWS, ZIP (an archive a HAR may be in), or None: a recording, or a
    file that cannot be read (its replay says why)."""
    try:
        with open_regular(path) as file:
            head = file.read(SNIFF_BYTES)
    except (OSError, RecordingError):
        return None
    return ZIP if head.startswith(ZIP_MAGIC) else capture_kind(head)


def may_be_capture(path: Path) -> bool:
    """Whether `path` opens as a zip archive (a HAR may be in it) or a HAR or flow
    file; False for a file that cannot be read (its replay says why)."""
    return file_capture_kind(path) is not None
