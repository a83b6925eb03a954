"""Running the installed console scripts in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolstream_tui.cli import main


def console_script(name: str) -> str:
    beside_python = Path(sys.executable).with_name(name)
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    assert found, f"console script {name} is not installed"
    return found


CliRunner = Callable[..., subprocess.CompletedProcess[str]]


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


def run_in_process(
    capsys: pytest.CaptureFixture[str], *args: str
) -> subprocess.CompletedProcess[str]:
    """The command's `main` in this process, its output captured as `run_cli`'s is:
    the same code path from argv to the report, without starting an interpreter
    (a tenth of a second a run). What only a process shows (its exit, its stdout's
    encoding) is tested through `run_cli`."""
    capsys.readouterr()  # what the test printed before is not the command's
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["toolstream-tui", *args], code, out, err)
