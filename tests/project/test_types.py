"""The package and the stub server are type-checked, the core strictly (mypy,
configured in pyproject.toml); a `# type: ignore` that no longer silences anything
fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import PROJECT


def mypy(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=PROJECT, check=False)


def test_the_package_type_checks_and_the_core_strictly(tmp_path: Path) -> None:
    result = mypy(cache=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_a_type_error_is_found(tmp_path: Path) -> None:
    """The check above can fail: the same configuration names a wrong type."""
    probe = tmp_path / "probe.py"
    probe.write_text("def twice(n: int) -> int:\n    return n * 2\n\n\ntwice('no')\n")
    result = mypy(str(probe), cache=tmp_path / "cache")
    assert result.returncode == 1
    assert 'incompatible type "str"; expected "int"' in result.stdout
