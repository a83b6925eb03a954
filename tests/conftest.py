from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from toolstream_stubs import StubServer


@pytest.fixture(autouse=True)
def clean_terminal_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's shell must not leak into snapshots or CLI output."""
    for name in ("NO_COLOR", "TEXTUAL_THEME", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def random_split_stub() -> Iterator[StubServer]:
    """Every scenario, as fast as possible, the body cut into random TCP writes
    (inside lines and inside multi-byte characters)."""
    with StubServer("demo", split="random", seed=11, speed=0) as server:
        yield server


def console_script(name: str) -> str:
    beside_python = Path(sys.executable).with_name(name)
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    assert found, f"console script {name} is not installed"
    return found


CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli() -> CliRunner:
    """Runs the installed `toolstream-tui` console script in a subprocess."""
    return run_cli


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    return subprocess.run(
        [console_script("toolstream-tui"), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env=env,
        check=False,
    )
