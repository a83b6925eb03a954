"""What the process does for itself, under every command: its garbage collection,
its table of file descriptors, writing to stdout, and leaving once a watch is over."""

from __future__ import annotations

import codecs
import contextlib
import gc
import io
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn, TextIO

from .core.exit_codes import EXIT_BROKEN_PIPE, EXIT_OUTPUT_FAILED, SIGNAL_BASE

CONSOLE_SCRIPT = "toolstream-tui"  # who says what went wrong, where no command does
JSON_ESCAPES = "toolstream-json-escapes"  # the codec error handler registered below


def collect_garbage_rarely() -> None:
    """Collect the old generations rarely: the app's stream allocates a few small
    objects per event and keeps almost none in cycles, and loading Textual
    allocates many that all stay alive; collecting them over and over (every 700
    allocations) cost about a quarter of the app's time on a 1 MB stream, and 7%
    of loading it. The young generation is collected every 5,000 allocations:
    every 100,000, each collection took 150 ms on 64 streaming calls, a pause a
    key waits behind; at 5,000 they take under 10 ms and no more in all. The
    middle one every 10 young ones, for the same reason: the frames of a screen
    that answers keys leave Textual's strips and caches in cycles, and every 50,
    each collection of them took 45-100 ms; every 10, 11-18 ms. A headless report
    collects as rarely: its stream's events allocate the same and leave no cycles
    (on the bench's Vertex AI stream, 37k events: 9M instructions fewer of
    3,018M, peak RSS unchanged)."""
    gc.set_threshold(5_000, 10, 1000)


def tune_garbage_collector() -> None:
    """Collect rarely, and never walk again the objects alive by now (Textual's whole
    widget tree in the app; httpx and uvicorn in the proxy's forwarder, where the
    default collections, walking them every few hundred requests' worth of
    allocations, put tens of milliseconds on a chunk's way: bench/proxy.py's p99
    fell from ~70 ms to ~26 ms without them)."""
    gc.freeze()
    collect_garbage_rarely()


PREPARED_DESCRIPTORS = 4096  # a proxy's connections come in pairs: client and upstream


def prepare_descriptor_table(count: int = PREPARED_DESCRIPTORS) -> None:
    """Grow this process's table of file descriptors to `count` (or the process's
    limit) now, while it has one thread. Linux grows the table as descriptors are
    opened (at 64, 128, 256, ...), and in a process with threads each growth waits
    for an RCU grace period: in the proxy's forwarder, the socket that became
    descriptor 64, in the middle of 64 requests starting at once, took ~10 ms, and
    every chunk waited with it. The table never shrinks; it costs 8 bytes a slot."""
    try:
        import resource  # POSIX only, as the proxy is
    except ImportError:
        return
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = min(count, soft) - 1
    if highest <= 2:
        return
    with contextlib.suppress(OSError):
        spare = os.open(os.devnull, os.O_RDONLY)
        try:
            if spare < highest:
                os.dup2(spare, highest, inheritable=False)
                os.close(highest)
        finally:
            os.close(spare)


def _escaped_as_json(error: UnicodeError) -> tuple[str, int]:
    """What an encoding cannot write, as JSON's `\\uXXXX` escapes (a pair for a
    character past U+FFFF): still the same JSON in a report, still readable in a
    line of text."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    units = error.object[error.start : error.end].encode("utf-16-be", "surrogatepass")
    escaped = "".join(f"\\u{units[at] << 8 | units[at + 1]:04x}" for at in range(0, len(units), 2))
    return escaped, error.end


codecs.register_error(JSON_ESCAPES, _escaped_as_json)


def prepare_standard_streams() -> None:
    """Standard streams every output path can write to, whatever the stream carried.
    A stdout that cannot encode every character (`PYTHONIOENCODING=cp1252`, a
    Windows console) writes the rest as JSON escapes instead of failing; a closed
    stdout or stderr (`>&-`) becomes /dev/null, which also keeps the descriptor
    from going to the next file opened."""
    for name in ("stdin", "stdout", "stderr"):
        if getattr(sys, name) is None:
            mode = "r" if name == "stdin" else "w"
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115
    stdout = sys.stdout
    encoding = getattr(stdout, "encoding", None) or "ascii"
    if isinstance(stdout, io.TextIOWrapper) and codecs.lookup(encoding).name != "utf-8":
        stdout.reconfigure(errors=JSON_ESCAPES)
    if not isinstance(sys.stderr, UnrefusingStream):
        sys.stderr = UnrefusingStream(sys.stderr)


class UnrefusingStream:
    """stderr whose writes never raise: a message that cannot be shown (stderr on a
    full disk, `2>/dev/full`) must not change what the command does or its exit code."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def plain_reason(exc: BaseException) -> str:
    """Why something failed, as plain words on one line for the end of a message:
    "no such file or directory", not "[Errno 2] No such file or directory: 'x'"."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    text = " ".join(text.split()) or type(exc).__name__
    return text[:1].lower() + text[1:]


class OutputFailed(Exception):
    """stdout refused a write for another reason than its reader leaving: a full
    disk, an I/O error."""

    def __init__(self, error: OSError) -> None:
        self.reason = plain_reason(error)
        super().__init__(self.reason)


@contextlib.contextmanager
def refused_as_output_failed() -> Iterator[None]:
    """Writes to stdout inside: BrokenPipeError when its reader went away (as it
    is), OutputFailed when it refused them otherwise."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputFailed(exc) from None


def output_failed(failure: OutputFailed, prog: str = CONSOLE_SCRIPT) -> int:
    """Say once why stdout took nothing more, and send the rest nowhere (so the
    flush at exit cannot fail again); the exit code that means it."""
    say_if_heard(f"{prog}: cannot write to stdout: {failure.reason}")
    stop_writing_stdout()
    return EXIT_OUTPUT_FAILED


def say_if_heard(line: str) -> None:
    """One line on stderr, where stderr still takes it: a closed terminal or a
    reader gone must not stop what the line is about."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def write_out(text: str) -> None:
    """Text to stdout, flushed; raises BrokenPipeError when its reader went away
    and OutputFailed when it refused the write otherwise."""
    with refused_as_output_failed():
        sys.stdout.write(text)
        sys.stdout.flush()


def stop_writing_stdout() -> None:
    """The reader went away (`| head`): what is left for stdout goes nowhere, so
    no later write, and no flush at exit, fails."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def write_utf8_to_stdout(pieces: Iterable[bytes | memoryview]) -> None:
    """UTF-8 text to stdout: straight to its binary buffer where the text layer would
    write the same bytes (it encodes UTF-8 and leaves line ends alone), so a 1 MB
    report is not decoded only to be encoded again; through the text layer otherwise."""
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    encoding = getattr(stream, "encoding", None) or "ascii"
    with refused_as_output_failed():
        if buffer is None or codecs.lookup(encoding).name != "utf-8" or os.linesep != "\n":
            stream.writelines(bytes(piece).decode() for piece in pieces)
            stream.flush()
            return
        stream.flush()
        buffer.writelines(pieces)
        buffer.flush()


class TerminateAsInterrupt:
    """Within it, SIGTERM (a CI job's timeout or cancel, `kill`) stops the reading
    as Ctrl-C does, so that what arrived is still reported and bundled; once the
    reading is over (`done_reading`) it only marks the run terminated, and the
    report and bundle are written whole. A second SIGTERM kills at once. The main
    thread only (where signals are handled)."""

    def __init__(self) -> None:
        self.terminated = False
        self.reading = True
        self._previous: Any = None

    def __enter__(self) -> TerminateAsInterrupt:
        self._previous = signal.signal(signal.SIGTERM, self._on_terminate)
        return self

    def __exit__(self, *_: object) -> None:
        signal.signal(signal.SIGTERM, self._previous)

    def done_reading(self) -> None:
        self.reading = False

    @property
    def status(self) -> int | None:
        """143 once terminated, as a shell reports a command SIGTERM ended."""
        return SIGNAL_BASE + signal.SIGTERM if self.terminated else None

    def _on_terminate(self, _signum: int, _frame: Any) -> None:
        self.terminated = True
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.reading:
            signal.raise_signal(signal.SIGINT)  # asyncio's own Ctrl-C handling, where it runs


def exit_now(code: int) -> NoReturn:
    """End the process as soon as a watch is over. By then everything it writes is
    written and closed: the recording with the source, bundles and exports before
    the report or the app's exit, and the app's event loop ends only once every
    task has finished. What is left is the interpreter freeing the stream's
    objects one by one, which took longer than the rest of quitting after a 10 MB
    stream, and a sixth of a headless run on a small one, for nobody."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except OSError as exc:  # what was written last, refused at the last flush
        code = output_failed(OutputFailed(exc))
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)
