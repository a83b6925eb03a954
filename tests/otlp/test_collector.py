"""--otlp against the real OpenTelemetry Collector, where this machine has one:
an `otelcol`/`otelcol-contrib` binary, or Docker (its daemon running) with the
collector's image (`otel/opentelemetry-collector`, pulled if need be). The
collector receives over OTLP/HTTP and prints every span with its debug exporter;
the test reads the attribute names and values from that print. Without either,
the test is skipped, and the reason says which was looked for (`pytest -rs`)."""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli import CliRunner
from toolstream_tui.proxy.server import bind

IMAGE = "otel/opentelemetry-collector:0.115.0"
READY = "Everything is ready"
WAIT_S = 120.0
CONFIG = """\
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
exporters:
  debug:
    verbosity: detailed
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
"""
# What the debug exporter prints for the stub scenario's span (`name: Type(value)`).
EXPECTED = [
    "gen_ai.operation.name: Str(chat)",
    "gen_ai.provider.name: Str(anthropic)",
    "gen_ai.response.model: Str(stub-model)",
    "gen_ai.response.id: Str(msg_stub)",
    "gen_ai.usage.input_tokens: Int(12)",
    "gen_ai.usage.output_tokens: Int(40)",
    "gen_ai.tool.name: Str(get_weather)",
    "toolstream.anomaly.kind: Str(delta-without-start)",
]


def docker_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker command"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "docker info did not answer"
    return None if info.returncode == 0 else "the Docker daemon is not running"


def collector_command(config: Path) -> list[str]:
    """How to run a collector here; skips (saying why) when there is none."""
    binary = shutil.which("otelcol-contrib") or shutil.which("otelcol")
    if binary is not None:
        return [binary, f"--config={config}"]
    problem = docker_problem()
    if problem is not None:
        pytest.skip(f"no OpenTelemetry Collector: no otelcol binary on PATH, and {problem}")
    mount = f"{config}:/etc/otelcol/config.yaml:ro"
    return ["docker", "run", "--rm", "--network", "host", "-v", mount, IMAGE]


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[str, queue.Queue[str]]]:
    """A running collector's OTLP/HTTP URL, and the lines it prints."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    config = tmp_path / "collector.yaml"
    config.write_text(CONFIG.format(port=port))
    process = subprocess.Popen(
        collector_command(config), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()])
    reader.start()
    try:
        wait_for_line(lines, READY)
        yield f"http://127.0.0.1:{port}", lines
    finally:
        process.terminate()
        try:
            process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
        reader.join(WAIT_S)


def wait_for_line(lines: queue.Queue[str], text: str) -> list[str]:
    """The lines read until one holds `text` (each awaited at most WAIT_S)."""
    seen = []
    while True:
        try:
            line = lines.get(timeout=WAIT_S)
        except queue.Empty:
            said = "".join(seen)
            raise AssertionError(f"{text!r} not printed; the collector said:\n{said}") from None
        seen.append(line)
        if text in line:
            return seen


def test_the_collector_receives_the_span_with_the_conventions_names(
    cli: CliRunner, collector: tuple[str, queue.Queue[str]]
) -> None:
    url, lines = collector
    result = cli("--headless", "--otlp", url, "--scenario", "anthropic-quirks", "--speed", "0")
    assert "--otlp: 1 span sent" in result.stderr, result.stderr
    printed = "".join(wait_for_line(lines, "block-not-stopped"))
    missing = [line for line in EXPECTED if line not in printed]
    assert missing == [], printed
