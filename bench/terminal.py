"""A real terminal for the app: a private tmux server (its own socket, no user
config) with one window of a fixed size, driven through one control-mode client.

Control mode answers `capture-pane` of a full screen in about a millisecond,
where running `tmux capture-pane` as a process costs ten; so the screen can be
polled as fast as tmux answers, and keys are sent over the same channel. Frames
are captured with their colours (`-e`), since a focused lane differs from the
others only by its border's colour or line style.
"""

from __future__ import annotations

import io
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

SESSION = "bench"
PANE = f"{SESSION}:0.0"
ENV = {"COLORTERM": "truecolor", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
LEAKY_ENV = ("NO_COLOR", "FORCE_COLOR", "TEXTUAL_THEME", "TMUX", "TMUX_PANE")
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
RGB = tuple[int, int, int]


def tmux_path() -> str | None:
    return shutil.which("tmux")


# -- frames -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Cell:
    char: str
    fg: RGB | int | None  # RGB, a palette index, or the default colour


@dataclass
class Frame:
    """One captured screen: `t` is when the capture's answer arrived (perf_counter)."""

    t: float
    raw: list[str]  # lines with their SGR escapes

    @cached_property
    def lines(self) -> list[str]:
        return [SGR.sub("", line) for line in self.raw]

    @cached_property
    def cells(self) -> list[list[Cell]]:
        """Every character with its foreground colour. tmux carries the style from
        one line to the next, so the lines are read in order."""
        fg: RGB | int | None = None
        rows = []
        for line in self.raw:
            row = []
            position = 0
            for match in SGR.finditer(line):
                row += [Cell(char, fg) for char in line[position : match.start()]]
                fg = foreground(match.group(1), fg)
                position = match.end()
            row += [Cell(char, fg) for char in line[position:]]
            rows.append(row)
        return rows

    def text(self) -> str:
        return "\n".join(self.lines)


def foreground(params: str, fg: RGB | int | None) -> RGB | int | None:
    """The foreground after one SGR sequence."""
    codes = [int(code) if code else 0 for code in re.split("[;:]", params)] if params else [0]
    position = 0
    while position < len(codes):
        code = codes[position]
        if code == 0 or code == 39:
            fg = None
        elif 30 <= code <= 37 or 90 <= code <= 97:
            fg = code
        elif code in (38, 48) and position + 1 < len(codes):
            wide = codes[position + 1] == 2
            if code == 38:
                fg = tuple(codes[position + 2 : position + 5]) if wide else codes[position + 2]  # type: ignore[assignment]
            position += 4 if wide else 2
        position += 1
    return fg


# -- processes ----------------------------------------------------------------------
class Process:
    """A process we did not fork (tmux did): watched through a pidfd, which the
    kernel makes readable the moment it exits, and /proc for its peak memory."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd = os.pidfd_open(pid)
        self.peak_kb = 0

    def gone(self) -> bool:
        ready, _, _ = select.select([self._fd], [], [], 0)
        return bool(ready)

    def wait_gone(self, timeout: float) -> float | None:
        """perf_counter when it exited, or None after `timeout` seconds."""
        ready, _, _ = select.select([self._fd], [], [], timeout)
        return time.perf_counter() if ready else None

    def sample_peak(self) -> int:
        """VmHWM, the kernel's high-water mark of its resident set, in KiB."""
        self.peak_kb = max(self.peak_kb, vm_hwm_kb(self.pid) or 0)
        return self.peak_kb

    def kill(self) -> None:
        if not self.gone():
            os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        os.close(self._fd)


def vm_hwm_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None  # a zombie has no memory left to report


# -- tmux ---------------------------------------------------------------------------
class TmuxError(RuntimeError):
    pass


@dataclass
class Terminal:
    """`with Terminal(120, 40) as terminal:` a private tmux server for the run."""

    width: int = 120
    height: int = 40
    cwd: Path | None = None
    capture_seconds: list[float] = field(default_factory=list)  # each capture's round trip

    def __enter__(self) -> Terminal:
        tmux = tmux_path()
        if tmux is None:
            raise TmuxError("tmux is not installed")
        self._scratch = tempfile.TemporaryDirectory(prefix="toolstream-bench-tmux-")
        self._base = [tmux, "-u", "-S", str(Path(self._scratch.name) / "socket"), "-f", os.devnull]
        env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV} | ENV
        size = ["-x", str(self.width), "-y", str(self.height)]
        idle = ["sh", "-c", "exec sleep 2147483647"]  # replaced by each launch
        self._tmux("new-session", "-d", "-s", SESSION, *size, *idle, env=env)
        for option in (
            ("set-option", "-g", "remain-on-exit", "on"),  # the last screen stays readable
            ("set-option", "-g", "window-size", "manual"),
            ("set-option", "-g", "default-terminal", "tmux-256color"),
            ("set-option", "-g", "status", "off"),
        ):
            self._tmux(*option)
        self._tmux("resize-window", "-t", SESSION, *size)
        self._client = subprocess.Popen(
            [*self._base, "-C", "attach-session", "-t", SESSION, "-f", "no-output,ignore-size"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # each command reaches tmux at once
            env=env,
        )
        # Answers are read buffered: a capture is ~14 KB, and reading it line by line
        # from the unbuffered pipe took a system call per byte (~14 ms per capture),
        # which was the resolution of every time measured on screen.
        assert self._client.stdout is not None
        self._answers = io.BufferedReader(self._client.stdout, buffer_size=1 << 16)
        self._sync()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._client.stdin:
                self._client.stdin.close()
            self._client.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._client.kill()
        subprocess.run([*self._base, "kill-server"], capture_output=True, check=False)
        self._scratch.cleanup()

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [*self._base, *args], capture_output=True, text=True, env=env, check=False
        )
        if done.returncode != 0:
            raise TmuxError(f"tmux {args[0]}: {done.stderr.strip()}")
        return done.stdout

    # -- the control channel --------------------------------------------------------
    def _sync(self) -> None:
        """Skip what tmux says on attaching, up to the answer to a marker."""
        marker = f"sync-{os.getpid()}"
        self._send(f"display-message -p {marker}")
        while marker not in self._block():
            pass

    def _send(self, command: str) -> None:
        assert self._client.stdin is not None
        self._client.stdin.write(command.encode() + b"\n")

    def _readline(self) -> bytes:
        line = self._answers.readline()
        if not line:
            raise TmuxError("the tmux control client ended")
        return line

    def _block(self) -> str:
        """The output of our next command: its %begin … %end block. Notifications
        (lines starting with % outside a block) are skipped, and so are blocks that
        tmux itself opens (flags 0, as on attaching), which would shift every
        answer by one."""
        while True:
            begin = self._readline()
            if not begin.startswith(b"%begin"):
                continue
            lines = []
            while not (end := self._readline()).startswith((b"%end", b"%error")):
                lines.append(end)
            if begin.split()[-1] != b"1":
                continue
            text = b"".join(lines).decode("utf-8", errors="replace")
            if end.startswith(b"%error"):
                raise TmuxError(text.strip())
            return text

    def command(self, *args: str) -> str:
        self._send(" ".join(map(quote, args)))
        return self._block()

    # -- what the benchmark does ----------------------------------------------------
    def launch(self, argv: list[str]) -> Process:
        """Start `argv` in the pane (replacing what ran there); `env` execs it, so
        the pane's process is the program itself."""
        env = ["env", *(f"{name}={value}" for name, value in ENV.items())]
        cwd = ["-c", str(self.cwd)] if self.cwd else []
        self.command("respawn-pane", "-k", *cwd, "-t", PANE, *env, *argv)
        for _ in range(100):  # right after a respawn the pane may not name its process yet
            pid = self.command("display-message", "-p", "-t", PANE, "#{pane_pid}").strip()
            if pid:
                return Process(int(pid))
        raise TmuxError("the pane did not start its process")

    def capture(self) -> Frame:
        sent = time.perf_counter()
        text = self.command("capture-pane", "-p", "-e", "-t", PANE)
        now = time.perf_counter()
        self.capture_seconds.append(now - sent)
        return Frame(now, text.splitlines())

    def send_key(self, key: str) -> float:
        """Send one key (tmux's name for it); returns when it was sent."""
        sent = time.perf_counter()
        self.command("send-keys", "-t", PANE, key)
        return sent

    def size(self) -> tuple[int, int]:
        width, height = self.command(
            "display-message", "-p", "-t", PANE, "#{window_width} #{window_height}"
        ).split()
        return int(width), int(height)


def quote(arg: str) -> str:
    """One argument for tmux's command parser: single-quoted unless plain."""
    if re.fullmatch(r"[A-Za-z0-9_./:=,+-]+", arg):
        return arg
    if "'" in arg:
        raise ValueError(f"cannot pass a quote to tmux: {arg!r}")
    return shlex.quote(arg)
