"""`python -m bench otlp` runs end to end in one small round. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.test_bench_smoke import run_bench


@pytest.mark.slow
def test_one_small_round_measures_both_streams(tmp_path: Path) -> None:
    results = tmp_path / "otlp.json"
    run = run_bench(
        "otlp", "--calls", "2", "--call-bytes", "500", "--pairs", "1", "--json", str(results)
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(results.read_text())
    for key in ("stream", "tiny"):
        entry = data["results"][key]
        assert entry["pairs"] == 1 and entry["bytes"] > 0
        assert entry["with_median_s"] > 0 and entry["without_median_s"] > 0
        assert f"{key:<7} {entry['bytes']}" in run.stdout
