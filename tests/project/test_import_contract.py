"""The layering is a contract a tool checks (import-linter, configured in
pyproject.toml): the core imports no UI, network or file module and no other
layer; sources know nothing of the screen; views are Textual-free; the stub
stands alone; nothing imports the benchmark. A fresh interpreter then checks
what static imports cannot: that a headless run never loads Textual at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.helpers.cli import console_script
from tests.helpers.paths import PROJECT


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


def import_circles(package: str) -> list[tuple[str, str]]:
    """Each direct import a -> b of the package that b leads back to a, imports made
    only for type checking included: a circle is one, whatever the import is for."""
    graph = grimp.build_graph(package)
    return sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported in graph.modules and graph.chain_exists(imported, importer)
    )


@pytest.mark.parametrize("package", ["toolstream_tui", "toolstream_stubs"])
def test_no_module_imports_back_into_itself(package: str) -> None:
    assert import_circles(package) == []


def test_a_circle_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: two modules that import each other are named."""
    package = tmp_path / "circle_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import second\n"
    )
    (package / "second.py").write_text("from . import first\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_circles("circle_probe") == [
        ("circle_probe.first", "circle_probe.second"),
        ("circle_probe.second", "circle_probe.first"),
    ]


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


SSE_BODY = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
    b'"function":{"name":"f","arguments":"{\\"a\\": 1}"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    b"data: [DONE]\n\n"
)


def modules_after_headless(replay: Path, *options: str) -> list[str]:
    """The asyncio and Textual modules a headless replay of `replay` loaded."""
    code = (
        "import json, sys\n"
        "from toolstream_tui.cli import main\n"
        f"code = main(['--headless', '--replay', {str(replay)!r}, *{list(options)!r}])\n"
        "assert code == 0, code\n"
        "loaded = [n for n in sys.modules if n.split('.')[0] in ('asyncio', 'textual')]\n"
        "print(json.dumps(loaded), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert '"status": "finished"' in result.stdout
    return json.loads(result.stderr)


def test_a_headless_replay_at_speed_0_runs_without_an_event_loop(tmp_path: Path) -> None:
    """Importing asyncio costs more than the rest of a short run: a replay that
    never waits is stepped through without an event loop."""
    replay = tmp_path / "body.sse"
    replay.write_bytes(SSE_BODY)
    assert modules_after_headless(replay, "--speed", "0") == []


@pytest.mark.parametrize("options", [("--speed", "1"), ("--speed", "0", "--idle-timeout", "5")])
def test_a_replay_that_may_wait_runs_in_an_event_loop(tmp_path: Path, options: tuple[str]) -> None:
    """The check above can fail: a replay at its recorded pace, or watched for
    silences, waits in asyncio."""
    replay = tmp_path / "body.sse"
    replay.write_bytes(SSE_BODY)
    assert "asyncio" in modules_after_headless(replay, *options)


# Loaded only for what asks for them: a capture file, --otlp, a moment in the stream,
# headers to keep or read back (a request, a recording's timing file).
OPTIONAL_MODULES = (
    "toolstream_tui.commands.capturing",
    "toolstream_tui.sources.captures",
    "toolstream_tui.otlp.watching",
    "toolstream_tui.otlp.spans",
    "toolstream_tui.otlp.export",
    "toolstream_tui.core.upto",
    "toolstream_tui.sources.secrets",
    "toolstream_tui.core.redact",
)


def optional_modules_after(*argv: str) -> list[str]:
    """Which of OPTIONAL_MODULES a run of the command line with `argv` loaded."""
    code = (
        "import json, sys\n"
        "from toolstream_tui.cli import main\n"
        f"main({list(argv)!r})\n"
        f"loaded = [n for n in {OPTIONAL_MODULES!r} if n in sys.modules]\n"
        "print(json.dumps(loaded), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(result.stderr.splitlines()[-1])


def test_a_headless_replay_of_a_recording_loads_no_capture_otlp_or_moment_module(
    tmp_path: Path,
) -> None:
    """Startup is most of a short run: the capture readers, OpenTelemetry and time
    travel load only when the file or the options ask for them."""
    replay = tmp_path / "body.sse"
    replay.write_bytes(SSE_BODY)
    assert optional_modules_after("--headless", "--replay", str(replay), "--speed", "0") == []


def test_a_capture_or_a_moment_loads_its_modules(tmp_path: Path) -> None:
    """The check above can fail: a HAR file loads the capture readers, and
    --until-event the module that cuts the report."""
    har = tmp_path / "run.har"
    har.write_text('{"log": {"version": "1.2", "entries": []}}')
    recording = tmp_path / "body.sse"
    recording.write_bytes(SSE_BODY)
    loaded = optional_modules_after("--headless", "--replay", str(har))
    assert {"toolstream_tui.commands.capturing", "toolstream_tui.sources.captures"} <= set(loaded)
    moment = ("--headless", "--replay", str(recording), "--speed", "0", "--until-event", "1")
    assert optional_modules_after(*moment) == ["toolstream_tui.core.upto"]


def dataclasses_after(*argv: str) -> list[str]:
    """The project's dataclasses that a run of the command line with `argv` made."""
    code = (
        "import dataclasses, json, sys\n"
        "from toolstream_tui.cli import main\n"
        f"main({list(argv)!r})\n"
        "made = sorted(\n"
        "    f'{name}.{value.__name__}'\n"
        "    for name, module in list(sys.modules.items()) if name.startswith('toolstream_tui')\n"
        "    for value in vars(module).values()\n"
        "    if isinstance(value, type) and value.__module__ == name\n"
        "    and dataclasses.is_dataclass(value)\n"
        ")\n"
        "print(json.dumps(made), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(result.stderr.splitlines()[-1])


def test_a_headless_replay_makes_no_dataclass(tmp_path: Path) -> None:
    """Making a dataclass compiles its methods at import (about 3.5M instructions):
    the records on the headless path are plain classes (core/records.py)."""
    replay = tmp_path / "body.sse"
    replay.write_bytes(SSE_BODY)
    assert dataclasses_after("--headless", "--replay", str(replay), "--speed", "0") == []


def test_a_capture_makes_the_dataclasses_of_its_readers(tmp_path: Path) -> None:
    """The check above can fail: the capture readers' records are dataclasses."""
    har = tmp_path / "run.har"
    har.write_text('{"log": {"version": "1.2", "entries": []}}')
    made = dataclasses_after("--headless", "--replay", str(har))
    assert any(name.startswith("toolstream_tui.sources.captures.") for name in made)
