"""What the official-SDK oracle tests share: the core read on a stub scenario's own
bytes (whole, or in the pieces the stub writes), and what a client makes of a call's
argument text."""

from __future__ import annotations

import itertools
import json
from typing import Any

from toolstream_stubs import load_scenario
from toolstream_tui.core import StreamSession, build_report


def scenario_session(name: str, *, seed: int | None = None) -> StreamSession:
    """The core's session on scenario `name`: its bytes in one read, or with `seed`
    in the random pieces the stub writes with that seed."""
    scenario = load_scenario(name)
    session = StreamSession(f"stub:{name}", live=False)
    session.open(scenario.status, scenario.content_type, dict(scenario.headers))
    if seed is None:
        pieces: Any = [scenario.rendered]
    else:
        pieces = itertools.chain.from_iterable(scenario.writes("random", seed, paced=False))
    for piece in pieces:
        session.feed(piece, 0.0)
    session.close(0.0)
    return session


def scenario_report(name: str, *, seed: int | None = None) -> dict[str, Any]:
    return build_report(scenario_session(name, seed=seed).state)


def client_parsed(raw: Any) -> Any:
    """What a client gets from json.loads of a call's argument text (empty means
    `{}`); None when that fails: not JSON, or not a string at all."""
    if not isinstance(raw, str):
        return None
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return None
