"""ScheduledToolset against the bare toolset: the same scenario both ways, the same outcome.

Each case runs a real PydanticAI agent driven by `FunctionModel` twice: with the
tools' `FunctionToolset` as is, and wrapped in `ScheduledToolset` (every tool
declared read-only, so scheduling is not what differs). It compares every
message of the run (timestamps dropped), the output and any exception.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from framework_probe import FRAGILE_DECLARATION
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    ToolFailed,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturn,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.output import ToolOutput
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.toolsets import FunctionToolset

from toolweave.integrations import READ_ONLY
from toolweave.integrations.pydantic_ai import ScheduledToolset


@dataclass
class Deps:
    user: str


class Point(BaseModel):
    x: int
    y: int


class Boom(Exception):
    """A tool's own exception."""


def _toolset(
    raises: Callable[[str], Exception] = lambda text: Boom(f"boom {text}"),
) -> FunctionToolset[Deps]:
    """A fresh toolset; its `boom` raises `raises(text)`."""
    toolset: FunctionToolset[Deps] = FunctionToolset(max_retries=2)

    @toolset.tool_plain
    def echo(text: str) -> str:
        """Echo."""
        return f"echo {text}"

    @toolset.tool_plain
    def big(text: str) -> str:
        """A large result (toolweave's result budgets must not touch it)."""
        return text * 300_000

    @toolset.tool_plain
    def nothing(text: str) -> None:
        """No result."""

    @toolset.tool_plain
    def empty(text: str) -> str:
        """An empty result."""
        return ""

    @toolset.tool_plain
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @toolset.tool_plain
    def as_dict(text: str) -> dict[str, Any]:
        """A dict."""
        return {"text": text, "n": [1, 2]}

    @toolset.tool
    def whoami(ctx: RunContext[Deps], text: str) -> str:
        """Uses deps and the retry counter."""
        return f"{ctx.deps.user} {text} retry={ctx.retry} id={ctx.tool_call_id}"

    @toolset.tool
    def flaky(ctx: RunContext[Deps], text: str) -> str:
        """ModelRetry until the tool has been retried once.

        By the tool's retry count, not by which call runs first: the order calls
        of one response run in is what scheduling may change.
        """
        if ctx.retry == 0:
            raise ModelRetry(f"try again {text}")
        return f"flaky ok retry={ctx.retry}"

    @toolset.tool_plain
    def hopeless(text: str) -> str:
        """Always ModelRetry."""
        raise ModelRetry("never")

    @toolset.tool_plain
    def failed(text: str) -> str:
        """ToolFailed."""
        raise ToolFailed(f"failed {text}")

    @toolset.tool_plain
    def boom(text: str) -> str:
        """Raises."""
        raise raises(text)

    @toolset.tool_plain(sequential=True)
    def barrier(text: str) -> str:
        """sequential=True."""
        return f"barrier {text}"

    @toolset.tool_plain(requires_approval=True)
    def delete(text: str) -> str:
        """Needs approval."""
        return f"deleted {text}"

    @toolset.tool
    def maybe(ctx: RunContext[Deps], text: str) -> str:
        """Asks for approval unless approved."""
        if not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"why": text})
        return f"approved {text}"

    @toolset.tool_plain
    def external(text: str) -> str:
        """Deferred to the caller."""
        raise CallDeferred(metadata={"text": text})

    @toolset.tool_plain
    def when(day: dt.date, point: Point) -> str:
        """Non-JSON argument types."""
        return f"{day.isoformat()} {point.x},{point.y}"

    @toolset.tool_plain
    def rich(text: str) -> ToolReturn:
        """A ToolReturn with metadata."""
        return ToolReturn(return_value=f"rich {text}", metadata={"m": 1})

    @toolset.tool_plain(timeout=0.01)
    async def stuck(text: str) -> str:
        """Never finishes: PydanticAI's own tool timeout answers it (a retry)."""
        await anyio.sleep_forever()
        raise AssertionError("not reached")

    async def only_for_ann(
        ctx: RunContext[Deps], tool_def: ToolDefinition
    ) -> ToolDefinition | None:
        return tool_def if ctx.deps.user == "ann" else None

    @toolset.tool_plain(prepare=only_for_ann)
    def secret(text: str) -> str:
        """Hidden unless the user is ann."""
        return f"secret {text}"

    return toolset


def _calls(*calls: tuple[str, Any]) -> ModelResponse:
    return ModelResponse(
        parts=[
            ToolCallPart(name, args, tool_call_id=f"c{i}")
            for i, (name, args) in enumerate(calls)
        ]
    )


X = {"text": "x"}


@dataclass(frozen=True)
class Case:
    id: str
    turns: list[list[tuple[str, Any]]]
    """Tool calls the model makes, one response per item, then it answers "done"."""
    agent: dict[str, Any] = field(default_factory=dict)
    deps: Deps = field(default_factory=lambda: Deps("ann"))


CASES = [
    Case("plain", [[("echo", X), ("add", {"a": 1, "b": 2}), ("as_dict", X)]]),
    Case("deps-and-context", [[("whoami", X), ("whoami", {"text": "y"})]]),
    Case("model-retry-then-ok", [[("flaky", X), ("echo", X)], [("flaky", X)]]),
    Case(
        "model-retry-exhausted",
        [[("hopeless", X)], [("hopeless", X)], [("hopeless", X)]],
    ),
    Case("tool-failed", [[("failed", X), ("echo", X)]]),
    Case("tool-raises", [[("echo", X), ("boom", X)]]),
    Case("sequential-tool", [[("echo", X), ("barrier", X), ("add", {"a": 1, "b": 2})]]),
    Case("unknown-tool", [[("nope", X), ("echo", X)]]),
    Case("invalid-args", [[("add", {"a": "one"}), ("echo", X)]]),
    Case("invalid-json-args", [[("add", "{not json"), ("echo", X)]]),
    Case(
        "non-json-arg-types",
        [[("when", {"day": "2024-01-02", "point": {"x": 1, "y": 2}})]],
    ),
    Case("tool-return", [[("rich", X)]]),
    Case("big-empty-none-results", [[("big", X), ("empty", X), ("nothing", X)]]),
    Case("tool-timeout", [[("stuck", X), ("echo", X)]]),
    Case("prepare-shows", [[("secret", X)]]),
    Case("prepare-hides", [[("secret", X)]], deps=Deps("bob")),
    Case(
        "approval-required",
        [[("delete", X), ("echo", X), ("maybe", X)]],
        {"output_type": [str, DeferredToolRequests]},
    ),
    Case(
        "call-deferred",
        [[("external", X), ("echo", X)]],
        {"output_type": [str, DeferredToolRequests]},
    ),
    Case(
        "output-tool-early",
        [[("echo", X), ("final_result", {"x": 1, "y": 2}), ("add", {"a": 1, "b": 2})]],
        {"output_type": ToolOutput(Point), "end_strategy": "early"},
    ),
    Case(
        "output-tool-graceful",
        [[("echo", X), ("final_result", {"x": 1, "y": 2}), ("add", {"a": 1, "b": 2})]],
        {"output_type": ToolOutput(Point), "end_strategy": "graceful"},
    ),
    Case(
        "output-tool-exhaustive",
        [[("echo", X), ("final_result", {"x": 1, "y": 2}), ("barrier", X)]],
        {"output_type": ToolOutput(Point), "end_strategy": "exhaustive"},
    ),
    Case("duplicate-ids", [[("echo", X), ("add", {"a": 1, "b": 2})]]),
]


def _script(case: Case) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < len(case.turns):
            response = _calls(*case.turns[step])
            if case.id == "duplicate-ids":
                for part in response.parts:
                    assert isinstance(part, ToolCallPart)
                    part.tool_call_id = "same"
            return response
        if case.agent.get("output_type") is not None and not isinstance(
            case.agent["output_type"], list
        ):
            return _calls(("final_result", {"x": 0, "y": 0}))
        return ModelResponse(parts=[TextPart("done")])

    return respond


_VOLATILE = {"timestamp", "run_id", "conversation_id", "provider_response_id"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _dump(messages: list[ModelMessage]) -> Any:
    return _stable(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


def _agent(kind: str, case: Case, toolset: Any = None) -> Agent[Deps, Any]:
    toolset = _toolset() if toolset is None else toolset
    if kind == "read-only":
        declared = dict.fromkeys(toolset.tools, READ_ONLY)
        toolset = ScheduledToolset(toolset, declarations=declared)
    elif kind == "undeclared":  # every tool a barrier
        toolset = ScheduledToolset(toolset)
    elif kind == "fragile":  # input-dependent declarations that may raise
        declared = dict.fromkeys(toolset.tools, FRAGILE_DECLARATION)
        toolset = ScheduledToolset(toolset, declarations=declared)
    return Agent(
        FunctionModel(_script(case)), deps_type=Deps, toolsets=[toolset], **case.agent
    )


def _observed(result: Any) -> Any:
    output = result.output
    if isinstance(output, DeferredToolRequests):
        output = (
            [c.tool_call_id for c in output.calls],
            [c.tool_call_id for c in output.approvals],
            output.metadata,
        )
    elif isinstance(output, BaseModel):
        output = output.model_dump()
    return output, _dump(result.all_messages())


async def _outcome(kind: str, case: Case, **run: Any) -> Any:
    agent = _agent(kind, case)
    try:
        result = await agent.run("go", deps=case.deps, **run)
    except Exception as exc:  # the outcome compared
        return type(exc), str(exc)
    return _observed(result)


def _outcome_sync(kind: str, case: Case) -> Any:
    agent = _agent(kind, case)
    try:
        result = agent.run_sync("go", deps=case.deps)
    except Exception as exc:  # the outcome compared
        return type(exc), str(exc)
    return _observed(result)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["read-only", "undeclared", "fragile"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_same_outcome_as_the_bare_toolset(case: Case, kind: str) -> None:
    expected = await _outcome("plain", case)
    assert await _outcome(kind, case) == expected


@pytest.fixture
def run_sync_loop() -> Iterator[None]:
    """Close the event loop `run_sync` leaves on this thread (else a later test sees it GC'd)."""
    yield
    policy = asyncio.get_event_loop_policy()
    policy.get_event_loop().close()
    policy.set_event_loop(None)


@pytest.mark.usefixtures("run_sync_loop")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_same_outcome_as_the_bare_toolset_run_sync(case: Case) -> None:
    expected = _outcome_sync("plain", case)
    assert _outcome_sync("read-only", case) == expected


async def _approve_and_resume(kind: str) -> Any:
    case = CASES[[c.id for c in CASES].index("approval-required")]
    agent = _agent(kind, case)
    first = await agent.run("go", deps=case.deps)
    assert isinstance(first.output, DeferredToolRequests)
    results = DeferredToolResults(
        approvals={"c0": ToolApproved(), "c2": ToolDenied("no")}
    )
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=results,
        deps=case.deps,
    )
    return _observed(second)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["read-only", "undeclared"])
async def test_approved_and_denied_calls_resume_as_with_the_bare_toolset(
    kind: str,
) -> None:
    expected = await _approve_and_resume("plain")
    contents = [
        p.get("content")
        for m in expected[1]
        for p in m["parts"]
        if p.get("part_kind") == "tool-return"
    ]
    assert "deleted x" in contents and "no" in contents
    assert await _approve_and_resume(kind) == expected


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("on_error", "signal"), [("fail", ToolFailed), ("retry", ModelRetry)]
)
async def test_on_error_answers_as_the_framework_signal_would(
    on_error: str, signal: Callable[[str], Exception]
) -> None:
    """on_error="fail"/"retry": as if the tool raised ToolFailed/ModelRetry itself."""
    case = CASES[[c.id for c in CASES].index("tool-raises")]
    expected = _observed(
        await _agent("plain", case, _toolset(lambda t: signal(f"Boom: boom {t}"))).run(
            "go", deps=case.deps
        )
    )
    scheduled = ScheduledToolset(_toolset(), on_error=on_error)  # type: ignore[arg-type]
    got = _observed(await _agent("plain", case, scheduled).run("go", deps=case.deps))
    assert got == expected


TEST_MODEL_TOOLS = ["echo", "add", "as_dict", "whoami", "when", "rich", "barrier"]


async def _with_test_model(kind: str, stream: bool) -> Any:
    agent = _agent(kind, CASES[0])
    model = TestModel(call_tools=TEST_MODEL_TOOLS)
    if stream:
        async with agent.run_stream("go", deps=Deps("ann"), model=model) as run:
            output = await run.get_output()
            return output, _dump(run.all_messages())
    return _observed(await agent.run("go", deps=Deps("ann"), model=model))


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("kind", ["read-only", "undeclared"])
async def test_test_model_run_and_stream_as_with_the_bare_toolset(
    kind: str, stream: bool
) -> None:
    expected = await _with_test_model("plain", stream)
    returns = [
        p
        for m in expected[1]
        for p in m["parts"]
        if p.get("part_kind") == "tool-return"
    ]
    assert len(returns) == len(TEST_MODEL_TOOLS)
    assert await _with_test_model(kind, stream) == expected


SIGNALS: dict[str, Callable[[str], Exception]] = {
    "model-retry": lambda t: ModelRetry(f"again {t}"),
    "tool-failed": lambda t: ToolFailed(f"failed {t}"),
    "call-deferred": lambda t: CallDeferred(metadata={"t": t}),
    "approval-required": lambda t: ApprovalRequired(metadata={"t": t}),
    "usage-limit": lambda t: UsageLimitExceeded(f"limit {t}"),
    "user-error": lambda t: UserError(f"misconfigured {t}"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("on_error", ["raise", "fail", "retry"])
@pytest.mark.parametrize("signal", list(SIGNALS))
async def test_framework_signals_pass_through_every_on_error_mode(
    signal: str, on_error: str
) -> None:
    case = Case(
        "signal",
        [[("echo", X), ("boom", X)]],
        {"output_type": [str, DeferredToolRequests]},
    )

    async def outcome(toolset: Any) -> Any:
        try:
            return _observed(
                await _agent("plain", case, toolset).run("go", deps=case.deps)
            )
        except Exception as exc:  # the outcome compared
            return type(exc), str(exc)

    expected = await outcome(_toolset(SIGNALS[signal]))
    scheduled = ScheduledToolset(_toolset(SIGNALS[signal]), on_error=on_error)  # type: ignore[arg-type]
    assert await outcome(scheduled) == expected


async def _events(kind: str, case: Case) -> list[Any]:
    from pydantic_ai.messages import FunctionToolCallEvent, FunctionToolResultEvent

    seen: list[Any] = []

    async def handler(ctx: Any, stream: Any) -> None:
        async for event in stream:
            if isinstance(event, FunctionToolCallEvent):
                seen.append(("call", event.part.tool_call_id, event.part.tool_name))
            elif isinstance(event, FunctionToolResultEvent):
                seen.append(("result", event.tool_call_id, str(event.result.content)))

    agent = _agent(kind, case)
    try:
        await agent.run("go", deps=case.deps, event_stream_handler=handler)
    except Exception as exc:  # the outcome compared
        seen.append(("raised", type(exc).__name__))
    return sorted(seen)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["read-only", "undeclared"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_the_same_tool_events_stream_order_aside(case: Case, kind: str) -> None:
    """Every call and result event is emitted as without the wrapper (barriers may reorder them)."""
    expected = await _events("plain", case)
    assert await _events(kind, case) == expected


async def _with_external_toolset(kind: str) -> Any:
    from pydantic_ai.toolsets import CombinedToolset, ExternalToolset

    external = ExternalToolset(
        [
            ToolDefinition(
                name="browser_click",
                parameters_json_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                },
            )
        ]
    )
    combined: Any = CombinedToolset([_toolset(), external])
    if kind != "plain":
        combined = ScheduledToolset(combined)
    case = Case(
        "external",
        [[("echo", X), ("browser_click", X), ("add", {"a": 1, "b": 2})]],
        {"output_type": [str, DeferredToolRequests]},
    )
    return _observed(await _agent("plain", case, combined).run("go", deps=case.deps))


@pytest.mark.anyio
async def test_external_tools_in_a_wrapped_toolset_are_deferred_as_without_it() -> None:
    expected = await _with_external_toolset("plain")
    assert expected[0][0] == ["c1"]  # browser_click is handed back to the caller
    assert await _with_external_toolset("scheduled") == expected


_MIXABLE: list[tuple[str, Any]] = [
    ("echo", X),
    ("add", {"a": 1, "b": 2}),
    ("add", {"a": "one"}),
    ("whoami", X),
    ("failed", X),
    ("flaky", X),
    ("barrier", X),
    ("nope", X),
    ("rich", X),
    ("empty", X),
    ("delete", X),
    ("external", X),
]
"""Calls that never fail a run (with DeferredToolRequests as an output type)."""


def _mixes(seed: int, count: int) -> list[Case]:
    import random

    rng = random.Random(seed)
    return [
        Case(
            f"mix{i}",
            [rng.choices(_MIXABLE, k=rng.randint(1, 6))],
            {"output_type": [str, DeferredToolRequests]},
        )
        for i in range(count)
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("case", _mixes(seed=15, count=20), ids=lambda c: c.id)
async def test_random_mixes_as_with_the_bare_toolset(case: Case) -> None:
    """Seeded random responses mixing results, retries, failures and deferrals."""
    expected = await _outcome("plain", case)
    for kind in ("read-only", "undeclared", "fragile"):
        assert await _outcome(kind, case) == expected, kind
