"""The terminal ask handler (the batch arithmetic is in tests/scheduling/test_makespan.py)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from toolweave.cli._ask import TerminalAsk, parse_answer
from toolweave.messages import ToolCall


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("y", "allow"),
        (" YES ", "allow"),
        ("n", "deny"),
        ("no", "deny"),
        ("a", "always"),
        ("always", "always"),
        ("maybe", None),
    ],
)
def test_answers_are_parsed(text: str, answer: str | None) -> None:
    assert parse_answer(text) == answer


@pytest.mark.anyio
async def test_the_ask_handler_prompts_until_it_gets_an_answer() -> None:
    lines = iter(["what?", "", "a"])
    prompts: list[str] = []
    paused: list[str] = []

    async def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(lines)

    class Pause:
        def __enter__(self) -> None:
            paused.append("in")

        def __exit__(self, *exc: object) -> None:
            paused.append("out")

    out = io.StringIO()
    ask = TerminalAsk(Console(file=out, width=100), pause=Pause, read=read)
    answer = await ask(
        ToolCall("c1", "bash", {"command": "rm -rf build"}), "an ask rule matched"
    )
    assert answer == "always"
    assert len(prompts) == 3 and paused == ["in", "out"]
    assert (
        "bash rm -rf build" in out.getvalue()
        and "an ask rule matched" in out.getvalue()
    )


@pytest.mark.anyio
async def test_end_of_input_denies() -> None:
    async def read(prompt: str) -> str:
        raise EOFError

    ask = TerminalAsk(Console(file=io.StringIO()), read=read)
    assert await ask(ToolCall("c1", "write", {"path": "x"}), "") == "deny"
