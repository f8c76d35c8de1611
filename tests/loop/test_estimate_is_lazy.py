"""The context estimate is made only when something reads it, and each block once.

A run with no known window, no context budget and no compaction reads no
figure, so it must estimate nothing: the estimator (regular expressions and
JSON) was a fifth of a 500-call turn's CPU when it ran on every appended
block. With a window, every block of the transcript is estimated exactly
once (a response's blocks are not estimated again when its count arrives),
and an agent's tool definitions once while its tool set stays the same.
Counted through the estimator's module functions, never timed. A figure read
late must equal one read at every step (`Conversation` keeps what the
provider's reports teach until it is read).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

import toolweave.loop._conversation as conversation_module
import toolweave.loop._tokens as tokens_module
from toolweave.loop import Agent, AgentConfig, BudgetDecision, BudgetTracker
from toolweave.loop._conversation import Conversation
from toolweave.loop._micro import MicroCompaction
from toolweave.messages import (
    Message,
    ModelResponse,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from toolweave.models import ScriptedModel
from toolweave.tools import tool

pytestmark = pytest.mark.anyio

PROMPT = "go, and say which calls ran (a prompt found nowhere else)"
KOREAN = "병렬 도구 실행은 안전하게 동시에 실행할 수 있는 호출만 겹쳐서 실행한다. "


@tool
def echo(x: int = 0) -> str:
    """Say which call this was."""
    return f"ok {x}"


@tool
def shout(word: str = "") -> str:
    """Say a word loudly."""
    return word.upper()


@dataclass
class Spy:
    """Every call of the estimator's functions, by function and argument."""

    texts: list[str] = field(default_factory=list)
    values: list[object] = field(default_factory=list)
    blocks: Counter[int] = field(default_factory=Counter)
    messages: int = 0

    @property
    def total(self) -> int:
        return len(self.texts) + len(self.values) + sum(self.blocks.values())

    def schemas(self) -> int:
        """How many tool schemas were estimated."""
        return sum(isinstance(v, dict) and "properties" in v for v in self.values)


@contextmanager
def spying(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spy]:
    spy = Spy()
    text, value = tokens_module.text_tokens, tokens_module.value_tokens
    block, message = tokens_module.block_tokens, tokens_module.message_tokens

    def counting_text(t: str) -> int:
        spy.texts.append(t)
        return text(t)

    def counting_value(v: object) -> int:
        spy.values.append(v)
        return value(v)

    def counting_block(b: object) -> int:
        spy.blocks[id(b)] += 1
        return block(b)

    def counting_message(m: Message) -> int:
        spy.messages += 1
        return message(m)

    with monkeypatch.context() as patch:
        patch.setattr(tokens_module, "text_tokens", counting_text)
        patch.setattr(tokens_module, "value_tokens", counting_value)
        patch.setattr(tokens_module, "block_tokens", counting_block)
        patch.setattr(tokens_module, "message_tokens", counting_message)
        patch.setattr(conversation_module, "message_tokens", counting_message)
        yield spy


def _script(calls: int, rounds: int, *, usage: bool) -> list[ModelResponse]:
    def counted(n: int, out: int) -> Usage:
        return Usage(n, out) if usage else Usage(0, 0)

    script = [
        ModelResponse(
            [
                Text("working"),
                *(ToolCall(f"c{r}-{i}", "echo", {"x": i}) for i in range(calls)),
            ],
            StopReason.TOOL_USE,
            counted(100 * (r + 1), 10),
        )
        for r in range(rounds)
    ]
    script.append(ModelResponse([Text("done")], StopReason.END_TURN, counted(50, 5)))
    return script


async def _run(agent: Agent) -> list[Message]:
    result = await agent.run(PROMPT)
    assert result.output == "done"
    return list(result.messages)


@pytest.mark.parametrize("usage", [True, False], ids=["provider-counts", "no-counts"])
@pytest.mark.parametrize(
    "config",
    [
        AgentConfig(),  # compaction and warning thresholds on, but no window
        AgentConfig(compaction_threshold=None, context_warning_threshold=None),
        AgentConfig(micro_compaction=MicroCompaction(after_turns=1)),  # nothing due
    ],
    ids=["defaults", "thresholds-off", "micro-on-nothing-due"],
)
async def test_a_run_with_no_window_estimates_nothing(
    monkeypatch: pytest.MonkeyPatch, usage: bool, config: AgentConfig
) -> None:
    agent = Agent(ScriptedModel(_script(5, 3, usage=usage)), [echo], config=config)
    try:
        with spying(monkeypatch) as spy:
            messages = await _run(agent)
    finally:
        await agent.aclose()
    assert sum(len(m.tool_results) for m in messages) == 15  # the run did run
    assert spy.total == 0, spy
    assert spy.messages == 0


def _top_blocks(messages: list[Message]) -> list[object]:
    return [b for m in messages if not isinstance(m.content, str) for b in m.content]


@pytest.mark.parametrize("usage", [True, False], ids=["provider-counts", "no-counts"])
async def test_with_a_window_each_block_is_estimated_once(
    monkeypatch: pytest.MonkeyPatch, usage: bool
) -> None:
    model = ScriptedModel(_script(5, 3, usage=usage), context_window=1_000_000)
    agent = Agent(model, [echo])
    try:
        with spying(monkeypatch) as spy:
            messages = await _run(agent)
    finally:
        await agent.aclose()
    *sent, answer = messages  # no request follows the answer: it is never read
    blocks = _top_blocks(sent)
    assert len(blocks) == 3 * (1 + 5) + 3 * 5  # the responses and their results
    # every block of every request estimated, none twice, nothing else
    assert spy.blocks == Counter({id(b): 1 for b in blocks})
    assert spy.texts.count(PROMPT) == 1
    assert spy.messages == len(sent)
    assert answer.text == "done"
    assert spy.schemas() == 1


async def test_tool_definitions_are_estimated_once_per_tool_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = ScriptedModel(
        [*_script(2, 1, usage=True)] * 3 + [ModelResponse([Text("done")])],
        context_window=1_000_000,
    )
    agent = Agent(model, [echo])
    try:
        with spying(monkeypatch) as spy:
            await _run(agent)
            await _run(agent)
            assert spy.schemas() == 1  # the same tools: the figure is kept
            agent.registry.register(shout)
            await _run(agent)
            assert spy.schemas() == 1 + 2  # a new set: both schemas estimated anew
            await _run(agent)
            assert spy.schemas() == 3
    finally:
        await agent.aclose()
    # the new set's figure is the one the requests were judged with
    assert [d.name for d in model.requests[-1].tools] == ["echo", "shout"]


async def test_tool_definitions_changed_in_place_are_estimated_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = ScriptedModel([*_script(1, 1, usage=True)] * 2, context_window=1_000_000)
    agent = Agent(model, [echo])
    try:
        with spying(monkeypatch) as spy:
            await _run(agent)
            echo.description = "Say which call this was, and nothing else."
            await _run(agent)
    finally:
        await agent.aclose()
        echo.description = "Say which call this was."
    assert spy.schemas() == 2
    assert spy.texts.count("Say which call this was, and nothing else.") == 1


# -- the same figure, read late or at every step --------------------------------------


def _drive(conversation: Conversation, read: Callable[[], None]) -> None:
    """A long session's changes; `read` after each."""
    result_text = KOREAN * 40
    conversation.overhead_tokens = 300
    steps: list[Callable[[], object]] = [
        lambda: conversation.append(Message("user", KOREAN * 5)),
        conversation.note_sent,
        # a first count: hidden framing, no rate
        lambda: conversation.note_response(first),
        lambda: conversation.append(first.to_message()),
        lambda: conversation.append(Message("user", (ToolResult("c1", result_text),))),
        conversation.note_sent,
        # the provider counts three times what was estimated for the result
        lambda: conversation.note_response(second),
        lambda: conversation.append(second.to_message()),
        lambda: conversation.append(Message("user", (ToolResult("c2", result_text),))),
        conversation.note_sent,
        # refused, said to be far bigger: the rate goes to its cap
        lambda: conversation.learn_refused(600_000),
        # a response with no count changes nothing
        lambda: conversation.note_response(ModelResponse([Text("x")], usage=Usage())),
        # a response not appended (a halted run): its blocks still count as counted
        lambda: conversation.note_response(third),
        lambda: conversation.append(Message("user", "halted")),
        # cleared results under the kept count
        lambda: conversation.replace(
            [
                *conversation.messages[:2],
                Message("user", "cleared"),
                second.to_message(),
            ],
            reason="micro_compaction",
            keep_report=True,
        ),
        lambda: conversation.append(Message("user", KOREAN * 30)),
        conversation.note_sent,
        lambda: conversation.learn_refused(60_000),
        lambda: conversation.replace(conversation.messages[-2:], reason="auto"),
        lambda: conversation.append(Message("user", KOREAN)),
    ]
    first = ModelResponse(
        [Text("reading"), ToolCall("c1", "read", {"path": "a.md"})],
        StopReason.TOOL_USE,
        Usage(900, 20),
    )
    estimated = tokens_module.text_tokens(result_text)
    second = ModelResponse(
        [Text("more"), ToolCall("c2", "read", {"path": "b.md"})],
        StopReason.TOOL_USE,
        Usage(920 + 3 * estimated, 20),
    )
    third = ModelResponse([Text("partial")], usage=Usage(920 + 5 * estimated, 30))
    for step in steps:
        step()
        read()


def test_a_figure_read_late_equals_one_read_at_every_step() -> None:
    eager, lazy = Conversation(), Conversation()
    seen: list[tuple[int, float]] = []
    _drive(eager, lambda: seen.append((eager.context_tokens(), eager.scale)))
    _drive(lazy, lambda: None)
    assert (lazy.context_tokens(), lazy.scale) == seen[-1]
    assert 1.0 < seen[6][1] < 4.0  # the second report taught a rate
    assert seen[9][1] < 4.0
    assert seen[10][1] == 4.0  # the refusal raised it to the cap
    assert len({tokens for tokens, _ in seen}) > 10  # the figure moved along


def test_a_figure_read_between_reports_equals_one_read_at_the_end() -> None:
    """Reading in the middle (the guard of one request) changes no later figure."""
    seen: list[tuple[int, float]] = []
    count = 0

    def now_and_then(conversation: Conversation) -> Callable[[], None]:
        def read() -> None:
            nonlocal count
            count += 1
            if count % 4 == 0:
                seen.append((conversation.context_tokens(), conversation.scale))

        return read

    eager, lazy = Conversation(), Conversation()
    _drive(eager, lambda: None)
    _drive(lazy, now_and_then(lazy))
    assert seen
    assert (lazy.context_tokens(), lazy.scale) == (eager.context_tokens(), eager.scale)


def test_appending_estimates_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with spying(monkeypatch) as spy:
        conversation = Conversation([Message("user", KOREAN)])
        conversation.append(Message("user", (ToolResult("c", KOREAN),)))
        conversation.note_sent()
        response = ModelResponse([Text("ok")], usage=Usage(10, 2))
        conversation.note_response(response)
        conversation.append(response.to_message())
        assert spy.total == 0
        conversation.context_tokens()
        assert spy.messages == 3
        assert sum(spy.blocks.values()) == 2  # the response counted once
        conversation.context_tokens()
        assert spy.messages == 3  # kept, not estimated again


def test_the_budget_reads_the_context_only_when_it_has_a_threshold() -> None:
    reads = 0

    def context() -> int:
        nonlocal reads
        reads += 1
        return 900

    free = BudgetTracker(started_at=0.0)
    verdict = free.check(now=0.0, total_tokens=0, cost=0.0, context_tokens=context)
    assert verdict.decision is BudgetDecision.CONTINUE
    assert reads == 0
    capped = BudgetTracker(started_at=0.0, compaction_tokens=800)
    verdict = capped.check(now=0.0, total_tokens=0, cost=0.0, context_tokens=context)
    assert verdict.decision is BudgetDecision.SHOULD_COMPACT
    assert reads == 1
    spent = BudgetTracker(started_at=0.0, compaction_tokens=800, max_total_tokens=10)
    verdict = spent.check(now=0.0, total_tokens=10, cost=0.0, context_tokens=context)
    assert verdict.decision is BudgetDecision.STOP
    assert reads == 1  # a run that must stop is not estimated first
    verdict = capped.check(now=0.0, total_tokens=0, cost=0.0, context_tokens=700)
    assert verdict.decision is BudgetDecision.CONTINUE


def test_a_rate_taught_before_a_replace_is_kept() -> None:
    """What a report taught about the old messages survives their replacement."""
    result_text = KOREAN * 40
    estimated = tokens_module.text_tokens(result_text)
    first = ModelResponse(
        [ToolCall("c1", "read", {"path": "a.md"})], StopReason.TOOL_USE, Usage(900, 20)
    )
    second = ModelResponse([Text("read")], usage=Usage(920 + 3 * estimated, 20))
    figures = []
    for read_each_step in (True, False):
        conversation = Conversation([Message("user", KOREAN)])
        steps: list[Callable[[], object]] = [
            conversation.note_sent,
            lambda c=conversation: c.note_response(first),
            lambda c=conversation: c.append(first.to_message()),
            lambda c=conversation: c.append(
                Message("user", (ToolResult("c1", result_text),))
            ),
            conversation.note_sent,
            lambda c=conversation: c.note_response(second),
            lambda c=conversation: c.append(second.to_message()),
            lambda c=conversation: c.replace(
                [Message("user", "a summary")], reason="auto"
            ),
            lambda c=conversation: c.append(Message("user", KOREAN * 10)),
        ]
        for step in steps:
            step()
            if read_each_step:
                conversation.context_tokens()
        figures.append((conversation.context_tokens(), conversation.scale))
    assert figures[0] == figures[1]
    assert 2.5 < figures[1][1] < 3.5  # the provider counted three times the estimate
