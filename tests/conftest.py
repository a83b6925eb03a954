from __future__ import annotations

import compileall
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import toolstream_stubs
import toolstream_tui
from tests.helpers.cli import CliRunner, run_cli, run_in_process
from toolstream_stubs import StubServer

if TYPE_CHECKING:
    from tests.helpers.proxy import RunningProxy


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


@pytest.fixture
def cli() -> CliRunner:
    """Runs the installed `toolstream-tui` console script in a subprocess."""
    return run_cli


@pytest.fixture
def cli_in_process(capsys: pytest.CaptureFixture[str]) -> CliRunner:
    """Runs the command's `main` in the test's process (see `run_in_process`)."""
    return lambda *args: run_in_process(capsys, *args)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers per core. Tests wait on terminals, servers,
    subprocesses and paced streams: with one worker per core the 2 cores sat idle
    a quarter of the run (475 CPU-seconds in 307 s), and a second worker per core
    fills that: 240-272 s with 4 workers, 272 s with 6 (the same CPU time; more
    workers only collect again)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (cores or 1)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The CLI's subprocesses start 0.1 s sooner with the packages' bytecode cached:
    written once here, also where PYTHONDONTWRITEBYTECODE keeps them from writing it."""
    for package in (toolstream_tui, toolstream_stubs):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collecting loaded (the SDKs the oracle tests import: anthropic alone holds
    a quarter of a million objects) is kept out of every later collection: with it
    traversed, an app test took about a third more CPU."""
    gc.collect()
    gc.freeze()


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


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    """The stub a module's tests send requests to (and its proxy forwards to): every
    scenario at full speed, `weather` where a URL names none."""
    with StubServer("weather", speed=0) as server:
        yield server


# -- the proxy, for the modules that use `stub` --------------------------------------
@pytest.fixture(scope="module")
def shared_proxy(stub: StubServer) -> Iterator[RunningProxy]:
    """One proxy per module, forwarding to that module's `stub`."""
    from tests.helpers.proxy import RunningProxy  # only the proxy's modules load it

    with RunningProxy(stub.base_url) as running:
        yield running


@pytest.fixture
def proxy(shared_proxy: RunningProxy) -> RunningProxy:
    """The module's proxy with a fresh request log."""
    return shared_proxy.fresh()
