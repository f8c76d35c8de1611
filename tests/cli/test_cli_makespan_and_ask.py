"""Batch arithmetic (serial, makespan, lower bound) and the terminal ask handler."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from toolweave.cli._ask import TerminalAsk, parse_answer
from toolweave.messages import ToolCall
from toolweave.scheduling import BatchStats, CallSpan, batch_stats, overlapping
from toolweave.sessions import AccessRecord


def _read(path: str) -> AccessRecord:
    return AccessRecord((f"fs:/w/{path}",), ())


def _write(path: str) -> AccessRecord:
    return AccessRecord((), (f"fs:/w/{path}",))


def test_the_lower_bound_is_the_longest_conflict_chain() -> None:
    spans = [
        CallSpan(0.0, 0.3, _read("a.py")),  # 0.3
        CallSpan(0.0, 0.4, _read("b.py")),  # 0.4, independent
        CallSpan(0.3, 0.55, _write("a.py")),  # waits for #0: 0.3 + 0.25
        CallSpan(0.55, 0.85, _read("a.py")),  # waits for #2: 0.85
    ]
    stats = batch_stats(spans)
    assert stats == BatchStats(
        calls=4,
        makespan=pytest.approx(0.85),
        serial=pytest.approx(1.25),
        ideal=pytest.approx(0.85),
    )
    assert stats.speedup == pytest.approx(1.25 / 0.85)


def test_a_barrier_orders_everything_and_calls_that_never_ran_cost_nothing() -> None:
    spans = [
        CallSpan(0.0, 1.0, _read("a")),
        CallSpan(1.0, 2.0, AccessRecord((), ("*",))),  # a barrier: waits for all before
        CallSpan(2.0, 2.5, _read("b")),  # and everything after waits for it
        CallSpan(None, None, _read("c")),  # never ran
    ]
    stats = batch_stats(spans)
    assert stats.ideal == pytest.approx(2.5) and stats.serial == pytest.approx(2.5)
    assert stats.makespan == pytest.approx(2.5) and stats.unknown_access == 0


def test_an_access_not_recorded_is_no_conflict_and_is_counted() -> None:
    """A lower bound must not assume a conflict nobody recorded (issue 27, item 8)."""
    spans = [
        CallSpan(0.0, 1.0, _read("a")),
        CallSpan(0.0, 2.0, None),  # recorded without its access
        CallSpan(0.0, 0.5, _write("a")),
    ]
    stats = batch_stats(spans)
    assert stats.ideal == pytest.approx(2.0) and stats.unknown_access == 1
    assert (
        batch_stats([]) == BatchStats(0, 0.0, 0.0, 0.0)
        and batch_stats([]).speedup == 1.0
    )


def test_overlaps_include_running_calls_up_to_now() -> None:
    spans = [
        CallSpan(0.0, 1.0),
        CallSpan(0.5, None),
        CallSpan(1.0, 2.0),
        CallSpan(None, None),
    ]
    assert overlapping(spans, 0) == []  # #1 is still running, and no "now" was given
    assert overlapping(spans, 0, now=3.0) == [1]
    assert overlapping(spans, 1, now=3.0) == [0, 2]
    assert overlapping(spans, 2, now=3.0) == [1]  # touching ends do not overlap
    assert overlapping(spans, 3, now=3.0) == []


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
