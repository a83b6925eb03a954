"""Stub OpenAI-compatible SSE server replaying scripted tool-call streams."""

from toolstream_stubs.faults import FAULTS, Fault, FaultError
from toolstream_stubs.scenarios import (
    Scenario,
    ScenarioInfo,
    ScenarioNotFound,
    list_scenarios,
    load_scenario,
)
from toolstream_stubs.server import RecordedRequest, StubServer

__all__ = [
    "FAULTS",
    "Fault",
    "FaultError",
    "RecordedRequest",
    "Scenario",
    "ScenarioInfo",
    "ScenarioNotFound",
    "StubServer",
    "list_scenarios",
    "load_scenario",
]
