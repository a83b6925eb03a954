"""The stream core and the headless path never import Textual (checked in a
fresh interpreter, the way Harlequin guards its core)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import sys
import {module}
loaded = sorted(name for name in sys.modules if name == "textual" or name.startswith("textual."))
print(",".join(loaded))
"""


@pytest.mark.parametrize(
    "module",
    [
        "toolstream_tui.core",
        "toolstream_tui.core.diff",
        "toolstream_tui.core.fields",
        "toolstream_tui.core.schema",
        "toolstream_tui.core.timing",
        "toolstream_tui.diffing",
        "toolstream_tui.sources",
        "toolstream_tui.sources.http",
        "toolstream_tui.sources.replay",
        "toolstream_tui.sources.stub",
        "toolstream_tui.cli",
        "toolstream_tui.proxy_log",
        "toolstream_tui.proxying",
        "toolstream_tui.sources.forwarder",
        "toolstream_tui.sources.proxy",
    ],
)
def test_module_does_not_import_textual(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == ""


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
    result = subprocess.run(
        [sys.executable, "-c", CHECK.format(module="toolstream_tui.app")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "textual" in result.stdout.split(",")
