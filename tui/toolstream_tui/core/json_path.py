"""JSON paths as people read them: `$`, `$.city`, `$.items[2]`, `$["odd key"]`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

ROOT = "$"
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def json_path(parts: Iterable[str | int]) -> str:
    path = ROOT
    for part in parts:
        path = child_path(path, part)
    return path
