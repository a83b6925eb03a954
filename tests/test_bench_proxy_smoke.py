"""bench/proxy.py runs end to end in --quick mode and measures what it says: every
paced event arrives directly and through the proxy, and the bulk stream is read
whole both ways. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "proxy.py"


@pytest.mark.slow
def test_quick_run_measures_latency_and_throughput(tmp_path: Path) -> None:
    results_path = tmp_path / "proxy.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json", str(results_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(results_path.read_text(encoding="utf-8"))
    plan = results["plan"]
    events = plan["streams"] * plan["events"]
    assert results["direct"]["events"] == results["proxied"]["events"] == events
    assert results["bulk_bytes"] > 0
    assert results["direct_bulk_seconds"] > 0 and results["proxied_bulk_seconds"] > 0
    assert "added by the proxy" in done.stdout and "throughput" in done.stdout
