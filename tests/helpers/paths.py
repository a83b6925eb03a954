"""Where the project's files are, for tests at any depth of tests/."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PROJECT = TESTS.parent
DATA = TESTS / "data"
