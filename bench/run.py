"""Kept so `python bench/run.py` still works: it is `python -m bench throughput`."""

import sys
from pathlib import Path

# The repository's root instead of bench/, whose modules must not shadow others.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.throughput import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
