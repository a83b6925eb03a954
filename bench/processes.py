"""Whole processes, timed from the outside: a headless run as the child of a small
starter (bench/spawn.py: its peak RSS from wait4, the kernel's figure for that
one child), and the app in the terminal, watched frame by frame until a marker
shows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .terminal import Frame, Process, Terminal

SPAWN = Path(__file__).with_name("spawn.py")
GONE_AFTER_Q = 30.0  # seconds to wait after `q` before killing the app


class AppExited(RuntimeError):
    """The app ended while we were waiting for something on its screen."""


def console_script(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"console script {name} is not installed")
    return found


def app_argv(*args: str) -> list[str]:
    return [console_script("toolstream-tui"), *args]


def replay_argv(path: Path, *extra: str, speed: float = 0) -> list[str]:
    return app_argv("--replay", str(path), "--speed", f"{speed:g}", *extra)


# -- headless -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HeadlessRun:
    seconds: float
    peak_kb: int
    cpu_seconds: float


def run_headless(argv: list[str], timeout: float = 1800) -> HeadlessRun:
    """Fork to exit, stdout to /dev/null, started by bench/spawn.py (see there why
    not by this process); it must exit 0."""
    with tempfile.TemporaryFile() as errors:
        done = subprocess.run(
            [sys.executable, str(SPAWN), f"{timeout:g}", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            check=False,
        )
        errors.seek(0)
        said = errors.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
    if done.returncode != 0:
        raise RuntimeError(f"bench/spawn.py exited {done.returncode}: {said[0]}")
    run = json.loads(done.stdout)
    if run["returncode"] != 0:
        raise RuntimeError(f"{Path(argv[0]).name} exited {run['returncode']}: {said[0]}")
    return HeadlessRun(run["seconds"], run["peak_kb"], run["cpu_seconds"])


# -- the app in the terminal ------------------------------------------------------
@dataclass
class Watch:
    """Polls the screen and the process's peak memory, and keeps the intervals
    between captures: the resolution of every time measured on screen."""

    terminal: Terminal
    interval: float = 0.0  # between captures; 0 = as fast as tmux answers
    gaps: list[float] = field(default_factory=list)
    last: Frame | None = None

    def frame(self, process: Process | None = None) -> Frame:
        frame = self.terminal.capture()
        if process is not None:
            process.sample_peak()
        self.last = frame
        return frame

    def until(
        self, process: Process, shows: Callable[[Frame], bool], timeout: float
    ) -> Frame | None:
        """The first frame that `shows`; None after `timeout` seconds. Raises
        AppExited if the process ends first."""
        deadline = time.perf_counter() + timeout
        previous = None
        while True:
            frame = self.frame(process)
            if previous is not None:
                self.gaps.append(frame.t - previous.t)
            previous = frame
            if shows(frame):
                return frame
            if process.gone():
                raise AppExited(screen_summary(frame))
            if frame.t > deadline:
                return None
            if self.interval:
                time.sleep(self.interval)


def screen_summary(frame: Frame) -> str:
    lines = [line.strip() for line in frame.lines if line.strip()]
    return " / ".join(lines[:3])[:300] or "(blank screen)"


def quit_app(terminal: Terminal, process: Process, key: str) -> tuple[float, bool]:
    """Press `key` until the app is gone (a modal screen takes the first press);
    seconds from the first press to exit, and whether it had to be killed."""
    first = None
    deadline = time.perf_counter() + GONE_AFTER_Q
    while time.perf_counter() < deadline:
        sent = terminal.send_key(key)
        first = first or sent
        gone = process.wait_gone(min(1.0, deadline - time.perf_counter()))
        if gone is not None:
            return gone - first, False
    process.kill()
    process.wait_gone(5)
    return time.perf_counter() - (first or deadline), True
