"""Users install toolstream-tui beside other tools, so every dependency it
declares is a compatible range: a lower bound and an upper one, never an exact
version (constraints.txt pins the test run, not the users)."""

from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement

from tests.helpers.paths import PROJECT


def declared_requirements() -> list[str]:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {}).values()
    return [*project["dependencies"], *(line for extra in extras for line in extra)]


def range_problem(line: str) -> str | None:
    operators = {spec.operator for spec in Requirement(line).specifier}
    if operators & {"==", "==="}:
        return "an exact pin"
    if not operators & {">=", ">", "~="}:
        return "no lower bound"
    if not operators & {"<", "~="}:
        return "no upper bound"
    return None


@pytest.mark.parametrize("line", declared_requirements())
def test_each_dependency_is_a_compatible_range(line: str) -> None:
    assert range_problem(line) is None, f"{line!r}: {range_problem(line)}"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("textual==8.2.8", "an exact pin"),
        ("orjson>=3.9", "no upper bound"),
        ("rich<16", "no lower bound"),
        ("uvloop>=0.19,<1; sys_platform != 'win32'", None),
        ("httpx~=0.28", None),
    ],
)
def test_the_range_check_tells_a_pin_and_an_open_end(line: str, problem: str | None) -> None:
    assert range_problem(line) == problem
