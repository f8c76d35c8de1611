"""Sub-agents: fan-out under the parent's caps, failures marked, siblings kept, costs folded in."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from loop_support import assert_provider_valid, call, config, say, scripted, use

from toolweave._exceptions import AuthenticationError
from toolweave.events import CompletionReason
from toolweave.loop import FAILURE_MARKER, Agent, subagent
from toolweave.messages import Usage
from toolweave.models import ModelRequest
from toolweave.scheduling import ConcurrencyConfig
from toolweave.tools import Access, Concurrency, Interrupt, tool

pytestmark = pytest.mark.anyio


def echo_child(n: int, *, name: str = "child") -> object:
    """A child model answering each prompt after one tool call."""

    def tool_turn(request: ModelRequest) -> object:
        return use(
            call(f"w-{request.messages[0].text}", "work", task=request.messages[0].text)
        )

    def answer(request: ModelRequest) -> object:
        return say(f"report on {request.messages[0].text}", usage=Usage(1_000_000, 0))

    steps: list[object] = []
    for _ in range(n):
        steps += [tool_turn, answer]
    return scripted(*steps, name=name)


async def test_children_fan_out_under_the_parent_cap() -> None:
    running = 0
    peak = 0
    release = anyio.Event()

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(),
        access_bound=Access(),  # touches nothing shared: children may overlap
    )
    async def work(task: str) -> str:
        """Child work that waits for the test."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return f"worked on {task}"

    researcher = subagent(
        "research",
        "Research a topic.",
        model=echo_child(3, name="gpt-4o"),  # type: ignore[arg-type]
        tools=[work],
    )
    parent = scripted(
        use(*[call(f"r{i}", "research", prompt=f"topic {i}") for i in range(3)]),
        say("all done"),
        name="claude-sonnet-4-5",
    )
    cap = ConcurrencyConfig(max_concurrency=2)
    agent = Agent(parent, [researcher], config=config(concurrency=cap))
    async with agent.open_run("go") as run:
        while running < 2:
            await anyio.lowlevel.checkpoint()
        await anyio.wait_all_tasks_blocked()
        assert running == 2  # the cap is reached by two children ...
        release.set()
        await run.wait()
    assert peak == 2  # ... and never exceeded
    result = run.result
    assert result is not None and result.completion_reason is CompletionReason.COMPLETED
    answers = [r.content for r in result.messages[2].tool_results]
    assert answers == ["report on topic 0", "report on topic 1", "report on topic 2"]
    assert result.model_usage["gpt-4o"].usage.input_tokens == 3_000_000 + 3 * 10
    assert result.cost == pytest.approx(
        3 * 2.5 + result.model_usage["claude-sonnet-4-5"].cost, rel=1e-3
    )
    assert len(researcher.results) == 3
    assert_provider_valid(result.messages)


async def test_failed_and_timed_out_children_are_marked_and_siblings_stay(
    anyio_backend: object,
) -> None:
    virtual = isinstance(anyio_backend, tuple)
    timeout = 60.0 if virtual else 0.05

    @tool(interrupt=Interrupt.CANCEL)
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "unreachable"

    ok = subagent("ok", "Works.", model=scripted(say("fine")))
    broken = subagent(
        "broken", "Fails.", model=scripted(AuthenticationError("revoked key"))
    )
    stuck = subagent(
        "stuck",
        "Hangs.",
        model=scripted(use(call("h", "hang"))),
        tools=[hang],
        timeout=timeout,
    )
    parent = scripted(
        use(
            call("a", "ok", prompt="x"),
            call("b", "broken", prompt="y"),
            call("c", "stuck", prompt="z"),
        ),
        say("two of three failed"),
    )
    start = anyio.current_time()
    result = await Agent(parent, [ok, broken, stuck]).run("go")
    assert result.completion_reason is CompletionReason.COMPLETED
    a, b, c = result.messages[2].tool_results
    assert (a.content, a.is_error) == ("fine", False)
    assert b.is_error and FAILURE_MARKER in b.text and "revoked key" in b.text
    assert c.is_error and FAILURE_MARKER in c.text and "timed out" in c.text
    if virtual:
        assert anyio.current_time() - start == pytest.approx(timeout)
    assert_provider_valid(result.messages)


async def test_subagent_rejects_a_bad_timeout() -> None:
    with pytest.raises(ValueError, match="timeout"):
        subagent("x", "y", model=scripted(), timeout=0)
