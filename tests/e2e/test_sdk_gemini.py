"""google-genai as the oracle for the gemini dialect: the SDK reads every gemini-
and vertex- stub scenario from a real stub server on 127.0.0.1, and what an SDK user
accumulates from its chunks (candidate 0's text, thought text, function calls with
name, args and id, the last finishReason) must equal our report on the same bytes.

Where the SDK cannot read a scenario, the test says exactly what it raises and what
our report says instead. The SDK does not assemble Vertex `partialArgs`: it hands
the pieces over as they came, so those are compared with our fragments, and our
assembled arguments are compared with the arguments the pieces spell."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials

from tests.helpers.oracles import scenario_session
from toolstream_stubs import StubServer, load_scenario
from toolstream_stubs.scenarios import scenario_names
from toolstream_tui.core import build_report

API_KEY = "gemini-parity-key"
MODEL = "stub-model"
PROMPT = "What is the weather?"
TIMEOUT_MS = 20_000
GEMINI_NAMES = [name for name in scenario_names() if name.startswith("gemini-")]
VERTEX_NAMES = [name for name in scenario_names() if name.startswith("vertex-")]
# Scenarios the SDK cannot read to the end, each with why (tested one by one below).
SDK_FAILS = {
    "gemini-error": "an error object mid-stream: the SDK raises ServerError",
    "gemini-truncated": "a last event cut mid-JSON: the SDK raises UnknownApiResponseError",
    "gemini-array": "a JSON array (no alt=sse): the SDK, which asks for SSE, cannot parse it",
    "gemini-blocked": "a blocked prompt: the SDK yields it; there is no message to compare",
}


class Call(NamedTuple):
    id: str | None
    name: str | None
    arguments: Any


@dataclass(frozen=True)
class Final:
    text: str
    reasoning: str
    calls: tuple[Call, ...]
    finish: str | None


# -- our side -------------------------------------------------------------------------


def ours(name: str) -> tuple[Final, dict[str, Any]]:
    report = build_report(scenario_session(name).state)
    calls = tuple(
        Call(call["id"], call["name"], call["arguments"]) for call in report["tool_calls"]
    )
    final = Final(report["text"], report["reasoning"], calls, report["finish_reason"])
    return final, report


# -- the SDK's side ---------------------------------------------------------------------


def options(stub: StubServer, name: str, api_version: str) -> types.HttpOptions:
    return types.HttpOptions(
        base_url=f"{stub.base_url}/scenarios/{name}",
        api_version=api_version,
        timeout=TIMEOUT_MS,
        retry_options=types.HttpRetryOptions(attempts=1),
    )


def gemini_client(stub: StubServer, name: str) -> genai.Client:
    return genai.Client(api_key=API_KEY, http_options=options(stub, name, "v1beta"))


def vertex_client(stub: StubServer, name: str) -> genai.Client:
    """Vertex AI with a static token: the SDK refreshes only missing or expired ones,
    so it never looks for credentials on the network."""
    return genai.Client(
        vertexai=True,
        project="stub",
        location="us-central1",
        credentials=Credentials(token="stub-token"),
        http_options=options(stub, name, "v1beta1"),
    )


def stream(client: genai.Client, seen: list[types.GenerateContentResponse]) -> None:
    """Every chunk the SDK yields, kept in `seen` (so what came before a raise stays)."""
    for chunk in client.models.generate_content_stream(model=MODEL, contents=PROMPT):
        seen.append(chunk)


def parts_of(chunks: list[types.GenerateContentResponse]) -> Iterator[types.Part]:
    for chunk in chunks:
        for candidate in chunk.candidates or []:
            if (candidate.index or 0) == 0 and candidate.content is not None:
                yield from candidate.content.parts or []


def accumulated(chunks: list[types.GenerateContentResponse]) -> Final:
    """The answer as an SDK user puts it together from the chunks."""
    text, reasoning, calls = [], [], []
    for part in parts_of(chunks):
        if part.text is not None:
            (reasoning if part.thought else text).append(part.text)
        call = part.function_call
        if call is not None and call.name is not None:
            calls.append(Call(call.id, call.name, {} if call.args is None else call.args))
    finish = None
    for chunk in chunks:
        for candidate in chunk.candidates or []:
            if (candidate.index or 0) == 0 and candidate.finish_reason is not None:
                finish = candidate.finish_reason.value
    return Final("".join(text), "".join(reasoning), tuple(calls), finish)


def sdk_raw_args(chunks: list[types.GenerateContentResponse]) -> list[str]:
    """Each whole call's args as compact JSON ("" when the call had none)."""
    calls = [part.function_call for part in parts_of(chunks) if part.function_call is not None]
    return [
        ""
        if call.args is None
        else json.dumps(call.args, ensure_ascii=False, separators=(",", ":"))
        for call in calls
        if call.name is not None
    ]


def sdk_pieces(chunks: list[types.GenerateContentResponse]) -> list[tuple[str, Any, bool]]:
    """Every partialArgs piece the SDK handed over: (path, value, continues)."""
    found = []
    for part in parts_of(chunks):
        call = part.function_call
        for piece in (call.partial_args or []) if call is not None else []:
            values = (piece.string_value, piece.number_value, piece.bool_value)
            value = next((v for v in values if v is not None), None)
            found.append((piece.json_path, value, bool(piece.will_continue)))
    return found


def our_pieces(name: str) -> list[tuple[str, Any, bool]]:
    """Every piece our lanes show (`$.path = value`, ` …` when it continues)."""
    state = scenario_session(name).state
    found = []
    for lane in sorted(state.calls):
        for line in state.calls[lane].fragments():
            path, _, shown = line.removesuffix("\n").partition(" = ")
            found.append((path, json.loads(shown.removesuffix(" …")), shown.endswith(" …")))
    return found


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer("demo", speed=0) as server:
        yield server


# -- the Gemini API -----------------------------------------------------------------------


def test_every_scenario_is_compared() -> None:
    assert set(SDK_FAILS) < set(GEMINI_NAMES)
    assert VERTEX_NAMES, "the Vertex partialArgs scenarios exist"


@pytest.mark.parametrize("name", [name for name in GEMINI_NAMES if name not in SDK_FAILS])
def test_the_sdk_reads_the_stream_as_the_report_does(stub: StubServer, name: str) -> None:
    seen: list[types.GenerateContentResponse] = []
    stream(gemini_client(stub, name), seen)
    final, report = ours(name)
    assert final == accumulated(seen)
    assert report["status"] == "finished"
    whole = [(call["arguments_raw"], call["fragments"]) for call in report["tool_calls"]]
    assert whole == [(raw, int(bool(raw))) for raw in sdk_raw_args(seen)], (
        "args arrive whole: one fragment of compact JSON each, none when absent"
    )


def test_malformed_call_finishes_with_its_reason_named(stub: StubServer) -> None:
    _, report = ours("gemini-malformed")
    assert report["finish_reason"] == "MALFORMED_FUNCTION_CALL"
    [anomaly] = [a for a in report["anomalies"] if a["kind"] == "finish-malformed-call"]
    assert "print(default_api.book_flight" in anomaly["detail"]


def test_an_error_mid_stream_raises_in_the_sdk_and_fails_the_report(stub: StubServer) -> None:
    seen: list[types.GenerateContentResponse] = []
    with pytest.raises(errors.ServerError) as raised:
        stream(gemini_client(stub, "gemini-error"), seen)
    assert (raised.value.code, raised.value.status) == (503, "UNAVAILABLE")
    assert raised.value.message == "The model is overloaded. Please try again later."
    final, report = ours("gemini-error")
    assert final == accumulated(seen), "what came before the error"
    assert report["status"] == "error"
    assert report["error"] == (
        "error in stream: UNAVAILABLE (503): The model is overloaded. Please try again later."
    )


def test_a_cut_stream_raises_in_the_sdk_and_is_truncated_in_the_report(
    stub: StubServer,
) -> None:
    seen: list[types.GenerateContentResponse] = []
    with pytest.raises(errors.UnknownApiResponseError, match="Failed to parse response as JSON"):
        stream(gemini_client(stub, "gemini-truncated"), seen)
    sdk = accumulated(seen)
    _, report = ours("gemini-truncated")
    assert (report["status"], report["finish_reason"], sdk.finish) == ("truncated", None, None)
    assert report["text"] == sdk.text
    assert [(c["name"], c["arguments"]) for c in report["tool_calls"]] == [
        (call.name, call.arguments) for call in sdk.calls
    ], "a call that came whole is complete, cut stream or not"
    assert [call["error"] for call in report["tool_calls"]] == [None]


def test_a_blocked_prompt_is_yielded_by_the_sdk_and_fails_the_report(stub: StubServer) -> None:
    seen: list[types.GenerateContentResponse] = []
    stream(gemini_client(stub, "gemini-blocked"), seen)
    [chunk] = seen
    assert chunk.candidates is None and chunk.prompt_feedback is not None
    assert chunk.prompt_feedback.block_reason == types.BlockedReason.SAFETY
    _, report = ours("gemini-blocked")
    assert report["status"] == "error"
    assert report["error"] == "the prompt was blocked (SAFETY)"
    assert [a["kind"] for a in report["anomalies"]] == ["blocked"]


def test_the_json_array_reads_as_its_sse_twin_does(stub: StubServer) -> None:
    array, sse = load_scenario("gemini-array"), load_scenario("gemini-text-tools")
    elements = json.loads(array.rendered)
    lines = sse.rendered.decode().split("\r\n\r\n")
    assert elements == [json.loads(line.removeprefix("data: ")) for line in lines if line]
    with pytest.raises(errors.UnknownApiResponseError):
        stream(gemini_client(stub, "gemini-array"), [])
    seen: list[types.GenerateContentResponse] = []
    stream(gemini_client(stub, "gemini-text-tools"), seen)
    final, report = ours("gemini-array")
    assert final == accumulated(seen)
    assert report["status"] == "finished"


# -- Vertex AI: partialArgs -----------------------------------------------------------------

ASSEMBLED = {
    "vertex-partial-args": [
        {
            "destination": {"city": "San Francisco", "nights": 3},
            "stops": [{"name": "Golden Gate Park"}, {"name": "Alcatraz", "booked": True}],
            "notes": None,
        },
        {"city": "San Francisco"},
    ],
    # The later piece wins; a string whose end never came keeps what arrived.
    "vertex-partial-contradiction": [
        {"destination": 7, "nights": 2, "stops": ["Colosseum"], "notes": "Bring an umb"}
    ],
}


@pytest.mark.parametrize("name", VERTEX_NAMES)
def test_the_sdk_hands_over_the_pieces_our_lanes_show(stub: StubServer, name: str) -> None:
    seen: list[types.GenerateContentResponse] = []
    stream(vertex_client(stub, name), seen)
    sdk = accumulated(seen)
    final, _ = ours(name)
    assert (final.text, final.reasoning, final.finish) == (sdk.text, sdk.reasoning, sdk.finish)
    assert [call.name for call in final.calls] == [call.name for call in sdk.calls]
    assert our_pieces(name) == sdk_pieces(seen)


@pytest.mark.parametrize("name", VERTEX_NAMES)
def test_the_pieces_assemble_into_the_arguments(name: str) -> None:
    final, report = ours(name)
    assert [call.arguments for call in final.calls] == ASSEMBLED[name]
    assert [json.loads(call["arguments_raw"]) for call in report["tool_calls"]] == ASSEMBLED[name]
    assert report["status"] == "finished"


def test_contradicting_and_unended_pieces_are_named() -> None:
    _, report = ours("vertex-partial-contradiction")
    kinds = {a["kind"]: a for a in report["anomalies"]}
    assert set(kinds) == {"partial-args-conflict", "partial-args-unended"}
    assert kinds["partial-args-conflict"]["count"] == 3
    assert kinds["partial-args-unended"]["detail"] == "$.notes was to continue; its end never came"
    _, clean = ours("vertex-partial-args")
    assert clean["anomalies"] == []
