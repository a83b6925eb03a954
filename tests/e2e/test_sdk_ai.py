"""The Vercel AI SDK as an oracle for the ai-sdk-ui dialect: its `ai` package (in
tests/node, installed by `npm ci --prefix tests/node`) reads every aisdk-* stub
scenario from a real stub server on 127.0.0.1, the way `useChat` does (the chunk
parser of its DefaultChatTransport, then `readUIMessageStream`). Its final UIMessage
(text and reasoning parts; tool parts with their toolCallId, tool name, state, input
and errorText), the errors it reported and the finish chunk it saw must equal what
our report says of the same bytes.

Skipped, with the reason, where node or the package is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers.oracles import scenario_report
from tests.helpers.paths import TESTS
from toolstream_stubs import StubServer, list_scenarios
from toolstream_tui.core.state import INTERRUPTED_CALL_ERROR, TRUNCATED_CALL_ERROR

ORACLE = TESTS / "node"
SCRIPT = ORACLE / "read-ui-message-stream.mjs"
PACKAGE = ORACLE / "node_modules" / "ai"
ENDPOINT = "/api/chat"
TIMEOUT = 60.0  # seconds for node to start, fetch and read one scenario
NAMES = [info.name for info in list_scenarios() if info.name.startswith("aisdk-")]
# Tool part states: the input streaming, settled, or refused. Whether a tool then ran
# on the server (output-available) is not the stream's tool input, so it reads as settled.
STREAMING, SETTLED, REFUSED = "input-streaming", "input-available", "output-error"
SDK_STATES = {"output-available": SETTLED}


@dataclass(frozen=True)
class ToolPart:
    call_id: str
    name: str
    state: str
    input: Any  # the parsed input once settled or refused; the raw text while streaming
    error_text: str | None


@dataclass(frozen=True)
class Final:
    text: str
    reasoning: str
    tools: tuple[ToolPart, ...]
    errors: tuple[str, ...]
    finished: bool
    finish_reason: str | None


# -- our side: the core on the scenario's bytes --------------------------------------------


def ours(name: str) -> Final:
    report = scenario_report(name)
    assert report["dialect"] == "ai-sdk-ui"
    anomalies = report["anomalies"]
    refused = {a["index"]: a["detail"] for a in anomalies if a["kind"] == "tool-input-error"}
    return Final(
        report["text"],
        report["reasoning"],
        tuple(our_tool_part(call, refused.get(call["index"])) for call in report["tool_calls"]),
        tuple(a["detail"] for a in anomalies if a["kind"] == "error-event"),
        report["status"] == "finished",
        report["finish_reason"],
    )


def our_tool_part(call: dict[str, Any], refusal: str | None) -> ToolPart:
    if refusal is not None:
        return ToolPart(call["id"], call["name"], REFUSED, call["arguments"], refusal)
    if call["error"] in (TRUNCATED_CALL_ERROR, INTERRUPTED_CALL_ERROR):
        return ToolPart(call["id"], call["name"], STREAMING, call["arguments_raw"], None)
    return ToolPart(call["id"], call["name"], SETTLED, call["arguments"], None)


# -- the SDK's side ------------------------------------------------------------------------------


def oracle_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not PACKAGE.is_dir():
        return f"{PACKAGE.relative_to(ORACLE.parent.parent)} is missing: npm ci --prefix tests/node"
    return None


def sdk_final(stub: StubServer, name: str) -> Final:
    url = f"{stub.base_url}/scenarios/{name}{ENDPOINT}"
    node = shutil.which("node") or "node"
    done = subprocess.run(
        [node, str(SCRIPT), url], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    parts = read["message"]["parts"]
    return Final(
        "".join(part["text"] for part in parts if part["type"] == "text"),
        "".join(part["text"] for part in parts if part["type"] == "reasoning"),
        tuple(sdk_tool_part(part) for part in parts if is_tool_part(part)),
        tuple(read["errors"]),
        read["finish"]["seen"],
        read["finish"]["reason"],
    )


def is_tool_part(part: dict[str, Any]) -> bool:
    return part["type"].startswith("tool-") or part["type"] == "dynamic-tool"


def sdk_tool_part(part: dict[str, Any]) -> ToolPart:
    name = part["toolName"] if part["type"] == "dynamic-tool" else part["type"][len("tool-") :]
    state = SDK_STATES.get(part["state"], part["state"])
    value = part.get("rawInput") if state == STREAMING else part.get("input")
    return ToolPart(part["toolCallId"], name, state, value, part.get("errorText"))


# -- the comparisons ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    missing = oracle_missing()
    if missing is not None:
        print(f"test_sdk_ai: skipped, {missing}")
        pytest.skip(missing)
    # Random writes: the SDK's parser meets events cut anywhere, as over a network.
    with StubServer("demo", split="random", seed=5, speed=0) as server:
        yield server


def test_every_described_fault_has_a_scenario() -> None:
    wanted = {"text-tools", "empty-args", "truncated", "error", "tool-input-error", "mismatch"}
    assert {f"aisdk-{name}" for name in wanted | {"reasoning"}} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_sdk_reads_each_scenario_as_we_report_it(stub: StubServer, name: str) -> None:
    assert sdk_final(stub, name) == ours(name)


def test_the_oracle_sees_what_matters(stub: StubServer) -> None:
    """The comparison is not vacuous: the scenarios hold every state, both ends and an
    error, as the SDK reads them."""
    finals = [sdk_final(stub, name) for name in NAMES]
    states = {tool.state for final in finals for tool in final.tools}
    assert states == {STREAMING, SETTLED, REFUSED}
    assert {final.finished for final in finals} == {True, False}
    assert any(final.errors for final in finals)
    assert any(final.reasoning for final in finals)
    assert sdk_final(stub, "aisdk-mismatch").tools[0].input == {"city": "Berlin, DE", "days": 3}
