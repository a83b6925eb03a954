"""What `toolstream-tui proxy` adds: `python bench/proxy.py` (`--quick`: seconds).

1. Latency per chunk. An upstream (uvicorn, its own process) stamps every SSE event
   with the moment it writes it (CLOCK_MONOTONIC, one clock for every process on the
   machine); 64 clients in this process read paced streams at once, directly and
   through `toolstream-tui proxy --headless` (a third process), and note when each
   event reaches them. Added latency: proxied minus direct.
2. Throughput. One big-args stream (bench/streams.py) served as fast as possible,
   read whole, directly and through the proxy; best of N.

The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import streams
import uvicorn

from toolstream_tui.sources.proxy import bind

HERE = Path(__file__).resolve()
# Agents send a key; the proxy must keep it out of what it shows, on every read.
AUTHORIZATION = {"Authorization": "Bearer sk-proj-" + "Bench0Key1" * 16}
WRITE_SIZE = 64 * 1024
LISTENING = re.compile(r"listening on (http://\S+)")
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Plan:
    streams: int
    events: int
    interval_ms: float
    bulk_argument_bytes: int
    repeat: int


FULL = Plan(streams=64, events=150, interval_ms=20, bulk_argument_bytes=300_000, repeat=3)
QUICK = Plan(streams=4, events=10, interval_ms=5, bulk_argument_bytes=5_000, repeat=1)
WARM_UP = Plan(streams=2, events=3, interval_ms=1, bulk_argument_bytes=0, repeat=1)


# -- the upstream (its own process) ---------------------------------------------------


def paced_event(stamp: int, finish: str | None = None) -> bytes:
    delta = {} if finish else {"content": f"{stamp} "}
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def upstream_app(bulk: bytes) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        query = {key: values[0] for key, values in parse_qs(scope["query_string"].decode()).items()}
        head = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        if scope["path"] == "/paced":
            await asyncio.sleep(float(query["offset_ms"]) / 1000)
            for _ in range(int(query["events"])):
                event = paced_event(time.monotonic_ns())
                await send({"type": "http.response.body", "body": event, "more_body": True})
                await asyncio.sleep(float(query["interval_ms"]) / 1000)
            tail = paced_event(0, "stop") + b"data: [DONE]\n\n"
        else:
            for start in range(0, len(bulk), WRITE_SIZE):
                piece = bulk[start : start + WRITE_SIZE]
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            tail = b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    return app


def serve_upstream(bulk_argument_bytes: int) -> None:
    bulk = streams.big_args("bench-proxy", bulk_argument_bytes).body
    sock = bind("127.0.0.1", 0)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]} {len(bulk)}", flush=True)
    config = uvicorn.Config(
        upstream_app(bulk), http="h11", interface="asgi3", lifespan="off", log_config=None
    )
    uvicorn.Server(config).run(sockets=[sock])


# -- processes --------------------------------------------------------------------


def start(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """A server process, and the first line it wrote about where it listens."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8"
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    stream = process.stdout if "--serve-upstream" in command else process.stderr
    assert stream is not None
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        if LISTENING.search(line):
            return process, line
    process.kill()
    raise SystemExit(f"bench/proxy.py: {command[:3]} did not start")


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- measuring ----------------------------------------------------------------------


async def read_paced(http: httpx.AsyncClient, url: str, latencies: list[float]) -> None:
    buffer = b""
    body = b'{"model": "bench", "stream": true}'
    async with http.stream("POST", url, content=body, headers=AUTHORIZATION) as response:
        async for chunk in response.aiter_raw():
            now = time.monotonic_ns()
            buffer += chunk
            *events, buffer = buffer.split(b"\n\n")
            for event in events:
                if event == b"data: [DONE]":
                    continue
                content = json.loads(event[6:])["choices"][0]["delta"].get("content")
                if content:
                    latencies.append((now - int(content)) / 1e6)


async def paced_latencies(base: str, plan: Plan) -> list[float]:
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=plan.streams + 8)
    async with httpx.AsyncClient(timeout=120, limits=limits, trust_env=False) as http:
        reads = [
            read_paced(
                http,
                f"{base}/paced?events={plan.events}&interval_ms={plan.interval_ms}"
                f"&offset_ms={plan.interval_ms * i / plan.streams}",
                latencies,
            )
            for i in range(plan.streams)
        ]
        await asyncio.gather(*reads)
    return latencies


async def bulk_seconds(base: str) -> tuple[float, int]:
    async with httpx.AsyncClient(timeout=120, trust_env=False) as http:
        start_t = time.perf_counter()
        size = 0
        async with http.stream(
            "POST", f"{base}/bulk", content=b"{}", headers=AUTHORIZATION
        ) as response:
            async for chunk in response.aiter_raw():
                size += len(chunk)
        return time.perf_counter() - start_t, size


@dataclass
class LatencyFigures:
    events: int
    median_ms: float
    p99_ms: float
    max_ms: float


def figures(latencies: list[float]) -> LatencyFigures:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return LatencyFigures(len(ordered), statistics.median(ordered), p99, ordered[-1])


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU of a process and its children so far (Linux: /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(int(child)) or 0.0 for child in children)


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def measure(plan: Plan) -> dict[str, Any]:
    results: dict[str, Any] = {"plan": asdict(plan), "load_start": load()}
    upstream_command = [sys.executable, str(HERE), "--serve-upstream"]
    upstream, line = start([*upstream_command, str(plan.bulk_argument_bytes)])
    upstream_url, bulk_size = LISTENING.search(line).group(1), int(line.split()[-1])  # type: ignore[union-attr]
    proxy_command = [sys.executable, "-m", "toolstream_tui", "proxy", "--headless"]
    try:
        proxy, line = start([*proxy_command, "--upstream", upstream_url, "--listen", "127.0.0.1:0"])
        proxy_url = LISTENING.search(line).group(1)  # type: ignore[union-attr]
        try:
            for name, base in (("direct", upstream_url), ("proxied", proxy_url)):
                asyncio.run(paced_latencies(base, WARM_UP))  # connections made, code loaded
                before = cpu_seconds(proxy.pid)
                latencies = asyncio.run(paced_latencies(base, plan))
                results[name] = asdict(figures(latencies))
                after = cpu_seconds(proxy.pid)
                if name == "proxied" and before is not None and after is not None:
                    results["proxy_cpu_us_per_event"] = (after - before) / len(latencies) * 1e6
                runs = [asyncio.run(bulk_seconds(base)) for _ in range(plan.repeat)]
                assert all(size == bulk_size for _, size in runs), (runs, bulk_size)
                results[f"{name}_bulk_seconds"] = min(seconds for seconds, _ in runs)
        finally:
            stop(proxy)
    finally:
        stop(upstream)
    results["bulk_bytes"] = bulk_size
    results["added_median_ms"] = results["proxied"]["median_ms"] - results["direct"]["median_ms"]
    results["throughput_ratio"] = results["direct_bulk_seconds"] / results["proxied_bulk_seconds"]
    results["load_end"] = load()
    return results


# -- with the request list in a real terminal ---------------------------------------

# What `f` flips at the end of the status row (its last words may be cut at 120 columns).
FOLLOWING = (re.compile(r"· following\b"), re.compile(r"· f: follow\b"))
KEY_TIMEOUT_S = 20.0


def following(frame: Any) -> bool | None:
    status = frame.lines[0] if frame.lines else ""
    if FOLLOWING[0].search(status):
        return True
    return False if FOLLOWING[1].search(status) else None


def free_port() -> int:
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return int(port)


def press_follow_until(terminal: Any, done: Any, seed: int) -> list[float | None]:
    """`f` pressed a random 50-200 ms after each effect until `done` is set; each
    press's time to the first captured frame whose status row flipped (None: no
    flip within KEY_TIMEOUT_S)."""
    rng = random.Random(seed)
    latencies: list[float | None] = []
    while not done.is_set():
        time.sleep(rng.uniform(0.05, 0.2))
        before = following(terminal.capture())
        if before is None:
            continue
        sent = terminal.send_key("f")
        while True:
            frame = terminal.capture()
            if following(frame) not in (None, before):
                latencies.append((frame.t - sent) * 1000)
                break
            if frame.t - sent > KEY_TIMEOUT_S:
                latencies.append(None)
                break
    return latencies


def measure_with_app(plan: Plan) -> dict[str, Any]:
    """The paced run through `toolstream-tui proxy` with its request list in tmux
    (120x40), `f` pressed all the while; then the app's peak RSS."""
    import threading

    import terminal as tmux_terminal

    results: dict[str, Any] = {"plan": asdict(plan), "load_start": load()}
    upstream_command = [sys.executable, str(HERE), "--serve-upstream", "0"]
    upstream, line = start(upstream_command)
    upstream_url = LISTENING.search(line).group(1)  # type: ignore[union-attr]
    port = free_port()
    proxy_url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "toolstream_tui", "proxy", "--upstream", upstream_url]
    try:
        with tmux_terminal.Terminal(120, 40) as term:
            process = term.launch([*argv, "--listen", f"127.0.0.1:{port}"])
            deadline = time.monotonic() + START_TIMEOUT_S
            while following(frame := term.capture()) is None:
                if time.monotonic() > deadline:
                    shown = "\n".join(frame.lines[:3])
                    raise SystemExit(f"bench/proxy.py: the request list did not show:\n{shown}")
            asyncio.run(paced_latencies(upstream_url, WARM_UP))
            results["direct"] = asdict(figures(asyncio.run(paced_latencies(upstream_url, plan))))
            asyncio.run(paced_latencies(proxy_url, WARM_UP))
            done = threading.Event()
            latencies: list[float] = []

            def clients() -> None:
                try:
                    latencies.extend(asyncio.run(paced_latencies(proxy_url, plan)))
                finally:
                    done.set()

            thread = threading.Thread(target=clients)
            thread.start()
            keys = press_follow_until(term, done, seed=plan.streams)
            thread.join()
            process.sample_peak()
            results["proxied"] = asdict(figures(latencies))
            answered = [latency for latency in keys if latency is not None]
            results["keys"] = {
                "presses": len(keys),
                "unanswered": len(keys) - len(answered),
                "median_ms": statistics.median(answered) if answered else None,
                "max_ms": max(answered) if answered else None,
            }
            results["app_peak_rss_mb"] = process.peak_kb / 1024
            term.send_key("q")
            process.wait_gone(30)
            process.kill()
            process.close()
    finally:
        stop(upstream)
    results["added_median_ms"] = results["proxied"]["median_ms"] - results["direct"]["median_ms"]
    results["load_end"] = load()
    return results


def latency_lines(results: dict[str, Any]) -> list[str]:
    """Per-chunk latency, directly and through the proxy."""
    return [
        f"  {name:<8} median {row['median_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  "
        f"max {row['max_ms']:.3f} ms  ({row['events']} events)"
        for name, row in ((name, results[name]) for name in ("direct", "proxied"))
    ]


def app_report(results: dict[str, Any]) -> str:
    plan, keys = results["plan"], results["keys"]
    lines = [
        f"load average at start: {results['load_start']}",
        "with the request list running (tmux 120x40): latency per chunk, upstream write -> "
        f"client read: {plan['streams']} streams at once, {plan['events']} events each, one "
        f"every {plan['interval_ms']:g} ms",
    ]
    lines += latency_lines(results)
    lines.append(f"  added by the proxy: median {results['added_median_ms']:+.3f} ms")
    shown = "—" if keys["median_ms"] is None else f"{keys['median_ms']:.0f} / {keys['max_ms']:.0f}"
    lines += [
        f"key f -> the frame showing it, while they stream: median / max {shown} ms "
        f"({keys['presses']} presses, {keys['unanswered']} unanswered)",
        f"peak RSS of the app: {results['app_peak_rss_mb']:.0f} MB",
        f"load average at end: {results['load_end']}",
    ]
    return "\n".join(lines)


def report(results: dict[str, Any]) -> str:
    plan = results["plan"]
    lines = [
        f"load average at start: {results['load_start']}",
        f"latency per chunk, upstream write -> client read: {plan['streams']} streams at once, "
        f"{plan['events']} events each, one every {plan['interval_ms']:g} ms",
    ]
    lines += latency_lines(results)
    lines.append(
        f"  added by the proxy: median {results['added_median_ms']:+.3f} ms, "
        f"max through the proxy {results['proxied']['max_ms']:.3f} ms"
    )
    if "proxy_cpu_us_per_event" in results:
        lines.append(
            f"  CPU of the proxy (both processes): {results['proxy_cpu_us_per_event']:.0f} us "
            "per event"
        )
    mb = results["bulk_bytes"] / 1e6
    direct, proxied = results["direct_bulk_seconds"], results["proxied_bulk_seconds"]
    lines += [
        f"throughput of one stream at --speed 0 ({mb:.1f} MB, best of {plan['repeat']}):",
        f"  direct {direct:.3f} s ({mb / direct:.0f} MB/s), proxied {proxied:.3f} s "
        f"({mb / proxied:.0f} MB/s): {results['throughput_ratio']:.2f}x of direct",
        f"load average at end: {results['load_end']}",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/proxy.py", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (a few seconds)")
    parser.add_argument("--streams", type=int, help=f"streams at once (default {FULL.streams})")
    parser.add_argument(
        "--interval-ms", type=float, help=f"between events (default {FULL.interval_ms:g})"
    )
    parser.add_argument(
        "--app",
        action="store_true",
        help="run the proxy with its request list in tmux, pressing keys (needs tmux)",
    )
    parser.add_argument("--events", type=int, help=f"per stream (default {FULL.events})")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--serve-upstream", metavar="BULK_BYTES", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_upstream is not None:
        serve_upstream(int(args.serve_upstream))
        return 0
    plan = QUICK if args.quick else FULL
    if args.streams is not None:
        plan = replace(plan, streams=args.streams)
    if args.interval_ms is not None:
        plan = replace(plan, interval_ms=args.interval_ms)
    if args.events is not None:
        plan = replace(plan, events=args.events)
    results = measure_with_app(plan) if args.app else measure(plan)
    print(app_report(results) if args.app else report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
