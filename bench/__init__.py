"""The toolstream-tui benchmarks, run from the repository's root: `python -m bench`."""
