from __future__ import annotations

import asyncio
import compileall
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from proxying import RunningProxy

import toolstream_stubs
import toolstream_tui
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.options import WatchOptions
from toolstream_tui.sources.http import HttpRequest, HttpSource


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


FROZEN_CLOCK_VALUE = 0.0


def frozen_clock() -> float:
    """Every elapsed time and arrival time reads 0: pictures do not depend on speed."""
    return FROZEN_CLOCK_VALUE


def pytest_sessionstart(session: pytest.Session) -> None:
    """The CLI's subprocesses start 0.1 s sooner with the packages' bytecode cached:
    written once here, also where PYTHONDONTWRITEBYTECODE keeps them from writing it."""
    for package in (toolstream_tui, toolstream_stubs):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def utf8_safe(text: str) -> str:
    """`text` with each lone surrogate spelled `\\udXXX` (UTF-8 cannot encode one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failure whose diff or output holds a lone surrogate is reported with it
    escaped: pytest-xdist cannot send it from a worker as it is (execnet: "strings
    must be utf-8 encodable"), and the run would end in an INTERNALERROR instead."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.longrepr is not None:
        text = str(report.longrepr)
        if utf8_safe(text) is not text:
            report.longrepr = utf8_safe(text)
    report.sections = [(title, utf8_safe(body)) for title, body in report.sections]


@pytest.fixture(scope="session")
def app_stub() -> Iterator[StubServer]:
    """Every scenario, as fast as possible, one write per event, in a background
    thread (snap_compare runs the app's loop in the test thread)."""
    with StubServer("demo", speed=0) as server:
        yield server


def make_app(server: StubServer, scenario: str, **options: Any) -> ToolstreamApp:
    body = load_scenario(scenario).request or b"{}"  # as the embedded stub sends it
    request = HttpRequest(url=server.scenario_url(scenario), method="POST", body=body)
    source = HttpSource(request, clock=frozen_clock)
    source.label = f"stub:{scenario}"
    app = ToolstreamApp(source, WatchOptions(**{"clock": frozen_clock, **options}))
    app.animation_level = "none"
    return app


# Far above the worst case seen (about 40 s for the 1 MB huge-args stream with
# both cores busy with other work): a deadline only catches a hang, never a slow
# machine.
SETTLE_TIMEOUT = 300.0


async def wait_settled(app: ToolstreamApp, timeout: float = SETTLE_TIMEOUT) -> None:
    """Until everything the stream sent is on screen (fails loudly on timeout)."""
    await asyncio.wait_for(app.settled_event.wait(), timeout)


async def wait_received(app: ToolstreamApp, timeout: float = SETTLE_TIMEOUT) -> None:
    """Until the whole stream has been received (the display may still be paused)."""
    await asyncio.wait_for(app.workers.wait_for_complete(), timeout)


# Scenarios big enough to be slow end to end (a megabyte of arguments): their cases
# are marked slow, so `pytest -m "not slow"` leaves them out.
BIG_SCENARIOS = frozenset({"huge-args"})


def scenario_params(names: Iterable[str]) -> list[Any]:
    """`names` as pytest parameters, the big scenarios marked slow."""
    return [
        pytest.param(name, marks=pytest.mark.slow) if name in BIG_SCENARIOS else name
        for name in names
    ]


MAX_LAYOUT_PASSES = 5  # two are enough: one to mount the lanes, one to size them


async def redrawn_at_rest(pilot: Any) -> None:
    """Redrawn until every lane has the size it wants (known once it has been laid
    out: the display tick does this live; a test that moved the cursor does it here)."""
    screen = pilot.app.stream
    await pilot.pause()
    for _ in range(MAX_LAYOUT_PASSES):
        if screen.lanes.at_rest():
            return
        screen.draw(None)
        await pilot.pause()
    raise AssertionError(f"the lanes found no size in {MAX_LAYOUT_PASSES} redraws")


def settled_then(*keys: str) -> Callable[[Any], Awaitable[None]]:
    """A snapshot's `run_before`: wait until everything is on screen, press `keys`."""

    async def run_before(pilot: Any) -> None:
        await wait_settled(pilot.app)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    return run_before


# -- the proxy, for the modules that define the `stub` it forwards to -----------------
@pytest.fixture(scope="module")
def shared_proxy(stub: StubServer) -> Iterator[RunningProxy]:
    """One proxy per module, forwarding to that module's `stub`."""
    with RunningProxy(stub.base_url) as running:
        yield running


@pytest.fixture
def proxy(shared_proxy: RunningProxy) -> RunningProxy:
    """The module's proxy with a fresh request log."""
    return shared_proxy.fresh()
