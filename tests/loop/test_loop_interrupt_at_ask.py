"""An interrupt while a call waits for permission ends the wait: the call is "not run".

The run's halt reaches the permission stage (`ToolRunner(interrupt=...)`): the
ask handler is cancelled, calls waiting for their turn to ask are answered
too, and no question is asked after the halt. Whatever the tool's Interrupt
behaviour (a BLOCK tool used to keep the run waiting on the user), the tool
never started, so its result says "not run", never "effects unknown".
Rendezvous on the ask handler; both backends.
"""

from __future__ import annotations

import anyio
import pytest
from loop_support import call, say, use

from toolweave.events import ToolRunning
from toolweave.execution import PermissionRules
from toolweave.loop import Agent, AgentConfig
from toolweave.messages import ToolCall
from toolweave.models import ScriptedModel
from toolweave.tools import Access, Concurrency, Interrupt, tool

pytestmark = pytest.mark.anyio


class Asker:
    """An ask handler that never answers; it says when it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.asking = anyio.Event()
        self.cancelled = 0

    async def __call__(self, call: ToolCall, reason: str) -> str:
        self.asked.append(call.id)
        self.asking.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


@pytest.mark.parametrize("behaviour", [Interrupt.BLOCK, Interrupt.CANCEL])
async def test_an_interrupt_at_the_prompt_answers_every_waiting_call_not_run(
    behaviour: Interrupt,
) -> None:
    ran: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access(), interrupt=behaviour)
    async def guarded(n: int) -> str:
        """Needs approval."""
        ran.append(str(n))
        return "ran"

    asker = Asker()
    model = ScriptedModel(
        [use(call("a", "guarded", n=1), call("b", "guarded", n=2)), say("never")]
    )
    config = AgentConfig(permissions=PermissionRules(ask=["guarded"]), ask=asker)
    agent = Agent(model, [guarded], config=config)
    events = []
    with anyio.fail_after(30):
        async with agent.open_run("go") as run:

            async def interrupt_when_asked() -> None:
                await asker.asking.wait()
                run.interrupt()

            async with anyio.create_task_group() as tg:
                tg.start_soon(interrupt_when_asked)
                events = [event async for event in run.events()]
    result = run.result
    assert result is not None
    assert result.completion_reason.value == "interrupted"
    assert ran == []
    assert len(asker.asked) == 1 and asker.cancelled == 1  # the other was never asked
    answers = result.messages[2].tool_results
    assert [r.call_id for r in answers] == ["a", "b"]
    for answer in answers:
        assert answer.is_error and answer.synthetic
        assert answer.text.startswith("Not run:"), answer.text
        assert "never started" in answer.text and "unknown" not in answer.text
    assert not [e for e in events if isinstance(e, ToolRunning)]


async def test_a_halt_before_the_ask_asks_nothing() -> None:
    """A call reaching the permission stage after the halt is not asked at all."""

    @tool(concurrency=Concurrency.SEQUENTIAL, interrupt=Interrupt.BLOCK)
    async def first() -> str:
        """Runs first; the interrupt comes while it runs."""
        halted.set()
        await proceed.wait()
        return "first done"

    @tool(interrupt=Interrupt.BLOCK)
    async def second() -> str:
        """Needs approval; reached after the halt."""
        raise AssertionError("must not run")

    halted, proceed = anyio.Event(), anyio.Event()
    asker = Asker()
    model = ScriptedModel([use(call("1", "first"), call("2", "second")), say("never")])
    config = AgentConfig(permissions=PermissionRules(ask=["second"]), ask=asker)
    agent = Agent(model, [first, second], config=config)
    with anyio.fail_after(30):
        async with agent.open_run("go") as run:
            await halted.wait()
            run.interrupt()
            proceed.set()
            result = await run.wait()
            async for _ in run.events():
                pass
    first_result, second_result = result.messages[2].tool_results
    assert first_result.text == "first done"  # BLOCK: it ran to its end
    assert asker.asked == []
    assert second_result.synthetic and second_result.text.startswith("Not run:")
