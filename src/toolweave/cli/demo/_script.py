"""The demo's scripted model turns: survey, fix, test, report."""

from __future__ import annotations

from typing import Any

from ...messages import ModelResponse, StopReason, Text, ToolCall, Usage
from ...models import ScriptedModel, ScriptStep

__all__ = ["DEMO_PROMPT", "demo_model"]

DEMO_PROMPT = (
    "average() in src/calc.py gives wrong answers. Find the bug, fix it, run the tests."
)
"""The task the demo's scripted agent works on."""

_OLD = "    # TODO: this only works for two values\n    return total(values) / 2\n"
_NEW = (
    "    if not values:\n"
    '        raise ValueError("average() of no values")\n'
    "    return total(values) / len(values)\n"
)


def _call(call_id: str, name: str, **args: Any) -> ToolCall:
    return ToolCall(call_id, name, args)


def _step(text: str, *calls: ToolCall) -> ScriptStep:
    stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
    blocks: list[Text | ToolCall] = [Text(text), *calls]
    response = ModelResponse(blocks, stop, Usage(1_200, 60 + 40 * len(calls)))
    return ScriptStep(
        response, first_chunk_delay=0.15, chunk_delay=0.012, text_chunk_chars=5
    )


def _survey(git: bool) -> list[ToolCall]:
    calls = [
        _call("t1_read_calc", "read", path="src/calc.py"),
        _call("t1_read_util", "read", path="src/util.py"),
        _call("t1_read_test", "read", path="tests/test_calc.py"),
        _call("t1_grep_todo", "grep", pattern="TODO", output_mode="content"),
    ]
    if git:
        calls.append(_call("t1_git_log", "bash", command="git log --oneline -3"))
    return calls


def _fix() -> list[ToolCall]:
    return [
        _call("t2_read_calc", "read", path="src/calc.py", force=True),
        _call(
            "t2_grep_tests",
            "grep",
            pattern="average",
            path="tests",
            output_mode="content",
        ),
        _call("t2_read_readme", "read", path="README.md"),
        _call(
            "t2_edit_calc", "edit", path="src/calc.py", old_string=_OLD, new_string=_NEW
        ),
        _call("t2_reread_calc", "read", path="src/calc.py", force=True),
    ]


def _check(python: str, git: bool) -> list[ToolCall]:
    calls = [
        _call(
            "t3_unittest", "bash", command=f"{python} -m unittest discover -s tests -q"
        )
    ]
    if git:
        calls.insert(0, _call("t3_git_diff", "bash", command="git diff --stat"))
    return calls


def _turns(python: str, git: bool) -> list[ScriptStep]:
    return [
        _step(
            "Let me survey the project. These reads and searches are independent,"
            " so they can all run at the same time.",
            *_survey(git),
        ),
        _step(
            "average() divides by a hard-coded 2. I'll re-read calc.py, fix it and read it"
            " back; the edit only has to wait for the read of its own file.",
            *_fix(),
        ),
        _step(
            "Now the diff and the tests. The test run may write files, so it runs alone.",
            *_check(python, git),
        ),
        _step(
            "Fixed: average() now divides by the number of values (and refuses an empty"
            " list) instead of a hard-coded 2. Both tests pass."
        ),
    ]


def demo_model(python: str, *, git: bool) -> ScriptedModel:
    """The scripted model of the demo (`python` runs the tests; `git` adds git calls)."""
    return ScriptedModel(_turns(python, git), name="scripted-demo")
