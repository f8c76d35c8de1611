"""A pattern that backtracks for hours can neither freeze the run nor hang the call.

grep's pure-Python engine (no ripgrep installed) matches each line with the
GIL released and under `LINE_SECONDS`. With Python's `re` a pattern like
``(a|aa)+$`` on a 60-character line holds the GIL for hours: the event loop,
every timeout, every sibling call and the user's Ctrl-C wait for it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from builtin_support import run

import toolweave as tw
from toolweave._exceptions import ToolError, ToolInputError
from toolweave.tools import SessionState
from toolweave.tools.builtin import GrepTool, _grep_python
from toolweave.tools.builtin._grep_python import GrepQuery, PatternTooSlow

pytestmark = pytest.mark.anyio

BACKTRACKS_IN_RE = [
    # (pattern, a line on which Python's `re` backtracks exponentially, the
    # lines the search must report: the trap line never matches)
    ("(a+)+$", "a" * 60 + "!", []),
    ("(a*)*b", "a" * 60, []),
    (r"(\w+\s?)+$", "word " * 30 + "!", ["trap.txt:1:first line"]),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 46 + "!", []),
    (r"(x+x+)+y", "x" * 60, []),
    (r"^(a|ab|abc)+$", "abc" * 30 + "!", []),
]
"""`regex` matches these at once (it prunes the repetition): a plain answer."""

BACKTRACKS_HERE_TOO = [
    ("(a|aa)+$", "a" * 60 + "!"),
    ("(b|bb|bbb)+c", "b" * 60),
    ("(?:a|a)+$", "a" * 60 + "!"),
]
"""Exponential in `regex` too: stopped at the per-line limit, with an error."""

CATASTROPHIC = BACKTRACKS_HERE_TOO


@pytest.fixture
def quick_limit(monkeypatch: pytest.MonkeyPatch) -> float:
    """A short per-line limit so each case ends fast (the default is 2 s)."""
    monkeypatch.setattr(_grep_python, "LINE_SECONDS", 0.2)
    return 0.2


@pytest.mark.parametrize(("pattern", "line", "expected"), BACKTRACKS_IN_RE)
async def test_patterns_that_hang_python_re_are_answered_at_once(
    root: Path,
    state: SessionState,
    quick_limit: float,
    pattern: str,
    line: str,
    expected: list[str],
) -> None:
    (root / "trap.txt").write_text(f"first line\n{line}\n")
    tool = GrepTool(root, ripgrep=False)
    # Within the 0.2 s per-line limit (else PatternTooSlow is raised).
    out = await run(tool, {"pattern": pattern, "output_mode": "content"}, state)
    assert out.splitlines() == expected or (not expected and "No matches" in out)


@pytest.mark.parametrize(("pattern", "line"), CATASTROPHIC)
async def test_a_catastrophic_pattern_ends_in_an_error_that_says_why(
    root: Path, state: SessionState, quick_limit: float, pattern: str, line: str
) -> None:
    (root / "ok.txt").write_text("nothing to see\n")
    (root / "trap.txt").write_text(f"first line\n{line}\n")
    tool = GrepTool(root, ripgrep=False)
    with pytest.raises(ToolError, match="catastrophic backtracking") as caught:
        await run(tool, {"pattern": pattern, "output_mode": "content"}, state)
    assert "line 2 of trap.txt" in str(caught.value)
    assert f"{quick_limit:g} s" in str(caught.value)


async def test_the_event_loop_runs_while_a_line_is_being_matched(
    root: Path, state: SessionState, quick_limit: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rendezvous: a sibling task runs to its end while the match is still going."""
    pattern, line = CATASTROPHIC[0]
    (root / "trap.txt").write_text(line + "\n")
    inside = threading.Event()
    done = threading.Event()
    real_spans = _grep_python._spans

    def watched(*args: object, **kwargs: object) -> list[tuple[int, int]]:
        inside.set()
        try:
            return real_spans(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            done.set()

    monkeypatch.setattr(_grep_python, "_spans", watched)
    seen_while_matching: list[bool] = []

    async def sibling() -> None:
        await anyio.to_thread.run_sync(inside.wait)
        for _ in range(10):  # loop turns that need the GIL
            await anyio.lowlevel.checkpoint()
        seen_while_matching.append(not done.is_set())

    tool = GrepTool(root, ripgrep=False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(sibling)
        with pytest.raises(ToolError, match="catastrophic"):
            await run(tool, {"pattern": pattern}, state)
    assert seen_while_matching == [True]


async def test_in_an_agent_run_the_call_fails_and_its_siblings_finish(
    root: Path, quick_limit: float
) -> None:
    pattern, line = CATASTROPHIC[1]
    (root / "trap.txt").write_text(line + "\n")
    (root / "fine.txt").write_text("needle\n")
    grep = GrepTool(root, ripgrep=False)
    usage = tw.Usage(1, 1)
    model = tw.models.ScriptedModel(
        [
            tw.ModelResponse(
                [
                    tw.ToolCall("bad", "grep", {"pattern": pattern}),
                    tw.ToolCall("good", "grep", {"pattern": "needle"}),
                ],
                tw.StopReason.TOOL_USE,
                usage,
            ),
            tw.ModelResponse([tw.Text("done")], tw.StopReason.END_TURN, usage),
        ]
    )
    agent = tw.Agent(model, [grep], config=tw.AgentConfig(workspace=root))
    result = await agent.run("search")
    assert result.output == "done"
    bad, good = result.messages[-2].tool_results
    assert bad.is_error and "catastrophic backtracking" in bad.text
    assert not good.is_error and good.text == "fine.txt"


def test_ordinary_patterns_match_as_before(root: Path) -> None:
    """The `regex` engine reads `re` syntax: classes, look-around, flags, unicode."""
    (root / "f.txt").write_text("id = 42\nfoobar\nFOObaz\ncafé\n")
    from toolweave.tools.builtin import Workspace

    def lines(regex: str, ignore_case: bool = False) -> list[str]:
        query = GrepQuery(
            regex=regex, start=root, mode="content", ignore_case=ignore_case
        )
        return list(_grep_python.python_grep(query, Workspace(root), lambda: None))

    assert lines(r"\d+") == ["f.txt:1:id = 42"]
    assert lines("foo(?=bar)") == ["f.txt:2:foobar"]
    assert lines("foo(?!bar)", ignore_case=True) == ["f.txt:3:FOObaz"]
    assert lines(r"caf\w$") == ["f.txt:4:café"]


async def test_an_invalid_pattern_is_an_input_error(
    root: Path, state: SessionState
) -> None:
    (root / "f.txt").write_text("x\n")
    with pytest.raises(ToolInputError, match="invalid regular expression"):
        await run(GrepTool(root, ripgrep=False), {"pattern": "(unclosed"}, state)


def test_pattern_too_slow_is_not_a_tool_input_error() -> None:
    """The model's pattern was valid: it gets a tool error, not a schema error."""
    assert not issubclass(PatternTooSlow, ToolInputError)


@pytest.fixture
def quick_glob_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolweave.tools.builtin import _walk

    monkeypatch.setattr(_walk, "GLOB_MATCH_SECONDS", 0.2)


async def test_a_glob_with_many_stars_is_answered_at_once(
    root: Path, state: SessionState, quick_glob_limit: None
) -> None:
    """``*a*a…*b`` against a long name: minutes with Python's `re` (polynomial of
    high degree); the `regex` engine answers it at once."""
    from toolweave.tools.builtin import GlobTool

    (root / ("a" * 60)).write_text("x")
    (root / ("a" * 20 + "b")).write_text("x")
    out = await run(GlobTool(root), {"pattern": "*a" * 16 + "*b"}, state)
    assert out == "a" * 20 + "b"


@pytest.mark.parametrize("engine", ["glob", "grep"])
async def test_a_glob_that_backtracks_exponentially_ends_its_call_with_an_error(
    root: Path, state: SessionState, quick_glob_limit: None, engine: str
) -> None:
    from toolweave.tools.builtin import GlobTool

    (root / ("a" * 60)).write_text("needle\n")
    pattern = "{a,aa}" * 40 + "b"
    if engine == "glob":
        call = run(GlobTool(root), {"pattern": pattern}, state)
    else:
        raw = {"pattern": "needle", "glob": pattern}
        call = run(GrepTool(root, ripgrep=False), raw, state)
    with pytest.raises(ToolError, match="alternatives or wildcards"):
        await call
