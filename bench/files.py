"""Stream files on disk for the app benchmark: generated once into a cache keyed
by the generator's parameters, its seed and its source code, and paced copies
(the same body with a timing file that spreads its reads over N seconds)."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

from toolstream_stubs import generators
from toolstream_tui.sources.recording import FORMAT, timing_path

from . import streams

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "toolstream-bench-cache"
PACED_READ_BYTES = 16 * 1024  # a read every few milliseconds, as a fast provider sends
WRITE_BUFFER = 4 * 1024 * 1024

Generator = Callable[..., streams.GeneratedStream]
GENERATORS: dict[str, Generator] = {
    "big-args": streams.big_args,
    "parallel": streams.parallel,
    "one-chunk-calls": streams.one_chunk_calls,
}


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """One stream file: its name on screen, the generator and its arguments."""

    name: str
    kind: str  # a key of GENERATORS
    args: tuple[int, ...]  # after the name: sizes and counts

    def describe(self) -> str:
        return f"{self.kind}{list(self.args)}"


@dataclass(frozen=True, slots=True)
class StreamFile:
    name: str
    path: Path
    events: int
    body_bytes: int
    argument_bytes: int
    calls: int

    def facts(self) -> dict[str, Any]:
        """What the results file says about it (no path of this machine)."""
        facts = asdict(self)
        facts["path"] = self.path.name
        return facts


def source_digest() -> str:
    """The generators' code: a change to it makes new files."""
    digest = hashlib.sha256()
    for module in (streams, generators):
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()


def cache_stem(spec: StreamSpec, seed: int) -> str:
    return "-".join([spec.name, spec.kind, *map(str, spec.args), f"seed{seed}"])


def stream_file(spec: StreamSpec, seed: int, cache: Path) -> StreamFile:
    """The file for `spec`, generated on first use; later runs reuse it until the
    generators' code changes."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = cache_stem(spec, seed)
    path = cache / f"{stem}-{source_digest()[:12]}.sse"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        return StreamFile(path=path, **json.loads(meta_path.read_text(encoding="utf-8")))
    remove_stale(cache, stem, keep=path.stem)
    partial = path.with_suffix(".partial")
    with partial.open("wb", buffering=WRITE_BUFFER) as out:
        made = generate(spec, seed, out)
    os.replace(partial, path)
    facts = {
        "name": spec.name,
        "events": made.events,
        "body_bytes": path.stat().st_size,
        "argument_bytes": made.argument_bytes,
        "calls": len(made.calls),
    }
    meta_path.write_text(json.dumps(facts), encoding="utf-8")
    return StreamFile(path=path, **facts)


def generate(spec: StreamSpec, seed: int, out: BinaryIO) -> streams.GeneratedStream:
    return GENERATORS[spec.kind](spec.name, *spec.args, seed=seed, out=out)


def remove_stale(cache: Path, stem: str, keep: str) -> None:
    """The same stream made by older generators (a 688 MB file should not pile up)."""
    for old in cache.glob(f"{stem}-*"):
        if not old.name.startswith(f"{keep}."):
            old.unlink(missing_ok=True)


def paced(stream: StreamFile, seconds: float) -> Path:
    """The same body beside a timing file that spreads its reads evenly over
    `seconds`: replayed at --speed 1 it streams for that long."""
    path = stream.path.with_name(f"{stream.path.stem}.paced{seconds:g}s.sse")
    if not path.exists():
        os.link(stream.path, path)
    timing = timing_path(path)
    if not timing.exists():
        partial = timing.with_suffix(".partial")
        partial.write_text(timing_lines(stream.body_bytes, seconds), encoding="utf-8")
        os.replace(partial, timing)
    return path


def timing_lines(body_bytes: int, seconds: float) -> str:
    ends = [*range(PACED_READ_BYTES, body_bytes, PACED_READ_BYTES), body_bytes]
    records: list[dict[str, Any]] = [
        {"format": FORMAT, "source": "bench (paced)"},
        {"status": 200, "content_type": "text/event-stream", "t": 0.0},
    ]
    step = seconds / len(ends)
    records += [{"end": end, "t": round(step * (number + 1), 6)} for number, end in enumerate(ends)]
    return "".join(json.dumps(record) + "\n" for record in records)
