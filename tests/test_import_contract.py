"""The layering is a contract a tool checks (import-linter, configured in
pyproject.toml): the core imports no UI, network or file module and no other
layer; sources know nothing of the screen; views are Textual-free; the stub
stands alone; nothing imports the benchmark. A fresh interpreter then checks
what static imports cannot: that a headless run never loads Textual at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import console_script

PROJECT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold() -> None:
    result = subprocess.run(
        [console_script("lint-imports")],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_headless_run_does_not_import_textual() -> None:
    code = (
        "import sys\n"
        "from toolstream_tui.cli import main\n"
        "code = main(['--headless', '--scenario', 'weather', '--speed', '0'])\n"
        "assert code == 0, code\n"
        "print([n for n in sys.modules if n.startswith('textual')], file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stderr.strip() == "[]"


def test_the_app_module_does_import_textual() -> None:
    """The check above can fail: importing the UI loads Textual."""
    code = "import sys, toolstream_tui.app; print('textual' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True"
