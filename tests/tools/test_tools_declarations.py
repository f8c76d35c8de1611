"""Declarations: an Access constant is accepted, and a declaration mistake is never silent."""

from __future__ import annotations

from typing import Any

import pytest

from toolweave._exceptions import ToolDefinitionError
from toolweave.tools import Access, Concurrency, reporting_declaration_errors, tool

READS = Access(reads=("db:users",))


@tool(concurrency=Concurrency.SAFE, access=READS)
async def constant() -> str:
    """Declares one Access for every call."""
    return ""


def test_an_access_constant_is_the_access_of_every_call() -> None:
    assert constant.access_for({}) is READS


def test_access_must_be_an_access_or_a_callable() -> None:
    with pytest.raises(ToolDefinitionError, match="access= must be"):

        @tool(access=("db:users",))  # type: ignore[call-overload]
        async def wrong() -> None:
            """Declares a tuple."""


def _boom(args: dict[str, Any]) -> Any:
    raise KeyError("path")


MISTAKES = [
    # (concurrency spec, access spec, which, expected fragment, fail-closed result)
    (_boom, READS, "concurrency", "raised KeyError: 'path'", Concurrency.SEQUENTIAL),
    (
        lambda args: "yes",
        READS,
        "concurrency",
        "returned 'yes'",
        Concurrency.SEQUENTIAL,
    ),
    (Concurrency.SAFE, _boom, "access", "raised KeyError: 'path'", Access.barrier()),
    (
        Concurrency.SAFE,
        lambda args: ("x",),
        "access",
        "returned ('x',)",
        Access.barrier(),
    ),
    (
        Concurrency.SAFE,
        lambda args: 1 / 0,
        "access",
        "ZeroDivisionError",
        Access.barrier(),
    ),
]


@pytest.mark.parametrize(
    ("concurrency", "access", "which", "fragment", "closed"), MISTAKES
)
def test_a_failing_declaration_fails_closed_and_is_reported_once(
    concurrency: Any, access: Any, which: str, fragment: str, closed: object
) -> None:
    @tool(name="shaky", concurrency=concurrency, access=access)
    async def shaky() -> None:
        """Has a broken declaration."""

    told: list[str] = []
    with reporting_declaration_errors(told.append):
        for _ in range(3):
            got = (
                shaky.concurrency_for({})
                if which == "concurrency"
                else shaky.access_for({})
            )
            assert got == closed
    assert len(told) == 1
    assert "'shaky'" in told[0] and which in told[0] and fragment in told[0]
    shaky.concurrency_for({})  # outside the block: nobody is told, still fail-closed
    shaky.access_for({})
    assert len(told) == 1


def test_booleans_are_verdicts_and_a_raising_sink_is_ignored() -> None:
    @tool(concurrency=lambda args: args["safe"])
    async def judged(safe: bool) -> None:
        """Judges itself."""

    assert judged.concurrency_for({"safe": True}) is Concurrency.SAFE
    assert judged.concurrency_for({"safe": False}) is Concurrency.SEQUENTIAL

    def sink(line: str) -> None:
        raise RuntimeError("listener bug")

    with reporting_declaration_errors(sink):
        assert judged.concurrency_for({}) is Concurrency.SEQUENTIAL
