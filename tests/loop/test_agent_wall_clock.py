"""The wall-clock budget is a bound, not an interrupt (issue 24, item 9).

`max_wall_clock=1` with a tool that runs 6 s used to last 6 s: the budget
was applied like a user interrupt, so a BLOCK tool (the default) ran on, and
so did a sync tool on its worker thread. Now, at the deadline, running calls
are cut as at their timeout (CANCEL and BLOCK alike; a worker thread is
abandoned as a timeout abandons it), calls not started are answered "not
run", a model call in flight is abandoned, and the run ends BUDGET_EXCEEDED.

Under trio's MockClock every duration is exact; under asyncio only outcomes
are asserted, and promptness is shown by rendezvous: the tools are held by
events nobody sets until the run has returned.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import pytest
from loop_support import assert_provider_valid, call, config, run_collect, say, use

import toolweave as tw
from toolweave.events import CompletionReason, ToolResultReady
from toolweave.execution import PermissionRules
from toolweave.messages import ToolCall
from toolweave.models import ModelRequest, ScriptedModel, ScriptStep
from toolweave.scheduling import ConcurrencyConfig
from toolweave.tools import Concurrency, Interrupt, Tool

pytestmark = pytest.mark.anyio

INTERRUPTS = [Interrupt.CANCEL, Interrupt.BLOCK]


def _budget(anyio_backend: object) -> float:
    """1 s of virtual time on trio; a short real wait on asyncio."""
    return 1.0 if isinstance(anyio_backend, tuple) else 0.2


def _virtual(anyio_backend: object) -> bool:
    return isinstance(anyio_backend, tuple)


@pytest.fixture
def held() -> Iterator[threading.Event]:
    """Holds sync tools on their worker thread; set at the end, so no thread is left."""
    event = threading.Event()
    yield event
    event.set()


def async_sleeper(name: str, interrupt: Interrupt, ran: list[str]) -> Tool:
    @tw.tool(name=name, interrupt=interrupt, concurrency=Concurrency.SAFE)
    async def sleeper(tag: str) -> str:
        """Sleep six seconds (virtual time on trio)."""
        ran.append(tag)
        await anyio.sleep(6)
        ran.append(f"{tag} finished")
        return f"{tag} done"

    return sleeper


def sync_sleeper(name: str, interrupt: Interrupt, held: threading.Event) -> Tool:
    @tw.tool(name=name, interrupt=interrupt, concurrency=Concurrency.SAFE)
    def sleeper(tag: str) -> str:
        """Block its worker thread until the test lets it go (it cannot be stopped)."""
        held.wait(60)
        return f"{tag} done"

    return sleeper


@pytest.mark.parametrize("interrupt", INTERRUPTS, ids=lambda i: i.name)
async def test_an_async_tool_is_cut_at_the_deadline(
    anyio_backend: object, interrupt: Interrupt
) -> None:
    ran: list[str] = []
    tool = async_sleeper("nap", interrupt, ran)
    budget = _budget(anyio_backend)
    agent = tw.Agent(
        tw.models.ScriptedModel([use(call("n", "nap", tag="n"))]),
        [tool],
        config=config(max_wall_clock=budget),
    )
    start = anyio.current_time()
    with anyio.fail_after(5):
        result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    if _virtual(anyio_backend):
        assert anyio.current_time() - start == pytest.approx(budget)
    [answer] = result.messages[2].tool_results
    assert answer.is_error and answer.text.startswith("Timed out: the run's wall-clock")
    assert "effects it had are unknown" in answer.text
    assert ran == ["n"]  # it started, and never finished
    assert [e.result for e in events if isinstance(e, ToolResultReady)] == [answer]
    assert_provider_valid(result.messages)


@pytest.mark.parametrize("interrupt", INTERRUPTS, ids=lambda i: i.name)
async def test_a_sync_tool_is_cut_and_its_thread_abandoned(
    anyio_backend: object, interrupt: Interrupt, held: threading.Event
) -> None:
    """The issue's case: a plain sync `@tw.tool` (BLOCK by default) on a thread."""
    tool = sync_sleeper("block", interrupt, held)
    agent = tw.Agent(
        tw.models.ScriptedModel([use(call("b", "block", tag="b"))]),
        [tool],
        config=config(max_wall_clock=_budget(anyio_backend)),
    )
    with anyio.fail_after(10):
        result, _ = await run_collect(agent)
    assert not held.is_set()  # returned while the thread still blocks
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    [answer] = result.messages[2].tool_results
    assert answer.text.startswith("Timed out: the run's wall-clock")
    assert "worker thread" in answer.text and "abandoned" in answer.text


async def test_calls_not_started_are_answered_not_run(anyio_backend: object) -> None:
    """A barrier behind a running call: it never starts, and says so."""
    ran: list[str] = []
    first = async_sleeper("nap", Interrupt.BLOCK, ran)

    @tw.tool(name="after", concurrency=Concurrency.SEQUENTIAL)
    async def after(tag: str) -> str:
        """Runs only after every earlier call."""
        ran.append(tag)
        return "after done"

    agent = tw.Agent(
        tw.models.ScriptedModel(
            [use(call("n", "nap", tag="n"), call("a", "after", tag="a"))]
        ),
        [first, after],
        config=config(max_wall_clock=_budget(anyio_backend)),
    )
    with anyio.fail_after(5):
        result, _ = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    nap, late = result.messages[2].tool_results
    assert nap.text.startswith("Timed out")
    assert late.synthetic and late.text.startswith("Not run: the run's wall-clock")
    assert "never started" in late.text
    assert ran == ["n"]


async def test_the_sequential_path_is_bounded_too(anyio_backend: object) -> None:
    ran: list[str] = []
    tools = [async_sleeper("nap", Interrupt.BLOCK, ran)]
    agent = tw.Agent(
        tw.models.ScriptedModel(
            [use(call("1", "nap", tag="1"), call("2", "nap", tag="2"))]
        ),
        tools,
        config=config(
            max_wall_clock=_budget(anyio_backend),
            concurrency=ConcurrencyConfig(enabled=False),
        ),
    )
    with anyio.fail_after(5):
        result, _ = await run_collect(agent)
    one, two = result.messages[2].tool_results
    assert one.text.startswith("Timed out") and two.text.startswith("Not run")
    assert ran == ["1"]


async def test_a_model_call_in_flight_is_abandoned(anyio_backend: object) -> None:
    budget = _budget(anyio_backend)
    model = ScriptedModel([ScriptStep(say("too late"), first_chunk_delay=60.0)])
    agent = tw.Agent(model, [], config=config(max_wall_clock=budget))
    start = anyio.current_time()
    with anyio.fail_after(5):
        result, _ = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    assert "wall-clock" in result.detail
    if _virtual(anyio_backend):
        assert anyio.current_time() - start == pytest.approx(budget)
    assert [m.role for m in result.messages] == ["user"]


async def test_a_deadline_during_a_permission_ask_answers_not_run(
    anyio_backend: object,
) -> None:
    """The call waited for an answer and never started: "not run", not "unknown"."""
    ran: list[str] = []
    asked: list[str] = []
    never = anyio.Event()

    async def ask(call: ToolCall, reason: str) -> tw.execution.AskAnswer:
        asked.append(call.id)
        await never.wait()
        return "allow"

    @tw.tool(name="guarded")
    async def guarded() -> str:
        """Needs the user's permission."""
        ran.append("guarded")
        return "ran"

    agent = tw.Agent(
        tw.models.ScriptedModel([use(call("g", "guarded"))]),
        [guarded],
        config=config(
            max_wall_clock=_budget(anyio_backend),
            permissions=PermissionRules(ask=["guarded"]),
            ask=ask,
        ),
    )
    with anyio.fail_after(5):
        result, _ = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    [answer] = result.messages[2].tool_results
    assert asked == ["g"] and ran == []
    assert answer.synthetic and answer.text.startswith("Not run: the run's wall-clock")
    assert "never started" in answer.text


async def test_a_call_arriving_after_the_deadline_is_not_run(
    anyio_backend: object,
) -> None:
    """A response that comes in exactly at the deadline: its calls never start."""
    budget = _budget(anyio_backend)
    ran: list[str] = []
    tool = async_sleeper("nap", Interrupt.CANCEL, ran)

    def late(request: ModelRequest) -> tw.ModelResponse:
        return use(call("n", "nap", tag="n"))

    model = ScriptedModel([ScriptStep(late, first_chunk_delay=budget * 0.99)])
    agent = tw.Agent(model, [tool], config=config(max_wall_clock=budget))
    with anyio.fail_after(5):
        result, _ = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    for message in result.messages[2:]:
        for answer in message.tool_results:
            assert answer.is_error  # cut or not run: never a result it did not earn
    assert "n finished" not in ran


async def test_a_tool_timeout_nearer_than_the_deadline_is_the_tools_own(
    anyio_backend: object,
) -> None:
    """The bound only shortens a timeout: a nearer one reads as the tool's own."""

    @tw.tool(name="quick", timeout=0.1)
    async def quick() -> str:
        """Has a short timeout of its own."""
        await anyio.sleep(6)
        return "never"

    agent = tw.Agent(
        tw.models.ScriptedModel([use(call("q", "quick")), say("ok")]),
        [quick],
        config=config(max_wall_clock=600.0 if _virtual(anyio_backend) else 30.0),
    )
    with anyio.fail_after(10):
        result, _ = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    [answer] = result.messages[2].tool_results
    assert "timed out after 0.1 s" in answer.text
    assert "wall-clock" not in answer.text
