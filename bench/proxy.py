"""What `toolstream-tui proxy` adds: `python bench/proxy.py` (`--quick`: seconds).

1. Latency per chunk. An upstream (plain asyncio, its own process) stamps every SSE
   event with the moment it writes it (CLOCK_MONOTONIC, one clock for every process
   on the machine); 64 clients in this process (plain asyncio too: with httpx and
   uvicorn the bench's own CPU made the direct floor ~100 ms on a busy machine)
   read paced streams at once, directly and through `toolstream-tui proxy
   --headless` (a third process), and note when each event reaches them. Added
   latency: proxied minus direct. The proxy's CPU per event is split between its
   forwarder and its watching process.
2. Throughput. One stream read whole, directly and through the proxy, best of N
   with the two taking turns, each read once the proxy is idle: the project's
   stub at --speed 0 (the issue's "direct stream"), and one big-args stream
   (bench/streams.py) written by the bench's upstream in 64 KiB writes, as fast
   as the wire takes them (a ceiling no Python server reaches). The stub's stream
   is read three ways: off a raw socket (no HTTP library: the fastest any client
   could read), with httpx (what the openai and anthropic SDKs read with), and by
   the openai SDK itself (what an agent waits for). The stub writes each event as
   an HTTP chunk and the proxy forwards what each read brought as one, so a
   reader that pays per chunk (httpx, the SDKs) does less work through the proxy.

3. Soak (`--soak CYCLES`): cycles of paced load (`--streams` at once, for
   `--load-s`) and idle (`--idle-s`); after each load and each idle, both
   processes' RSS, open descriptors and threads. The promise: RSS growth from the
   first cycle to the last within 10 %, descriptors and threads back to their
   baseline when idle.
4. A stopped watcher (`--stopped-watcher MB`): the watching process is stopped
   (SIGSTOP, a paused terminal) while MB of the stub's huge-args streams go
   through the proxy, 8 at once; the same streams are read directly first. Every
   client must get every byte; the figures are the pace against direct and the
   forwarder's peak RSS (bounded by --watch-buffer), and, once the watcher is
   resumed, how many requests say `watch-gap`.

The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import streams
from environment import BENCH_KEY, forget_keys
from procstat import cpu_seconds

from toolstream_tui.proxy.server import bind

HERE = Path(__file__).resolve()
PROXY_COMMAND = [sys.executable, "-m", "toolstream_tui", "proxy", "--headless"]
# The "direct stream at --speed 0": the project's stub as an upstream, its
# ~1 MB-of-arguments scenario served without pacing.
STUB_SCENARIO = "huge-args"
CHAT_REQUEST: dict[str, Any] = {
    "model": "bench",
    "stream": True,
    "messages": [{"role": "user", "content": "bench"}],
}
READ_TIMEOUT_S = 60.0
STUB_COMMAND = [sys.executable, "-m", "toolstream_stubs", "--speed", "0", "--port", "0"]
# Agents send a key; the proxy must keep it out of what it shows, on every read.
AUTHORIZATION = {"Authorization": f"Bearer {BENCH_KEY}"}
WRITE_SIZE = 64 * 1024
READ_SIZE = 256 * 1024
RESPONSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
)
STAMP = re.compile(rb'"content": "(\d+) "')
LISTENING = re.compile(r"listening on (http://\S+)")
START_TIMEOUT_S = 60.0
IDLE_SPAN_S = 0.1  # no CPU used for this long (the kernel counts it in 10 ms ticks): idle
IDLE_TIMEOUT_S = 60.0
SOAK_IDLE_SPAN_S = 1.0
START_EVENTS = 5  # a stream's first events, apart: see Latencies


@dataclass(frozen=True)
class Plan:
    streams: int
    events: int
    interval_ms: float
    bulk_argument_bytes: int
    repeat: int
    stub_scenario: str = STUB_SCENARIO  # the stub's stream read whole


FULL = Plan(streams=64, events=150, interval_ms=20, bulk_argument_bytes=300_000, repeat=3)
# A small stub stream: the openai SDK reads huge-args in seconds.
QUICK = Plan(
    streams=4,
    events=10,
    interval_ms=5,
    bulk_argument_bytes=5_000,
    repeat=1,
    stub_scenario="parallel",
)
WARM_UP = Plan(streams=2, events=3, interval_ms=1, bulk_argument_bytes=0, repeat=1)


def stub_command(scenario: str) -> list[str]:
    return [*STUB_COMMAND, "--scenario", scenario]


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


# The paced event around its stamp, made once: 3200 json.dumps a second cost the
# upstream more than its writes.
PACED_BEFORE, PACED_AFTER = paced_event(1).split(b'"1 "')


def stamped_event(stamp: int) -> bytes:
    return b'%s"%d "%s' % (PACED_BEFORE, stamp, PACED_AFTER)


def chunk_of(data: bytes) -> bytes:
    """`data` as one chunk of a chunked HTTP/1.1 body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


async def read_request(reader: asyncio.StreamReader) -> str:
    """The request target; the headers and the body are read and dropped."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    request_line, *lines = head.split("\r\n")
    length = 0
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return request_line.split(" ")[1]


async def paced_writes(writer: asyncio.StreamWriter, query: dict[str, str]) -> None:
    """One stamped event every interval, on a schedule fixed from the start: each
    sleep is to the next event's own time, never `interval` from now. Sleeping
    `interval` after each write let the streams whose timers fired in the same
    late turn of the loop leave it in step, so over a run the 64 evenly offset
    streams gathered into bursts (the direct median rose from 0.9 ms over events
    5-19 to 1.6 ms over events 20-149), and a burst through the proxy waits in
    line."""
    interval = float(query["interval_ms"]) / 1000
    first = time.monotonic() + float(query["offset_ms"]) / 1000
    for number in range(int(query["events"])):
        await asyncio.sleep(max(0.0, first + number * interval - time.monotonic()))
        writer.write(chunk_of(stamped_event(time.monotonic_ns())))
    await asyncio.sleep(max(0.0, first + int(query["events"]) * interval - time.monotonic()))


def upstream_handler(bulk: bytes) -> Any:
    """A plain asyncio HTTP/1.1 server, one response per connection: the bench's
    own processes must cost little next to the proxy, or their CPU is measured as
    latency (uvicorn and h11 here cost ~80 us per paced event)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            path, _, query_string = (await read_request(reader)).partition("?")
            query = {key: values[0] for key, values in parse_qs(query_string).items()}
            writer.write(RESPONSE_HEAD)
            if path == "/paced":
                await paced_writes(writer, query)
                writer.write(chunk_of(paced_event(0, "stop") + b"data: [DONE]\n\n"))
            else:
                for start in range(0, len(bulk), WRITE_SIZE):
                    writer.write(chunk_of(bulk[start : start + WRITE_SIZE]))
                    await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    return handle


def serve_upstream(bulk_argument_bytes: int) -> None:
    bulk = streams.big_args("bench-proxy", bulk_argument_bytes).body
    sock = bind("127.0.0.1", 0)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]} {len(bulk)}", flush=True)

    async def serve() -> None:
        server = await asyncio.start_server(upstream_handler(bulk), sock=sock)
        await server.serve_forever()

    asyncio.run(serve())


# -- processes --------------------------------------------------------------------


def start(command: list[str], says_on_stdout: bool = True) -> tuple[subprocess.Popen[str], str]:
    """A server process, and the first line it wrote about where it listens (on
    stdout, or else on stderr as the proxy does)."""
    # The headless proxy writes a JSON line per request to stdout: a pipe nobody
    # reads fills after ~64 requests and stops its loop (the bench's 66th request).
    stdout = subprocess.PIPE if says_on_stdout else subprocess.DEVNULL
    process = subprocess.Popen(
        command, stdout=stdout, stderr=subprocess.PIPE, text=True, encoding="utf-8"
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    stream = process.stdout if says_on_stdout else process.stderr
    assert stream is not None
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        if LISTENING.search(line):
            return process, line
    process.kill()
    raise SystemExit(f"bench/proxy.py: {command[:3]} did not start")


def start_proxy(upstream_url: str, *options: str) -> tuple[subprocess.Popen[str], str]:
    """`toolstream-tui proxy --headless` in front of `upstream_url`, and its URL."""
    command = [*PROXY_COMMAND, "--upstream", upstream_url, "--listen", "127.0.0.1:0", *options]
    proxy, line = start(command, says_on_stdout=False)
    return proxy, LISTENING.search(line).group(1)  # type: ignore[union-attr]


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- measuring ----------------------------------------------------------------------


class Dechunker:
    """The body of a chunked HTTP/1.1 response, read by read (enough for the
    responses the upstream and the proxy send; trailers are not expected). Linear
    in what it reads: cutting each chunk off the front of the read copied the rest
    of it, and a 256 KiB read of the stub's 265-byte chunks cost the client more
    than the stream (0.2-0.7 s of CPU to read 6 MB, by how the reads fell)."""

    def __init__(self) -> None:
        self.buffer = b""  # an incomplete chunk-size line or CRLF, kept for the next read
        self.left = 0  # bytes of the current chunk still to come; -2: its CRLF
        self.done = False

    def feed(self, data: bytes) -> bytes:
        buffer = self.buffer + data if self.buffer else data
        body = bytearray()
        at, end = 0, len(buffer)
        while at < end and not self.done:
            if self.left > 0:
                taken = min(self.left, end - at)
                body += buffer[at : at + taken]
                at, self.left = at + taken, self.left - taken
                if self.left:
                    break
                self.left = -2
            if self.left < 0:
                if end - at < 2:
                    break
                at, self.left = at + 2, 0
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                break
            size = int(buffer[at:line_end].split(b";")[0], 16)
            at, self.left, self.done = line_end + 2, size, size == 0
        self.buffer = buffer[at:]
        return bytes(body)


async def exchange(url: str, on_body: Callable[[bytes, int], None]) -> None:
    """POST to `url` as an agent would (its key, `Connection: close`) and hand each
    read of the response body to `on_body` with the moment it arrived."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    body = b'{"model": "bench", "stream": true}'
    head = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in AUTHORIZATION.items()]
    head += ["Content-Type: application/json", f"Content-Length: {len(body)}", "", ""]
    writer.write("\r\n".join(head).encode() + body)
    try:
        response_head = await reader.readuntil(b"\r\n\r\n")
        status_line = response_head.split(b"\r\n")[0]
        if b" 200 " not in status_line + b" ":
            raise SystemExit(f"bench/proxy.py: {url} answered {status_line.decode()!r}")
        chunks = Dechunker()
        while data := await reader.read(READ_SIZE):
            now = time.monotonic_ns()
            on_body(chunks.feed(data), now)
        if not chunks.done:
            raise SystemExit(f"bench/proxy.py: {url} ended before its last chunk")
    finally:
        writer.close()


@dataclass
class Latencies:
    """Milliseconds from each event's write to its read: all of them, and those
    after each stream's first START_EVENTS (written while the proxy may still be
    setting up the other streams' requests, which all arrive at once)."""

    all: list[float] = field(default_factory=list)
    settled: list[float] = field(default_factory=list)

    def extend(self, other: Latencies) -> None:
        self.all += other.all
        self.settled += other.settled


async def read_paced(url: str, latencies: Latencies) -> None:
    buffer = b""
    count = 0

    def on_body(data: bytes, now: int) -> None:
        nonlocal buffer, count
        *events, buffer = (buffer + data).split(b"\n\n")
        for event in events:
            stamp = STAMP.search(event)
            if stamp is not None:
                latency = (now - int(stamp[1])) / 1e6
                latencies.all.append(latency)
                if count >= START_EVENTS:
                    latencies.settled.append(latency)
                count += 1

    await exchange(url, on_body)


async def paced_latencies(base: str, plan: Plan) -> Latencies:
    latencies = Latencies()
    reads = [
        read_paced(
            f"{base}/paced?events={plan.events}&interval_ms={plan.interval_ms}"
            f"&offset_ms={plan.interval_ms * i / plan.streams}",
            latencies,
        )
        for i in range(plan.streams)
    ]
    await asyncio.gather(*reads)
    return latencies


async def bulk_seconds(url: str) -> tuple[float, int]:
    """Seconds to read the body whole off the socket with no HTTP library (chunks
    undone by `Dechunker`), and its size: the fastest any client could read it."""
    size = 0

    def on_body(data: bytes, now: int) -> None:
        nonlocal size
        size += len(data)

    start_t = time.perf_counter()
    await exchange(url, on_body)
    return time.perf_counter() - start_t, size


async def httpx_seconds(url: str) -> tuple[float, int]:
    """Seconds to read the body whole with httpx (one piece per HTTP chunk: what
    the openai and anthropic SDKs read with), and its size."""
    async with httpx.AsyncClient(timeout=READ_TIMEOUT_S) as client:
        start_t, size = time.perf_counter(), 0
        request = client.stream("POST", url, headers=AUTHORIZATION, json=CHAT_REQUEST)
        async with request as response:
            response.raise_for_status()
            async for piece in response.aiter_raw():
                size += len(piece)
        return time.perf_counter() - start_t, size


async def openai_sdk_seconds(url: str) -> tuple[float, int]:
    """Seconds for the openai SDK to hand over every chunk of the streamed chat
    completion at `url` (what an agent waits for), and how many there were."""
    import openai  # the bench and test extras; only this reader needs it

    base_url = url.removesuffix("/chat/completions")
    key = AUTHORIZATION["Authorization"].removeprefix("Bearer ")
    async with openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0) as client:
        start_t, chunks = time.perf_counter(), 0
        stream = await client.chat.completions.create(**CHAT_REQUEST)
        async for _chunk in stream:
            chunks += 1
        return time.perf_counter() - start_t, chunks


@dataclass(frozen=True)
class Reader:
    name: str
    label: str  # how the report names it
    unit: str  # what `read` counts
    read: Callable[[str], Coroutine[Any, Any, tuple[float, int]]]


READERS = (
    Reader("socket", "a raw socket (no HTTP library: the ceiling)", "bytes", bulk_seconds),
    Reader("httpx", "httpx (what the SDKs read with)", "bytes", httpx_seconds),
    Reader("openai", "the openai SDK (every chunk parsed)", "chunks", openai_sdk_seconds),
)


def best_of_alternating(
    urls: dict[str, str],
    repeat: int,
    proxy_pid: int,
    read: Callable[[str], Coroutine[Any, Any, tuple[float, int]]] = bulk_seconds,
) -> dict[str, tuple[float, int]]:
    """Each URL's stream read whole by `read` `repeat` times, the URLs taking turns
    (this machine's speed drifts within a minute); the fastest read of each. Each
    read starts once the proxy is idle: its watching process parses a fast stream
    after the client has it, and a direct read must not pay for that."""
    best: dict[str, tuple[float, int]] = {}
    for _ in range(repeat):
        for name, url in urls.items():
            wait_until_idle(proxy_pid)
            seconds, size = asyncio.run(read(url))
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, size)
    return best


# A proxy in front of an upstream URL for as long as the context lasts: its pid
# (the watching process, whose CPU counts its forwarder's too) and its URL.
ProxyInFront = Callable[[str], AbstractContextManager[tuple[int, str]]]


@contextmanager
def headless_proxy(upstream_url: str) -> Iterator[tuple[int, str]]:
    proxy, proxy_url = start_proxy(upstream_url)
    try:
        yield proxy.pid, proxy_url
    finally:
        stop(proxy)


def stub_throughput(plan: Plan, in_front: ProxyInFront = headless_proxy) -> dict[str, Any]:
    """The stub (`toolstream-stub --speed 0`) serving the plan's scenario, read whole
    directly and through a proxy of its own by each reader; the reads take turns."""
    stub, line = start(stub_command(plan.stub_scenario))
    reads: dict[str, dict[str, Any]] = {}
    try:
        endpoint = urlsplit(LISTENING.search(line).group(1))  # type: ignore[union-attr]
        stub_url = f"{endpoint.scheme}://{endpoint.netloc}"
        with in_front(stub_url) as (pid, proxy_url):
            urls = {"direct": stub_url + endpoint.path, "proxied": proxy_url + endpoint.path}
            for reader in READERS:
                best_of_alternating(urls, 1, pid, reader.read)  # code loaded
                best = best_of_alternating(urls, plan.repeat, pid, reader.read)
                reads[reader.name] = throughput_figures(reader, best)
    finally:
        stop(stub)
    return {"stub_bytes": reads["socket"]["count"], "stub_reads": reads}


def throughput_figures(reader: Reader, best: dict[str, tuple[float, int]]) -> dict[str, Any]:
    (direct, count), (proxied, proxied_count) = best["direct"], best["proxied"]
    if count != proxied_count:
        raise SystemExit(
            f"bench/proxy.py: {reader.name} read {count} {reader.unit} directly "
            f"and {proxied_count} through the proxy"
        )
    return {
        "count": count,
        "unit": reader.unit,
        "direct_seconds": direct,
        "proxied_seconds": proxied,
        "ratio": direct / proxied,
    }


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


def settled_figures(name: str, latencies: Latencies) -> dict[str, Any]:
    """The figures after each stream's first events, when there were later ones."""
    return {f"{name}_settled": asdict(figures(latencies.settled))} if latencies.settled else {}


def wait_until_idle(pid: int, timeout: float = IDLE_TIMEOUT_S, span: float = IDLE_SPAN_S) -> None:
    """Until a process and its children use no CPU for `span` s (or `timeout`)."""
    deadline = time.monotonic() + timeout
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(span)
        now = cpu_seconds(pid)
        if now is None or now == before:
            return
        before = now


def proxy_cpu(pid: int) -> tuple[float, float] | None:
    """CPU seconds so far of the watching process and of the forwarder (its child)."""
    watching, both = cpu_seconds(pid, children=False), cpu_seconds(pid)
    if watching is None or both is None:
        return None
    return watching, both - watching


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def measure(plan: Plan, record_dir: Path | None = None) -> dict[str, Any]:
    """`record_dir`: the proxy also records every response there (`--record-dir`)."""
    results: dict[str, Any] = {"plan": asdict(plan), "load_start": load()}
    results["recording"] = record_dir is not None
    upstream_command = [sys.executable, str(HERE), "--serve-upstream"]
    upstream, line = start([*upstream_command, str(plan.bulk_argument_bytes)])
    upstream_url, bulk_size = LISTENING.search(line).group(1), int(line.split()[-1])  # type: ignore[union-attr]
    recording = () if record_dir is None else ("--record-dir", str(record_dir))
    try:
        proxy, proxy_url = start_proxy(upstream_url, *recording)
        try:
            for name, base in (("direct", upstream_url), ("proxied", proxy_url)):
                asyncio.run(paced_latencies(base, WARM_UP))  # connections made, code loaded
                before = proxy_cpu(proxy.pid)
                latencies = asyncio.run(paced_latencies(base, plan))
                results[name] = asdict(figures(latencies.all))
                results.update(settled_figures(name, latencies))
                after = proxy_cpu(proxy.pid)
                if name == "proxied" and before is not None and after is not None:
                    per_event = [
                        (b - a) / len(latencies.all) * 1e6
                        for a, b in zip(before, after, strict=True)
                    ]
                    results["watching_cpu_us_per_event"] = per_event[0]
                    results["forwarder_cpu_us_per_event"] = per_event[1]
            urls = {"direct": f"{upstream_url}/bulk", "proxied": f"{proxy_url}/bulk"}
            for name, (seconds, size) in best_of_alternating(urls, plan.repeat, proxy.pid).items():
                assert size == bulk_size, (name, size, bulk_size)
                results[f"{name}_bulk_seconds"] = seconds
        finally:
            stop(proxy)
    finally:
        stop(upstream)
    if record_dir is not None:
        results["recordings"] = len(list(record_dir.glob("*.sse")))
    results.update(stub_throughput(plan))
    results["bulk_bytes"] = bulk_size
    results["added_median_ms"] = results["proxied"]["median_ms"] - results["direct"]["median_ms"]
    results["throughput_ratio"] = results["direct_bulk_seconds"] / results["proxied_bulk_seconds"]
    results["load_end"] = load()
    return results


# -- soak: cycles of load and idle --------------------------------------------------


@dataclass(frozen=True)
class Footprint:
    """What a process holds: resident memory, open descriptors, threads."""

    rss_mb: float
    descriptors: int
    threads: int


def footprint(pid: int) -> Footprint:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return Footprint(
        rss_mb=int(status["VmRSS"].split()[0]) / 1024,
        descriptors=len(os.listdir(f"/proc/{pid}/fd")),
        threads=int(status["Threads"]),
    )


def forwarder_of(proxy_pid: int) -> int:
    [child] = Path(f"/proc/{proxy_pid}/task/{proxy_pid}/children").read_text().split()
    return int(child)


def footprints(proxy_pid: int) -> dict[str, Any]:
    return {
        "watcher": asdict(footprint(proxy_pid)),
        "forwarder": asdict(footprint(forwarder_of(proxy_pid))),
    }


async def load_for(base: str, plan: Plan, seconds: float) -> int:
    """Rounds of the plan's paced streams until `seconds` have passed; the requests made."""
    deadline, requests = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        await paced_latencies(base, plan)
        requests += plan.streams
    return requests


def soak(plan: Plan, cycles: int, load_s: float, idle_s: float) -> dict[str, Any]:
    results: dict[str, Any] = {"plan": asdict(plan), "load_start": load(), "cycles": []}
    upstream, line = start([sys.executable, str(HERE), "--serve-upstream", "0"])
    upstream_url = LISTENING.search(line).group(1)  # type: ignore[union-attr]
    try:
        proxy, proxy_url = start_proxy(upstream_url, "--keep", "200")
        try:
            asyncio.run(paced_latencies(proxy_url, WARM_UP))
            wait_until_idle(proxy.pid)
            results["baseline"] = footprints(proxy.pid)
            for _ in range(cycles):
                requests = asyncio.run(load_for(proxy_url, plan, load_s))
                loaded = footprints(proxy.pid)
                time.sleep(idle_s)  # the idle half of the cycle: nothing to wait for
                # The watching process is niced: on a busy machine it can go 0.1 s
                # without CPU while still catching up, so idle means a quiet second.
                wait_until_idle(proxy.pid, span=SOAK_IDLE_SPAN_S)
                results["cycles"].append(
                    {"requests": requests, "loaded": loaded, "idle": footprints(proxy.pid)}
                )
        finally:
            stop(proxy)
    finally:
        stop(upstream)
    results["load_end"] = load()
    return results


def soak_report(results: dict[str, Any]) -> str:
    plan, cycles, base = results["plan"], results["cycles"], results["baseline"]
    lines = [
        f"load average at start: {results['load_start']}",
        f"soak: {len(cycles)} cycles of {plan['streams']} paced streams at once "
        f"(one event every {plan['interval_ms']:g} ms), then idle",
    ]
    for side in ("watcher", "forwarder"):
        start = base[side]
        lines.append(
            f"  {side}: baseline {start['rss_mb']:.1f} MB, {start['descriptors']} descriptors, "
            f"{start['threads']} threads"
        )
        for number, cycle in enumerate(cycles, 1):
            busy, idle = cycle["loaded"][side], cycle["idle"][side]
            lines.append(
                f"    cycle {number} ({cycle['requests']} requests): loaded "
                f"{busy['rss_mb']:.1f} MB {busy['descriptors']} fds; idle {idle['rss_mb']:.1f} MB "
                f"{idle['descriptors']} fds {idle['threads']} threads"
            )
        first, last = cycles[0]["idle"][side], cycles[-1]["idle"][side]
        growth = (last["rss_mb"] - first["rss_mb"]) / first["rss_mb"] * 100
        back = last["descriptors"] == start["descriptors"] and last["threads"] == start["threads"]
        lines.append(
            f"    RSS growth, first idle to last: {growth:+.1f} %; descriptors and threads "
            f"back to baseline when idle: {'yes' if back else 'NO'}"
        )
    lines.append(f"load average at end: {results['load_end']}")
    return "\n".join(lines)


# -- keep-alive: many requests on one connection ------------------------------------


def keep_alive(requests: int) -> dict[str, Any]:
    """`requests` sequential requests on one kept-alive client connection (httpx, as
    the SDKs send them) to the stub through the proxy: both processes' footprint
    before and after, and the client connections it took."""
    results: dict[str, Any] = {"load_start": load(), "requests": requests}
    stub, line = start(stub_command("weather"))
    try:
        endpoint = urlsplit(LISTENING.search(line).group(1))  # type: ignore[union-attr]
        proxy, proxy_url = start_proxy(f"{endpoint.scheme}://{endpoint.netloc}", "--keep", "200")
        try:
            connections: set[tuple[str, int]] = set()
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            with httpx.Client(timeout=READ_TIMEOUT_S, limits=limits, trust_env=False) as http:
                http.post(proxy_url + endpoint.path).read()
                wait_until_idle(proxy.pid)
                results["before"] = footprints(proxy.pid)
                started = time.monotonic()
                for _ in range(requests):
                    with http.stream("POST", proxy_url + endpoint.path) as response:
                        response.read()
                        stream = response.extensions["network_stream"]
                        connections.add(stream.get_extra_info("client_addr"))
                results["seconds"] = time.monotonic() - started
            wait_until_idle(proxy.pid)
            results["after"] = footprints(proxy.pid)
            results["client_connections"] = len(connections)
        finally:
            stop(proxy)
    finally:
        stop(stub)
    results["load_end"] = load()
    return results


def keep_alive_report(results: dict[str, Any]) -> str:
    lines = [
        f"load average at start: {results['load_start']}",
        f"keep-alive: {results['requests']} sequential requests through the proxy on "
        f"{results['client_connections']} client connection(s), {results['seconds']:.1f} s",
    ]
    for side in ("watcher", "forwarder"):
        before, after = results["before"][side], results["after"][side]
        lines.append(
            f"  {side}: {before['rss_mb']:.1f} -> {after['rss_mb']:.1f} MB, "
            f"{before['descriptors']} -> {after['descriptors']} descriptors, "
            f"{before['threads']} -> {after['threads']} threads"
        )
    lines.append(f"load average at end: {results['load_end']}")
    return "\n".join(lines)


# -- a stopped watcher ----------------------------------------------------------------

STOPPED_AT_ONCE = 8


async def pull_all(url: str, count: int) -> tuple[float, list[bytes]]:
    """`count` reads of `url`'s stream, STOPPED_AT_ONCE at a time: seconds, bodies."""
    bodies: list[bytes] = []
    gate = asyncio.Semaphore(STOPPED_AT_ONCE)

    async def one() -> None:
        parts: list[bytes] = []
        async with gate:
            await exchange(url, lambda data, now: parts.append(data))
        bodies.append(b"".join(parts))

    started = time.monotonic()
    await asyncio.gather(*(one() for _ in range(count)))
    return time.monotonic() - started, bodies


def stopped_watcher(megabytes: float, scenario: str, out: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"load_start": load(), "scenario": scenario}
    stub, line = start(stub_command(scenario))
    try:
        endpoint = urlsplit(LISTENING.search(line).group(1))  # type: ignore[union-attr]
        stub_url = f"{endpoint.scheme}://{endpoint.netloc}"
        _, [sample] = asyncio.run(pull_all(stub_url + endpoint.path, 1))
        count = max(1, round(megabytes * 1e6 / len(sample)))
        direct_s, direct = asyncio.run(pull_all(stub_url + endpoint.path, count))
        with out.open("w", encoding="utf-8") as lines:
            proxy = subprocess.Popen(
                [*PROXY_COMMAND, "--upstream", stub_url, "--listen", "127.0.0.1:0"],
                stdout=lines, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert proxy.stderr is not None
            proxy_url = LISTENING.search(proxy.stderr.readline()).group(1)  # type: ignore[union-attr]
            try:
                forwarder = forwarder_of(proxy.pid)
                asyncio.run(pull_all(proxy_url + endpoint.path, 1))  # warm
                before = footprint(forwarder).rss_mb
                proxy.send_signal(signal.SIGSTOP)
                try:
                    proxied_s, proxied = asyncio.run(pull_all(proxy_url + endpoint.path, count))
                    peak = peak_rss_mb(forwarder)
                finally:
                    proxy.send_signal(signal.SIGCONT)
                wait_until_idle(proxy.pid)  # the watcher has caught up with what it was kept
            finally:
                stop(proxy)
    finally:
        stop(stub)
    summaries = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    kinds = [{a["kind"] for a in summary["anomalies"]} for summary in summaries]
    results.update(
        streams=count,
        bytes=sum(map(len, proxied)),
        byte_exact=sorted(proxied) == sorted(direct) and all(b == sample for b in proxied),
        direct_seconds=direct_s,
        proxied_seconds=proxied_s,
        forwarder_rss_before_mb=before,
        forwarder_peak_rss_mb=peak,
        requests_listed=len(summaries),
        watch_gaps=sum("watch-gap" in found for found in kinds),
        load_end=load(),
    )
    return results


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stopped_report(results: dict[str, Any]) -> str:
    mb = results["bytes"] / 1e6
    return "\n".join(
        [
            f"load average at start: {results['load_start']}",
            f"a stopped watcher (SIGSTOP): {results['streams']} {results['scenario']} streams, "
            f"{mb:.0f} MB, {STOPPED_AT_ONCE} at once",
            f"  every client got every byte: {'yes' if results['byte_exact'] else 'NO'}",
            f"  direct {results['direct_seconds']:.2f} s, through the proxy "
            f"{results['proxied_seconds']:.2f} s: "
            f"{results['direct_seconds'] / results['proxied_seconds']:.2f}x of direct",
            f"  forwarder RSS {results['forwarder_rss_before_mb']:.0f} MB before, peak "
            f"{results['forwarder_peak_rss_mb']:.0f} MB",
            f"  once resumed: {results['requests_listed'] - 1} requests listed (and a warm-up), "
            f"{results['watch_gaps']} with watch-gap",
            f"load average at end: {results['load_end']}",
        ]
    )


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


def clients_process(url: str, plan: Plan, answer: Any, done: Any) -> None:
    """The paced clients, in a child process: their latencies go back on `answer`,
    read once `done` is set (they fill more than the pipe holds)."""
    try:
        latencies = asyncio.run(paced_latencies(url, plan))
    finally:
        done.set()
    answer.send(latencies)


def paced_through_the_app(
    url: str, plan: Plan, term: Any | None
) -> tuple[Latencies, list[float | None]]:
    """The paced clients, in a process of their own (in a thread beside the key
    presser they waited for the GIL behind each capture); with `term`, `f` is
    pressed until they are done."""
    fork = multiprocessing.get_context("fork")
    done, (answer, answered) = fork.Event(), fork.Pipe(duplex=False)
    clients = fork.Process(target=clients_process, args=(url, plan, answered, done))
    clients.start()
    answered.close()  # a child that fails then ends `recv` with EOFError
    keys = [] if term is None else press_follow_until(term, done, seed=plan.streams)
    try:
        latencies = answer.recv()
    except EOFError:
        message = "bench/proxy.py: the clients' process failed (its traceback is above)"
        raise SystemExit(message) from None
    finally:
        clients.join()
    return latencies, keys


@contextmanager
def request_list(term: Any, upstream_url: str) -> Iterator[tuple[Any, str]]:
    """`toolstream-tui proxy` with its request list in `term`, in front of
    `upstream_url`, once the list shows: its process and its URL; `q` at the end."""
    port = free_port()
    argv = [sys.executable, "-m", "toolstream_tui", "proxy", "--upstream", upstream_url]
    process = term.launch([*argv, "--listen", f"127.0.0.1:{port}"])
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while following(frame := term.capture()) is None:
            if time.monotonic() > deadline:
                shown = "\n".join(frame.lines[:3])
                raise SystemExit(f"bench/proxy.py: the request list did not show:\n{shown}")
        yield process, f"http://127.0.0.1:{port}"
        term.send_key("q")
        process.wait_gone(30)
    finally:
        process.kill()
        process.close()


def measure_with_app(plan: Plan) -> dict[str, Any]:
    """The paced run through `toolstream-tui proxy` with its request list in tmux
    (120x40), then again with `f` pressed all the while; then the app's peak RSS;
    then the stub's stream read whole, directly and through the request list."""
    import terminal as tmux_terminal

    results: dict[str, Any] = {"plan": asdict(plan), "load_start": load()}
    upstream_command = [sys.executable, str(HERE), "--serve-upstream", "0"]
    upstream, line = start(upstream_command)
    upstream_url = LISTENING.search(line).group(1)  # type: ignore[union-attr]
    try:
        with tmux_terminal.Terminal(120, 40) as term:
            with request_list(term, upstream_url) as (process, proxy_url):
                results.update(paced_with_app(plan, term, process, upstream_url, proxy_url))

            @contextmanager
            def in_front(stub_url: str) -> Iterator[tuple[int, str]]:
                with request_list(term, stub_url) as (process, url):
                    yield process.pid, url

            results.update(stub_throughput(plan, in_front))
    finally:
        stop(upstream)
    results["added_median_ms"] = results["proxied"]["median_ms"] - results["direct"]["median_ms"]
    results["load_end"] = load()
    return results


def paced_with_app(
    plan: Plan, term: Any, process: Any, upstream_url: str, proxy_url: str
) -> dict[str, Any]:
    """The paced run directly, through the request list with nobody at the keys, and
    again with `f` pressed; the app's CPU per event and peak RSS."""
    results: dict[str, Any] = {}
    asyncio.run(paced_latencies(upstream_url, WARM_UP))
    direct = asyncio.run(paced_latencies(upstream_url, plan))
    results["direct"] = asdict(figures(direct.all))
    results.update(settled_figures("direct", direct))
    asyncio.run(paced_latencies(proxy_url, WARM_UP))
    # First with the list open and nobody at the keys; then again with `f`
    # pressed, each press followed by captures until the screen answers: that
    # polling makes tmux redraw the pane at full speed, a load of the bench's
    # own on the cores the proxy shares, so its latencies are shown apart.
    before = proxy_cpu(process.pid)
    latencies, _ = paced_through_the_app(proxy_url, plan, None)
    after = proxy_cpu(process.pid)
    if before is not None and after is not None:
        events = len(latencies.all)
        spent = [(b - a) / events * 1e6 for a, b in zip(before, after, strict=True)]
        results["app_cpu_us_per_event"] = spent[0]
        results["forwarder_cpu_us_per_event"] = spent[1]
    results["proxied"] = asdict(figures(latencies.all))
    results.update(settled_figures("proxied", latencies))
    latencies, keys = paced_through_the_app(proxy_url, plan, term)
    process.sample_peak()
    results["pressing"] = asdict(figures(latencies.all))
    results.update(settled_figures("pressing", latencies))
    answered = [latency for latency in keys if latency is not None]
    results["keys"] = {
        "presses": len(keys),
        "unanswered": len(keys) - len(answered),
        "median_ms": statistics.median(answered) if answered else None,
        "max_ms": max(answered) if answered else None,
    }
    results["app_peak_rss_mb"] = process.peak_kb / 1024
    return results


def latency_lines(results: dict[str, Any]) -> list[str]:
    """Per-chunk latency, directly and through the proxy: all events, then those
    after each stream's first few."""
    names = [name for name in ("direct", "proxied", "pressing") if name in results]
    lines = [latency_line(name, results[name]) for name in names]
    if all(f"{name}_settled" in results for name in names):
        lines.append(f"  after each stream's first {START_EVENTS} events:")
        lines += [latency_line(name, results[f"{name}_settled"]) for name in names]
    return lines


def latency_line(name: str, row: dict[str, Any]) -> str:
    return (
        f"  {name:<8} median {row['median_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  "
        f"max {row['max_ms']:.3f} ms  ({row['events']} events)"
    )


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
    lines.append("  (pressing: proxied again while f is pressed, each press followed by captures)")
    if "app_cpu_us_per_event" in results:
        lines.append(
            f"  CPU per event, nobody at the keys: forwarder "
            f"{results['forwarder_cpu_us_per_event']:.0f} us, the app "
            f"{results['app_cpu_us_per_event']:.0f} us"
        )
    shown = "—" if keys["median_ms"] is None else f"{keys['median_ms']:.0f} / {keys['max_ms']:.0f}"
    lines += [
        f"key f -> the frame showing it, while they stream: median / max {shown} ms "
        f"({keys['presses']} presses, {keys['unanswered']} unanswered)",
        f"peak RSS of the app: {results['app_peak_rss_mb']:.0f} MB",
        f"throughput of one stream through the request list, read whole (best of "
        f"{plan['repeat']}, taking turns):",
        *stub_read_lines(results),
        f"load average at end: {results['load_end']}",
    ]
    return "\n".join(lines)


def report(results: dict[str, Any]) -> str:
    plan = results["plan"]
    lines = [
        f"load average at start: {results['load_start']}",
        f"latency per chunk, upstream write -> client read: {plan['streams']} streams at once, "
        f"{plan['events']} events each, one every {plan['interval_ms']:g} ms"
        + (
            ", the proxy recording every response (--record-dir)"
            if results.get("recording")
            else ""
        ),
    ]
    lines += latency_lines(results)
    lines.append(
        f"  added by the proxy: median {results['added_median_ms']:+.3f} ms, "
        f"max through the proxy {results['proxied']['max_ms']:.3f} ms"
    )
    if "forwarder_cpu_us_per_event" in results:
        lines.append(
            f"  CPU per event: forwarder {results['forwarder_cpu_us_per_event']:.0f} us, "
            f"watching process {results['watching_cpu_us_per_event']:.0f} us"
        )
    lines.append(f"throughput of one stream, read whole (best of {plan['repeat']}, taking turns):")
    lines += stub_read_lines(results)
    lines.append(
        throughput_line(
            f"the bench's upstream at wire speed ({WRITE_SIZE // 1024} KiB writes)",
            results["bulk_bytes"],
            results["direct_bulk_seconds"],
            results["proxied_bulk_seconds"],
        )
    )
    lines.append(f"load average at end: {results['load_end']}")
    return "\n".join(lines)


def stub_read_lines(results: dict[str, Any]) -> list[str]:
    plan = results["plan"]
    lines = [
        f"  the stub (toolstream-stub --scenario {plan['stub_scenario']} --speed 0), "
        f"{results['stub_bytes']:,} bytes, read by:"
    ]
    width = max(len(reader.label) for reader in READERS)
    for reader in READERS:
        read = results["stub_reads"][reader.name]
        lines.append(
            f"    {reader.label:{width}}  direct {read['direct_seconds']:.3f} s, "
            f"proxied {read['proxied_seconds']:.3f} s: {read['ratio']:.2f}x of direct"
        )
    return lines


def throughput_line(upstream: str, size: int, direct: float, proxied: float) -> str:
    mb = size / 1e6
    return (
        f"  {upstream}, {mb:.1f} MB: direct {direct:.3f} s ({mb / direct:.0f} MB/s), "
        f"proxied {proxied:.3f} s ({mb / proxied:.0f} MB/s): {direct / proxied:.2f}x of direct"
    )


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
    parser.add_argument(
        "--soak", type=int, metavar="CYCLES", help="cycles of load and idle (see --load-s)"
    )
    parser.add_argument("--load-s", type=float, default=600.0, help="each cycle's load")
    parser.add_argument("--idle-s", type=float, default=600.0, help="each cycle's idle")
    parser.add_argument(
        "--keep-alive",
        type=int,
        metavar="N",
        help="N sequential requests through the proxy on one client connection",
    )
    parser.add_argument(
        "--stopped-watcher",
        type=float,
        metavar="MB",
        help="pull MB of streams through a proxy whose watching process is stopped",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="the proxy records every response (--record-dir), as a CI run that keeps them does",
    )
    parser.add_argument("--serve-upstream", metavar="BULK_BYTES", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    forget_keys()  # the clients send their own key, as agents do
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
    if args.soak is not None:
        results = soak(plan, args.soak, args.load_s, args.idle_s)
        print(soak_report(results))
    elif args.keep_alive is not None:
        results = keep_alive(args.keep_alive)
        print(keep_alive_report(results))
    elif args.stopped_watcher is not None:
        scenario = "parallel" if args.quick else STUB_SCENARIO
        with tempfile.TemporaryDirectory() as folder:
            results = stopped_watcher(args.stopped_watcher, scenario, Path(folder) / "lines")
        print(stopped_report(results))
    elif args.app:
        results = measure_with_app(plan)
        print(app_report(results))
    else:
        with tempfile.TemporaryDirectory() as folder:
            results = measure(plan, Path(folder) if args.record else None)
        print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
