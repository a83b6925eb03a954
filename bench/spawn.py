"""Run a command as a child of this small process: `python bench/spawn.py TIMEOUT
ARGV...` prints its wall time, CPU time, peak RSS and exit status as one JSON line.

The kernel's peak RSS of a child (wait4's ru_maxrss) counts the memory of the
process that started it: the high-water mark of the memory it was spawned with
is kept across exec. Started by the bench itself, which holds whole streams when
it has just generated them, a headless run of 130 MB measured 273 MB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    timeout, command = float(argv[0]), argv[1:]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    timer = threading.Timer(timeout, child.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)  # blocking: no CPU taken from the child
    finally:
        timer.cancel()
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    facts = {"seconds": seconds, "cpu_seconds": cpu, "peak_kb": usage.ru_maxrss}
    print(json.dumps({**facts, "returncode": code}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
