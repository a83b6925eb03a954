"""CPU time of a running process, read from the kernel (Linux: /proc). Imports
nothing of the bench, so a script (bench/proxy.py) and the package share it."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int, children: bool = True) -> float | None:
    """User and system CPU of a process (and its children) so far, in the kernel's
    ticks (10 ms); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split() if children else []
    except OSError:
        return None
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(int(child)) or 0.0 for child in kids)
