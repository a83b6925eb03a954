"""`toolstream-stub`: serve one scenario on 127.0.0.1 until Ctrl+C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from toolstream_stubs.faults import FAULTS, FaultError
from toolstream_stubs.scenarios import SPLIT_MODES, ScenarioNotFound, list_scenarios
from toolstream_stubs.server import StubServer

DEFAULT_PORT = 8765


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
        type=int,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port on 127.0.0.1 (default: {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--delay-ms",
        type=float,
        default=None,
        metavar="MS",
        help="milliseconds before each event after the first (default: the scenario's own)",
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
        type=float,
        default=1.0,
        metavar="F",
        help="pace: the delays are divided by F (default: 1); 0 = no delay",
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
        help="a default fault parameter, e.g. seconds=5 (repeatable; ?KEY= overrides it)",
    )
    parser.add_argument("--list", action="store_true", help="list scenarios and exit")
    return parser


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
