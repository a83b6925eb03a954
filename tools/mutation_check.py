"""Small mutations of the product, each against the tests that hold its promise.

Each mutant replaces one exact piece of source text in a copy of `tui/` made in a
temporary directory; the named tests run (`pytest -x -q -n 0`) with that copy first
on PYTHONPATH, so the checkout itself is never changed (other work in it goes on,
and an interrupted run leaves nothing behind). A mutant is killed when the tests
fail, and survives when they pass. docs/mutation.md lists the mutants and results.

    python tools/mutation_check.py            # every mutant
    python tools/mutation_check.py max-bytes  # those whose name contains this
    python tools/mutation_check.py --list

Exit status: 0 when every mutant was killed, 1 when one survived, 2 on a mutant
whose source text is no longer found (the code moved: update the mutant)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path("tui/toolstream_tui")
TEST_TIMEOUT_S = 600  # a mutant that makes a test hang is killed too (pytest-timeout)


@dataclass(frozen=True)
class Mutant:
    name: str
    promise: str
    path: str  # under tui/toolstream_tui
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments


MUTANTS = (
    Mutant(
        "proxy-crlf",
        "the proxy passes body bytes through exactly",
        "proxy/relay.py",
        '"body": data, "more_body": True}',
        '"body": data.replace(b"\\r\\n", b"\\n"), "more_body": True}',
        ("tests/proxy/test_proxy.py", "-k", "byte_for_byte or untouched"),
    ),
    Mutant(
        "proxy-status",
        "the client gets upstream's status",
        "proxy/relay.py",
        '"status": response.status_code,',
        '"status": 200,',
        ("tests/proxy/test_proxy.py", "-k", "byte_for_byte or status_headers"),
    ),
    Mutant(
        "proxy-first-batch",
        "what came with the response head is forwarded",
        "proxy/relay.py",
        "if (batch := reads.take_held()) is not None:",
        "if (batch := reads.take_held()) is not None and False:",
        ("tests/proxy/test_proxy.py", "-k", "byte_for_byte"),
    ),
    Mutant(
        "proxy-hop-by-hop",
        "hop-by-hop response headers are not forwarded",
        "proxy/relay.py",
        "for name, value in end_to_end(head, frozenset())",
        "for name, value in head",
        ("tests/proxy/test_proxy.py", "-k", "hop_by_hop or status_headers"),
    ),
    Mutant(
        "idle-timeout-kind",
        "an idle-timeout stop is named idle-timeout, not connection-lost",
        "sources/pump.py",
        'IDLE_TIMEOUT: "idle-timeout",',
        'IDLE_TIMEOUT: "connection-lost",',
        (
            "tests/sources/test_recording.py",
            "tests/sources/test_network_faults.py",
            "-k",
            "idle_timeout",
        ),
    ),
    Mutant(
        "max-bytes",
        "--max-bytes N stops past N bytes, not at N",
        "core/session.py",
        "over_total = len(chunk) > room",
        "over_total = len(chunk) >= room",
        ("tests/e2e/test_limits.py", "-k", "max_bytes"),
    ),
    Mutant(
        "max-event-bytes-sse",
        "--max-event-bytes N lets an SSE event of N bytes through",
        "core/sse.py",
        "            if _size(buffer, start, stop, dropped) > limit:",
        "            if _size(buffer, start, stop, dropped) >= limit:",
        ("tests/e2e/test_limits.py", "-k", "sse_event"),
    ),
    Mutant(
        "max-event-bytes-sse-pending",
        "--max-event-bytes N: an SSE event arriving in pieces is cut past N only",
        "core/sse.py",
        "_size(buffer, 0, len(buffer), self._dropped) > limit",
        "_size(buffer, 0, len(buffer), self._dropped) >= limit",
        ("tests/e2e/test_limits.py", "-k", "sse_event"),
    ),
    Mutant(
        "max-event-bytes-ndjson",
        "--max-event-bytes N lets an NDJSON line of N bytes through",
        "core/framing.py",
        "            if len(line) > self.max_event_bytes:",
        "            if len(line) >= self.max_event_bytes:",
        ("tests/e2e/test_limits.py", "-k", "ndjson"),
    ),
    Mutant(
        "max-event-bytes-eventstream",
        "--max-event-bytes N lets an event-stream frame of N bytes through",
        "core/eventstream.py",
        # The inline read's bound: a frame it refuses, `_frame_length` refuses the same
        # way, so only this side of the pair can let a frame of N + 1 bytes through.
        "and total <= most\n",
        "and total <= most + 1\n",
        ("tests/e2e/test_limits.py", "-k", "event_stream_frame"),
    ),
    Mutant(
        "max-event-bytes-json-array",
        "--max-event-bytes N lets a JSON array element of N bytes through",
        "core/framing.py",
        "if end - self._start > self.max_event_bytes:",
        "if end - self._start >= self.max_event_bytes:",
        ("tests/e2e/test_limits.py", "-k", "json_array"),
    ),
    Mutant(
        "max-event-bytes-body",
        "--max-event-bytes N lets a whole JSON body of N bytes through",
        "core/session.py",
        "self._body_bytes > limit",
        "self._body_bytes >= limit",
        ("tests/e2e/test_limits.py", "-k", "json_body"),
    ),
    Mutant(
        "max-request-bytes",
        "--max-request-bytes N forwards a body of N bytes",
        "proxy/forwarder.py",
        "if len(body) > self.config.max_request_bytes:",
        "if len(body) >= self.config.max_request_bytes:",
        ("tests/e2e/test_limits.py", "-k", "max_request_bytes"),
    ),
    Mutant(
        "header-limit",
        "the proxy's header limit forwards a head of exactly the limit",
        "proxy/forwarder.py",
        "if head_bytes > self.config.max_header_bytes:",
        "if head_bytes >= self.config.max_header_bytes:",
        ("tests/e2e/test_limits.py", "-k", "header_limit"),
    ),
    Mutant(
        "header-limit-pieces",
        "a head still arriving is refused only once past the limit",
        "proxy/forwarder.py",
        "super().data_received(data)\n        if self._head_bytes > self.max_head_bytes:",
        "super().data_received(data)\n        if self._head_bytes >= self.max_head_bytes:",
        ("tests/proxy/test_proxy.py", "-k", "head_not_yet_whole or arriving_in_pieces"),
    ),
    Mutant(
        "forwarder-own-session",
        "the watcher's nice counts against the forwarder (one session, one autogroup)",
        "proxy/server.py",
        "                process_group=0,\n",
        "                start_new_session=True,\n",
        ("tests/commands/test_proxy.py", "-k", "steps_behind"),
    ),
    Mutant(
        "forwarder-in-the-watchers-group",
        "a Ctrl-C reaches the forwarder only through the watcher: it drains",
        "proxy/server.py",
        "                process_group=0,\n",
        "",
        ("tests/commands/test_proxy_shutdown.py", "-k", "ctrl_c"),
    ),
    Mutant(
        "forwarder-sigttou",
        "a terminal set to tostop neither stops nor silences the forwarder",
        "proxy/forwarder.py",
        "    signal.signal(signal.SIGTTOU, signal.SIG_IGN)\n",
        "",
        ("tests/proxy/test_watcher.py", "-k", "tostop"),
    ),
    Mutant(
        "forwarder-last-words",
        "a forwarder whose stderr is gone still drains the streams in flight",
        "proxy/forwarder.py",
        "say_if_heard(WATCHER_GONE.format(drain=self.config.shutdown_grace))",
        "print(WATCHER_GONE.format(drain=self.config.shutdown_grace),"
        ' file=__import__("sys").stderr)',
        ("tests/proxy/test_watcher.py", "-k", "killed_watcher_lets and closed"),
    ),
    Mutant(
        "footer-keys-first",
        "the stream's first frame does not wait for the footer's keys",
        "app/screens/stream.py",
        "KeyFooter(compact=True, keys_held=True)",
        "KeyFooter(compact=True, keys_held=False)",
        ("tests/app/test_startup.py", "-k", "first_frame and footer"),
    ),
    Mutant(
        "footer-keys-deadline",
        "a source that sends nothing still gets the footer's keys",
        "app/screens/stream.py",
        "        self.set_timer(KEYS_HELD_AT_MOST_SECONDS, self.footer.show_keys)\n",
        "",
        ("tests/app/test_startup.py", "-k", "sends_nothing"),
    ),
    Mutant(
        "display-timer-after-quit",
        "the display timer draws nothing once the app is quitting",
        "app/screens/stream.py",
        "        if self.app.is_running and self.redraw_due():",
        "        if self.redraw_due():",
        ("tests/app/test_app.py", "-k", "quitting"),
    ),
    Mutant(
        "tape-append-after-read",
        "what a tape keeps after a read of it goes on at the body's end",
        "sources/recording.py",
        "            if self._read_since_kept:\n",
        "            if False:\n",
        ("tests/sources/test_recording.py", "-k", "tape_read"),
    ),
    Mutant(
        "idle-timeout",
        "--idle-timeout S cuts after S seconds",
        "sources/pump.py",
        "asyncio.timeout(seconds if opened else None)",
        "asyncio.timeout(seconds * 10 if opened else None)",
        ("tests/e2e/test_limits.py", "-k", "idle_timeout"),
    ),
    Mutant(
        "request-timeout",
        "--timeout S gives up after S seconds",
        "sources/http.py",
        "timeout = httpx.Timeout(request.timeout, read=None if idle else request.timeout)",
        "timeout = httpx.Timeout(request.timeout * 10, "
        "read=None if idle else request.timeout * 10)",
        ("tests/e2e/test_limits.py", "-k", "request_timeout"),
    ),
    Mutant(
        "proxy-idle-timeout",
        "the proxy's --idle-timeout S cuts a silent upstream after S seconds",
        "proxy/forwarder.py",
        "read=config.idle_timeout,",
        "read=config.idle_timeout and config.idle_timeout * 10,",
        ("tests/e2e/test_limits.py", "-k", "proxys_idle_timeout"),
    ),
    Mutant(
        "stall-threshold",
        "a silence longer than --stall-threshold S is a stall",
        "core/timing.py",
        "t - previous > threshold",
        "t - previous > threshold * 10",
        ("tests/e2e/test_limits.py", "-k", "stall"),
    ),
    Mutant(
        "stall-status-bar",
        "the status bar says 'no data' once the silence passes the threshold",
        "views/status.py",
        "quiet > state.stall_threshold",
        "quiet > state.stall_threshold * 10",
        ("tests/e2e/test_limits.py", "-k", "status_bar"),
    ),
    Mutant(
        "secret-on-screen",
        "a key echoed back by the server never reaches the screen",
        "sources/secrets.py",
        "return self._scrubbed(items) if self.pattern else items",
        "return items",
        ("tests/sources/test_secrets.py", "-k", "no_secret_reaches_the_screen"),
    ),
    Mutant(
        "sse-crlf-across-reads",
        "a CRLF cut between two reads is one line end",
        "core/sse.py",
        'self._skip_lf = chunk.endswith(b"\\r")',
        "self._skip_lf = False",
        ("tests/core/test_sse.py", "tests/core/test_properties.py"),
    ),
    Mutant(
        "sse-lone-cr",
        "a lone CR ends a line (the SSE specification)",
        "core/sse.py",
        '.replace(b"\\r", b"\\n")',
        "",
        ("tests/core/test_sse.py", "tests/core/test_properties.py"),
    ),
    Mutant(
        "sse-id-with-nul",
        "an id field holding NUL is ignored (the SSE specification)",
        "core/sse.py",
        'elif field == "id" and "\\0" not in value:',
        'elif field == "id":',
        ("tests/core/test_sse.py",),
    ),
    Mutant(
        "redact-hold-min",
        "4 or more characters of a key's start never show (README)",
        "core/redact.py",
        "HOLD_MIN = 4",
        "HOLD_MIN = 8",
        ("tests/core/test_redact.py", "-k", "leaves_no_piece"),
    ),
    Mutant(
        "redact-ndjson-lines",
        "with a key in play, each NDJSON line goes on at the read that completes it",
        "core/redact.py",
        "            return _line_ends(pending, self._scanned)",
        "            return []",
        ("tests/core/test_redact.py", "-k", "each_event_is_read"),
    ),
    Mutant(
        "redact-held-time",
        "an event held back for the next piece of its text keeps its read's time",
        "core/redact.py",
        "            self._held_bytes -= len(event.data)\n"
        "            out.append((event.rewritten(), event.t))",
        "            self._held_bytes -= len(event.data)\n"
        "            out.append((event.rewritten(), self._now))",
        ("tests/core/test_redact.py", "-k", "each_event_is_read"),
    ),
    Mutant(
        "redact-frame-crc",
        "a rewritten frame whose CRC had failed still fails it",
        "core/redact.py",
        "return encode_frame(new_headers, edited, intact)",
        "return encode_frame(new_headers, edited)",
        ("tests/core/test_redact.py", "-k", "crc_failed"),
    ),
    Mutant(
        "surrogates-arguments",
        "a UTF-16 pair cut between argument fragments is one character again",
        "core/state.py",
        "        return text if self.pieces.surely_no_surrogates() else rejoin_pairs(text)",
        "        return text",
        ("tests/e2e/test_surrogates.py", "-k", "any_surrogates"),
    ),
    Mutant(
        "lone-surrogate-keys",
        "a lone surrogate in an argument's key is named",
        "core/surrogates.py",
        "                if lone_offsets(key):",
        "                if False:",
        ("tests/e2e/test_surrogates.py", "-k", "every_output_path or named_by_path"),
    ),
    Mutant(
        "whitespace-arguments",
        "whitespace-only arguments mean {}",
        "core/state.py",
        'if raw.strip() == "":',
        'if raw == "":',
        ("tests/core/test_properties.py", "-k", "reassemble_exactly"),
    ),
    Mutant(
        "field-scanner-lazy-key",
        "a field is known as soon as its key's closing quote arrives",
        "core/fields.py",
        "        if self._key_string:\n",
        "        if self._key_string and at + 1 < end:\n",
        ("tests/core/test_timing.py", "-k", "not_complete_before"),
    ),
)


def mutated_copy(mutant: Mutant, into: Path) -> None:
    """`tui/` copied under `into`, with the mutant's change made in the copy."""
    shutil.copytree(
        ROOT / "tui", into / "tui", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    target = into / PACKAGE / mutant.path
    if not target.is_file():  # the code moved: the mutant is updated, not the run crashed
        raise LookupError(f"{mutant.name}: {mutant.path} is no file of the package any more")
    source = target.read_text(encoding="utf-8")
    count = source.count(mutant.old)
    if count != 1:
        raise LookupError(f"{mutant.name}: {mutant.old!r} found {count} times in {mutant.path}")
    target.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")


def run_tests(tests: tuple[str, ...], tui_dir: Path | None) -> tuple[bool, str]:
    """Whether the tests passed, and pytest's last line."""
    env = dict(os.environ)
    if tui_dir is not None:  # ahead of the editable install, also in subprocesses
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tui_dir), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0"]
    result = subprocess.run(
        [*command, "-o", f"timeout={TEST_TIMEOUT_S}", *tests],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    failed = [line.split(" - ")[0] for line in lines if line.startswith(("FAILED", "ERROR"))]
    summary = lines[-1] if lines else result.stderr.strip()[-200:]
    return result.returncode == 0, "; ".join([*failed[:1], summary])


def check(mutant: Mutant) -> str:
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as scratch:
        mutated_copy(mutant, Path(scratch))
        passed, summary = run_tests(mutant.tests, Path(scratch) / "tui")
    return ("SURVIVED" if passed else "killed") + f"  ({summary})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="?", default="", help="run the mutants whose name has this")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip running the tests unmutated first"
    )
    args = parser.parse_args(argv)
    chosen = [mutant for mutant in MUTANTS if args.only in mutant.name]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name}: {mutant.promise}\n    tests: {' '.join(mutant.tests)}")
        return 0
    if not args.no_baseline:
        for tests in dict.fromkeys(mutant.tests for mutant in chosen):
            passed, summary = run_tests(tests, None)
            if not passed:
                print(f"baseline fails, no mutant can be judged: {' '.join(tests)}: {summary}")
                return 1
    survived = 0
    for mutant in chosen:
        started = time.monotonic()
        try:
            outcome = check(mutant)
        except LookupError as exc:
            print(f"{mutant.name}: {exc}")
            return 2
        survived += outcome.startswith("SURVIVED")
        print(f"{mutant.name}: {outcome} in {time.monotonic() - started:.0f} s", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mutants killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
