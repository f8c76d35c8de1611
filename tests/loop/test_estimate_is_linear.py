"""The context estimate costs O(what changed), never O(transcript) per message or call.

The guard judges every request and the budget every iteration; both read
`Conversation.context_tokens()`, which must not re-estimate the whole
transcript. A quadratic estimate would not show in a timed test on a loaded
machine before it is far too late (5,000 calls in one response), so these
count the estimator's invocations instead: every `text_tokens` call, through
a real `Agent` run with a known window (the guard active), for responses of
N and 4 N calls. Linear means the count per block stays the same.
"""

from __future__ import annotations

import pytest

import toolweave.loop._tokens as tokens_module
from toolweave.loop import Agent, AgentConfig
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.tools import tool

pytestmark = pytest.mark.anyio


@tool
def echo(x: int = 0) -> str:
    """Say which call this was."""
    return f"ok {x}"


def _script(calls: int, rounds: int) -> list[ModelResponse]:
    script = [
        ModelResponse(
            [
                Text("working"),
                *(ToolCall(f"c{r}-{i}", "echo", {"x": i}) for i in range(calls)),
            ],
            StopReason.TOOL_USE,
            Usage(100 * (r + 1), 10),
        )
        for r in range(rounds)
    ]
    script.append(ModelResponse([Text("done")], StopReason.END_TURN, Usage(50, 5)))
    return script


async def _estimates(
    monkeypatch: pytest.MonkeyPatch, calls: int, rounds: int, *, usage: bool = True
) -> int:
    """How many times the run estimated a piece of text."""
    count = 0
    real = tokens_module.text_tokens

    def counting(text: str) -> int:
        nonlocal count
        count += 1
        return real(text)

    monkeypatch.setattr(tokens_module, "text_tokens", counting)
    script = _script(calls, rounds)
    if not usage:
        script = [ModelResponse(r.content, r.stop_reason, Usage(0, 0)) for r in script]
    model = ScriptedModel(script, context_window=10_000_000)
    agent = Agent(model, [echo], config=AgentConfig(max_iterations=rounds + 2))
    try:
        result = await agent.run("go")
    finally:
        await agent.aclose()
    assert result.output == "done"
    assert sum(len(m.tool_results) for m in result.messages) == calls * rounds
    monkeypatch.setattr(tokens_module, "text_tokens", real)
    return count


@pytest.mark.parametrize("usage", [True, False], ids=["provider-counts", "no-counts"])
async def test_estimates_grow_linearly_with_the_calls_of_a_response(
    monkeypatch: pytest.MonkeyPatch, usage: bool
) -> None:
    small = await _estimates(monkeypatch, 50, 1, usage=usage)
    large = await _estimates(monkeypatch, 200, 1, usage=usage)
    # 4x the calls: about 4x the estimates (a quadratic estimate gives ~16x)
    assert large <= 4 * small + 50, (small, large)
    assert large >= 3 * small  # the counter does see the per-call estimates


@pytest.mark.parametrize("usage", [True, False], ids=["provider-counts", "no-counts"])
async def test_estimates_grow_linearly_with_the_rounds_of_a_run(
    monkeypatch: pytest.MonkeyPatch, usage: bool
) -> None:
    short = await _estimates(monkeypatch, 10, 3, usage=usage)
    long = await _estimates(monkeypatch, 10, 12, usage=usage)
    # 4x the rounds: about 4x the estimates (re-estimating the transcript per
    # request or iteration gives ~16x)
    assert long <= 4 * short + 50, (short, long)
    assert long >= 3 * short
