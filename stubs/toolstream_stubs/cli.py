"""`toolstream-stub`: serve one scenario on 127.0.0.1 until Ctrl+C or SIGTERM."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from toolstream_stubs.faults import FAULTS, FaultError
from toolstream_stubs.scenarios import SPLIT_MODES, ScenarioNotFound, list_scenarios
from toolstream_stubs.server import StubServer

DEFAULT_PORT = 8765
MAX_PORT = 65535
# Bounds keep every pacing wait finite and within what a thread can wait: at most
# MAX_DELAY_MS / MIN_SPEED milliseconds (under 17 hours) before an event.
MAX_DELAY_MS = 60_000.0
MIN_SPEED = 0.001


class _Terminated(Exception):
    """Raised from the SIGTERM handler to unwind the wait in `main`."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolstream-stub",
        description="Serve scripted LLM tool-call streams on 127.0.0.1 until Ctrl+C or SIGTERM. "
        "Each scenario is sent in its own dialect and framing at whatever path is asked: "
        "every provider's streaming path (/v1/chat/completions, /v1/messages, /api/chat, ...) "
        "serves --scenario, the same path after /scenarios/NAME serves scenario NAME, and "
        "GET /scenarios lists them.",
    )
    parser.add_argument(
        "--scenario", metavar="NAME", default="demo", help="scenario to serve (default: demo)"
    )
    parser.add_argument(
        "--port",
        type=number_in(int, 0, MAX_PORT),
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port on 127.0.0.1, 0..{MAX_PORT} (default: {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--delay-ms",
        type=number_in(float, 0, MAX_DELAY_MS),
        default=None,
        metavar="MS",
        help=f"milliseconds before each event after the first, 0..{MAX_DELAY_MS:g} "
        "(default: the scenario's own)",
    )
    parser.add_argument(
        "--split",
        choices=SPLIT_MODES,
        default="event",
        help="how the body is cut into writes: one per event, at random points (inside lines "
        "and characters), or whole (default: event)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed for --split random (default: 0)"
    )
    parser.add_argument(
        "--speed",
        type=speed,
        default=1.0,
        metavar="F",
        help=f"pace: the delays are divided by F, 0 or at least {MIN_SPEED:g} "
        "(default: 1); 0 = no delay",
    )
    parser.add_argument(
        "--fault",
        choices=FAULTS,
        default=None,
        help="network fault for every response (a URL's ?fault= picks one per request)",
    )
    parser.add_argument(
        "--fault-param",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a default parameter of --fault, or of the fault a request's ?fault= picks, "
        "e.g. seconds=5 (repeatable; ?KEY= overrides it)",
    )
    parser.add_argument("--list", action="store_true", help="list scenarios and exit")
    return parser


def number_in(kind: Callable[[str], float], low: float, high: float) -> Callable[[str], float]:
    """An argparse `type`: a finite number read by `kind` (int or float) in low..high.
    Anything else is a usage error (exit 2) that names the range."""
    noun = "an integer" if kind is int else "a number"

    def parse(text: str) -> float:
        value = finite(kind, text)
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {noun} {low:g}..{high:g}, got {text!r}")
        return value

    return parse


def speed(text: str) -> float:
    """An argparse `type` for --speed: 0 (no delay), or a finite number of at least
    MIN_SPEED, so that no delay divided by it outgrows what a thread can wait."""
    value = finite(float, text)
    if value is None or value < 0 or 0 < value < MIN_SPEED:
        rule = f"0 (no delay) or a number >= {MIN_SPEED:g}"
        raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}")
    return value


def finite(kind: Callable[[str], float], text: str) -> float | None:
    """`text` read by `kind`, or None when it is no finite number."""
    try:
        value = kind(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key, value


def print_scenario_list() -> None:
    infos = list_scenarios()
    width = max(len(info.name) for info in infos)
    for info in infos:
        print(f"{info.name:<{width}}  {info.description}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        print_scenario_list()
        return 0
    previous_term = signal.signal(signal.SIGTERM, _raise_terminated)
    # A process started in the background by a script inherits SIGINT ignored;
    # the stub still stops on it, as it says.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return serve(args)
    except (KeyboardInterrupt, _Terminated):
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)


def serve(args: argparse.Namespace) -> int:
    """Start the server, print the listening line, and block until interrupted."""
    try:
        server = start_server(args)
    except (ScenarioNotFound, FaultError) as error:
        print(f"toolstream-stub: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"toolstream-stub: cannot listen on port {args.port}: {error}", file=sys.stderr)
        return 1
    try:
        print(f"listening on {server.url}", flush=True)
        threading.Event().wait()
    finally:
        server.stop()
    return 0


def start_server(args: argparse.Namespace) -> StubServer:
    server = StubServer(
        args.scenario,
        port=args.port,
        delay_ms=args.delay_ms,
        split=args.split,
        seed=args.seed,
        speed=args.speed,
        fault=args.fault,
        fault_params=dict(args.fault_param),
    )
    return server.start()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


if __name__ == "__main__":
    raise SystemExit(main())
