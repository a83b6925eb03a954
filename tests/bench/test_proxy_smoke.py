"""bench/proxy.py runs end to end in --quick mode and measures what it says: every
paced event arrives directly and through the proxy, and the bulk stream is read
whole both ways. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.paths import PROJECT

BENCH = PROJECT / "bench" / "proxy.py"


def quick_run(tmp_path: Path, *options: str) -> tuple[str, dict[str, Any]]:
    """What `bench/proxy.py --quick` printed, and the figures it wrote."""
    results_path = tmp_path / "proxy.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", *options, "--json", str(results_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(results_path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_quick_run_measures_latency_and_throughput(tmp_path: Path, bench_proxy: ModuleType) -> None:
    printed, results = quick_run(tmp_path)
    plan = results["plan"]
    events = plan["streams"] * plan["events"]
    assert results["direct"]["events"] == results["proxied"]["events"] == events
    settled = plan["streams"] * (plan["events"] - bench_proxy.START_EVENTS)
    assert results["direct_settled"]["events"] == results["proxied_settled"]["events"] == settled
    assert results["bulk_bytes"] > 0
    assert results["direct_bulk_seconds"] > 0 and results["proxied_bulk_seconds"] > 0
    assert_every_reader_read_the_stub(results, printed, bench_proxy)
    assert "added by the proxy" in printed and "toolstream-stub --scenario" in printed


def assert_every_reader_read_the_stub(
    results: dict[str, Any], printed: str, bench_proxy: ModuleType
) -> None:
    assert results["stub_bytes"] > 0
    reads = results["stub_reads"]
    assert set(reads) == {reader.name for reader in bench_proxy.READERS}
    assert reads["socket"]["count"] == reads["httpx"]["count"] == results["stub_bytes"]
    assert reads["openai"]["count"] > 0  # chunks the SDK handed over, the same both ways
    for read in reads.values():
        assert read["direct_seconds"] > 0 and read["proxied_seconds"] > 0
        assert "{:.2f}x of direct".format(read["ratio"]) in printed


@pytest.mark.slow
def test_quick_run_with_recording_records_every_response(tmp_path: Path) -> None:
    """--record: the proxy's --record-dir costs the forwarder its own reading of
    each response (a key in play: the second reading that keeps the key out)."""
    printed, results = quick_run(tmp_path, "--record")
    plan = results["plan"]
    assert results["recording"] is True
    assert results["recordings"] >= plan["streams"]  # and the warm-up's and the bulk reads
    assert "the proxy recording every response (--record-dir)" in printed


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="the request list runs in tmux")
def test_quick_run_with_the_request_list_presses_keys(
    tmp_path: Path, bench_proxy: ModuleType
) -> None:
    printed, results = quick_run(tmp_path, "--app", "--events", "60")
    plan = results["plan"]
    events = plan["streams"] * plan["events"]
    assert results["direct"]["events"] == results["proxied"]["events"] == events
    assert results["pressing"]["events"] == events
    settled = plan["streams"] * (plan["events"] - bench_proxy.START_EVENTS)
    assert results["direct_settled"]["events"] == results["proxied_settled"]["events"] == settled
    assert results["pressing_settled"]["events"] == settled
    assert results["keys"]["presses"] >= 1 and results["app_peak_rss_mb"] > 0
    assert "key f -> the frame" in printed
    assert "throughput of one stream through the request list" in printed
    assert_every_reader_read_the_stub(results, printed, bench_proxy)


@pytest.mark.slow
def test_quick_soak_reports_each_cycle_and_the_baseline(tmp_path: Path) -> None:
    printed, results = quick_run(tmp_path, "--soak", "2", "--load-s", "0.5", "--idle-s", "0")
    assert len(results["cycles"]) == 2
    for cycle in results["cycles"]:
        assert cycle["requests"] >= results["plan"]["streams"]
        for side in ("watcher", "forwarder"):
            assert cycle["idle"][side]["rss_mb"] > 0 and cycle["idle"][side]["descriptors"] > 0
    assert "RSS growth, first idle to last" in printed


@pytest.mark.slow
def test_quick_keep_alive_run_uses_one_connection(tmp_path: Path) -> None:
    printed, results = quick_run(tmp_path, "--keep-alive", "20")
    assert results["client_connections"] == 1 and results["seconds"] > 0
    for side in ("watcher", "forwarder"):
        assert results["after"][side]["descriptors"] > 0
    assert "20 sequential requests through the proxy on 1 client connection(s)" in printed


@pytest.mark.slow
def test_quick_stopped_watcher_run_checks_every_byte(tmp_path: Path) -> None:
    printed, results = quick_run(tmp_path, "--stopped-watcher", "0.2")
    assert results["byte_exact"] is True
    assert results["requests_listed"] == results["streams"] + 1  # and the warm-up
    assert results["forwarder_peak_rss_mb"] >= results["forwarder_rss_before_mb"] > 0
    assert "every client got every byte: yes" in printed


@pytest.fixture(scope="module")
def bench_proxy() -> ModuleType:
    """bench/proxy.py as a module (it imports its neighbours as a script does)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH.parent))
        spec = importlib.util.spec_from_file_location("bench_proxy", BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        patch.setitem(sys.modules, spec.name, module)  # its dataclasses look it up
        spec.loader.exec_module(module)
    return module


def test_the_bench_client_reads_a_chunked_body_cut_anywhere(bench_proxy: ModuleType) -> None:
    """A read may end anywhere, also between a chunk's data and its CRLF (a cut
    there once made the bench report a whole proxied stream as cut short)."""
    parts = [b"data: one\n\n", b"x" * 300, b"\r\n", b"data: [DONE]\n\n"]
    wire = b"".join(bench_proxy.chunk_of(part) for part in parts) + b"0\r\n\r\n"
    for cut in range(len(wire) + 1):
        chunks = bench_proxy.Dechunker()
        body = chunks.feed(wire[:cut]) + chunks.feed(wire[cut:])
        assert (body, chunks.done) == (b"".join(parts), True), cut
    chunks = bench_proxy.Dechunker()
    body = b"".join(chunks.feed(wire[i : i + 1]) for i in range(len(wire)))
    assert (body, chunks.done) == (b"".join(parts), True)
