"""The proxy's processes grow their table of file descriptors at start, while they
have one thread: later, with threads, each growth would wait for the kernel (an
RCU grace period, ~10 ms under load) in the middle of the requests that need it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads the table's size from Linux's /proc"
)

REPORT_TABLE = """
import os, resource, sys
from toolstream_tui.process import prepare_descriptor_table
limit = int(sys.argv[1])
if limit:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
before = len(os.listdir("/proc/self/fd"))
prepare_descriptor_table()
status = open("/proc/self/status").read()
size = int(status.split("FDSize:")[1].split()[0])
print(size, len(os.listdir("/proc/self/fd")) - before)
"""


def table_after_preparing(limit: int = 0) -> tuple[int, int]:
    """The table's size after `prepare_descriptor_table` in a fresh process (with
    its descriptor limit lowered to `limit`, unless 0), and how many more
    descriptors it then has open than before."""
    done = subprocess.run(
        [sys.executable, "-c", REPORT_TABLE, str(limit)],
        capture_output=True,
        text=True,
        check=True,
    )
    size, opened = done.stdout.split()
    return int(size), int(opened)


def test_the_table_is_grown_for_thousands_of_connections() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    size, opened = table_after_preparing()
    assert size >= min(4096, soft)
    assert opened == 0  # the descriptors it used to grow the table are closed


def test_a_lower_limit_is_grown_to() -> None:
    """A fresh process's table holds 256 here: the limit, 1,000, is reached."""
    size, opened = table_after_preparing(limit=1000)
    assert 1000 <= size < 4096 and opened == 0
