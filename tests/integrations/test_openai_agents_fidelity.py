"""scheduled_tools against the bare tools: the same scenario both ways, the same outcome.

Each case runs a real Agents SDK run driven by the SDK's `ScriptedModel` twice:
with the agent's tools as they are, and through `scheduled_tools` (every function
tool declared read-only, so scheduling is not what differs). It compares what
every model call was shown, the final output, pending approvals and any
exception the run raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from agents import (
    Agent,
    CustomTool,
    FunctionTool,
    RunContextWrapper,
    Runner,
    ShellTool,
    StopAtTools,
    ToolGuardrailFunctionOutput,
    WebSearchTool,
    function_tool,
    set_tracing_disabled,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.agent import ToolsToFinalOutputResult
from agents.testing.model import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from framework_probe import FRAGILE_DECLARATION
from pydantic import BaseModel

from toolweave.integrations import READ_ONLY
from toolweave.integrations.openai_agents import UnscheduledToolWarning, scheduled_tools

set_tracing_disabled(True)  # no exporter: the tests never leave the machine


class Point(BaseModel):
    x: int
    y: int


@tool_input_guardrail
def no_secrets(data: Any) -> ToolGuardrailFunctionOutput:
    if "secret" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("no secrets here")
    return ToolGuardrailFunctionOutput.allow()


@tool_output_guardrail
def no_leaks(data: Any) -> ToolGuardrailFunctionOutput:
    if "leak" in str(data.output):
        return ToolGuardrailFunctionOutput.reject_content("output withheld")
    return ToolGuardrailFunctionOutput.allow()


@tool_input_guardrail
def trip_on_stop(data: Any) -> ToolGuardrailFunctionOutput:
    if "stop" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.raise_exception(output_info="stopped")
    return ToolGuardrailFunctionOutput.allow()


@tool_output_guardrail
def trip_on_alarm(data: Any) -> ToolGuardrailFunctionOutput:
    if "alarm" in str(data.output):
        return ToolGuardrailFunctionOutput.raise_exception(output_info="alarmed")
    return ToolGuardrailFunctionOutput.allow()


async def _ask_when_big(
    ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
) -> bool:
    return int(params.get("a", 0)) > 10


def _tools() -> list[Any]:
    """Fresh tools for one run."""

    @function_tool
    def echo(text: str) -> str:
        """Echo."""
        return f"echo {text}"

    @function_tool
    def big(text: str) -> str:
        """A large result (toolweave's result budgets must not touch it)."""
        return text * 300_000

    @function_tool
    def nothing(text: str) -> None:
        """No result."""

    @function_tool
    def empty(text: str) -> str:
        """An empty result."""
        return ""

    @function_tool
    async def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    @function_tool
    def point(x: int, y: int) -> Point:
        """A model result."""
        return Point(x=x, y=y)

    @function_tool
    def whoami(ctx: ToolContext[Any], text: str) -> str:
        """Uses the context."""
        return f"{ctx.context['user']} {text} {ctx.tool_name} {ctx.tool_call_id}"

    @function_tool
    def boom(text: str) -> str:
        """Raises: the default failure_error_function answers."""
        raise ValueError(f"boom {text}")

    def custom_failure(ctx: RunContextWrapper[Any], error: Exception) -> str:
        return f"custom: {error}"

    @function_tool(failure_error_function=custom_failure)
    def boom_custom(text: str) -> str:
        """Raises: a custom failure_error_function answers."""
        raise ValueError(f"boom {text}")

    @function_tool(failure_error_function=None)
    def boom_raw(text: str) -> str:
        """Raises: no failure_error_function, the run fails."""
        raise ValueError(f"boom {text}")

    @function_tool(needs_approval=True)
    def delete(text: str) -> str:
        """Needs approval."""
        return f"deleted {text}"

    @function_tool(needs_approval=_ask_when_big)
    async def big_add(a: int, b: int = 1) -> int:
        """Needs approval when a > 10 (b has a default: the SDK asks conservatively)."""
        return a + b

    @function_tool(needs_approval=_ask_when_big)
    async def strict_add(a: int, b: int) -> int:
        """Needs approval when a > 10."""
        return a + b

    @function_tool(
        is_enabled=lambda ctx, agent: (ctx.context or {}).get("user") == "ann"
    )
    def for_ann(text: str) -> str:
        """Enabled for ann only."""
        return f"for ann {text}"

    @function_tool(
        is_enabled=lambda ctx, agent: (ctx.context or {}).get("user") == "bob"
    )
    def for_bob(text: str) -> str:
        """Enabled for bob only."""
        return f"for bob {text}"

    @function_tool(is_enabled=False)
    def hidden(text: str) -> str:
        """Disabled."""
        return f"hidden {text}"

    @function_tool(
        tool_input_guardrails=[no_secrets], tool_output_guardrails=[no_leaks]
    )
    def guarded(text: str) -> str:
        """Guardrails on input and output."""
        return f"guarded {text}"

    @function_tool(
        tool_input_guardrails=[trip_on_stop], tool_output_guardrails=[trip_on_alarm]
    )
    def tripwired(text: str) -> str:
        """Guardrails that raise (tripwires)."""
        return f"tripwired {text}"

    @function_tool(timeout=0.01)
    async def stuck(text: str) -> str:
        """Never finishes: the SDK's timeout answers it."""
        import anyio

        await anyio.sleep_forever()
        raise AssertionError("not reached")

    return [
        echo,
        big,
        nothing,
        empty,
        add,
        point,
        whoami,
        boom,
        boom_custom,
        boom_raw,
        delete,
        big_add,
        strict_add,
        hidden,
        for_ann,
        for_bob,
        guarded,
        tripwired,
        stuck,
    ]


X = {"text": "x"}


def _stop_after_echo(
    ctx: RunContextWrapper[Any], results: list[Any]
) -> ToolsToFinalOutputResult:
    outputs = [r.output for r in results]
    return ToolsToFinalOutputResult(
        is_final_output=True, final_output=f"custom {outputs}"
    )


@dataclass(frozen=True)
class Case:
    id: str
    turns: list[list[tuple[str, Any]]]
    """Function calls the model makes, one response per item; then it answers "done"."""
    agent: dict[str, Any] = field(default_factory=dict)
    extra_tools: Callable[[], list[Any]] = lambda: []


CASES = [
    Case(
        "plain", [[("echo", X), ("add", {"a": 1, "b": 2}), ("point", {"x": 1, "y": 2})]]
    ),
    Case("defaults", [[("add", {"a": 1})]]),
    Case("big-empty-none-results", [[("big", X), ("empty", X), ("nothing", X)]]),
    Case("context", [[("whoami", X), ("whoami", {"text": "y"})]]),
    Case("raise-default-failure", [[("boom", X), ("echo", X)]]),
    Case("raise-custom-failure", [[("boom_custom", X), ("echo", X)]]),
    Case("raise-no-failure-function", [[("echo", X), ("boom_raw", X)]]),
    Case("invalid-json", [[("add", "{not json"), ("echo", X)]]),
    Case("invalid-args", [[("add", {"a": "one"}), ("echo", X)]]),
    Case("unknown-tool", [[("nope", X)]]),
    Case("disabled-tool", [[("hidden", X)]]),
    Case("enabled-by-context", [[("for_ann", X)]]),
    Case("disabled-by-context", [[("for_bob", X)]]),
    Case("guardrail-allows", [[("guarded", X)]]),
    Case("input-guardrail-rejects", [[("guarded", {"text": "secret"}), ("echo", X)]]),
    Case("output-guardrail-rejects", [[("guarded", {"text": "leak"})]]),
    Case("input-tripwire", [[("echo", X), ("tripwired", {"text": "stop"})]]),
    Case("output-tripwire", [[("tripwired", {"text": "alarm"}), ("echo", X)]]),
    Case("timeout", [[("stuck", X), ("echo", X)]]),
    Case(
        "stop-on-first-tool",
        [[("echo", X), ("add", {"a": 1})]],
        {"tool_use_behavior": "stop_on_first_tool"},
    ),
    Case(
        "stop-at-tools",
        [[("echo", X)], [("add", {"a": 1}), ("echo", X)]],
        {"tool_use_behavior": StopAtTools(stop_at_tool_names=["add"])},
    ),
    Case(
        "custom-tool-use-behavior",
        [[("echo", X), ("add", {"a": 1})]],
        {"tool_use_behavior": _stop_after_echo},
    ),
    Case("approval-always", [[("delete", X), ("echo", X)]]),
    Case("approval-policy-no", [[("strict_add", {"a": 1, "b": 2})]]),
    Case("approval-policy-yes", [[("strict_add", {"a": 11, "b": 2})]]),
    Case("approval-policy-defaults", [[("big_add", {"a": 1})]]),
    Case(
        "hosted-tool-alongside", [[("echo", X)]], extra_tools=lambda: [WebSearchTool()]
    ),
    Case("multi-turn", [[("echo", X)], [("add", {"a": 1}), ("echo", {"text": "y"})]]),
]


def _script(case: Case) -> ScriptedModel:
    steps: list[Any] = [
        [
            function_call(name, args, call_id=f"t{t}c{i}")
            for i, (name, args) in enumerate(turn)
        ]
        for t, turn in enumerate(case.turns)
    ]
    return ScriptedModel([*steps, [assistant_message("done")]])


def _agent(kind: str, case: Case, model: ScriptedModel) -> Agent[Any]:
    tools = [*_tools(), *case.extra_tools()]
    if kind == "scheduled":
        names = [t.name for t in tools if isinstance(t, FunctionTool)]
        tools = scheduled_tools(tools, dict.fromkeys(names, READ_ONLY))
    elif kind == "undeclared":  # every function tool a barrier
        tools = scheduled_tools(tools)
    elif kind == "fragile":  # input-dependent declarations that may raise
        names = [t.name for t in tools if isinstance(t, FunctionTool)]
        tools = scheduled_tools(tools, dict.fromkeys(names, FRAGILE_DECLARATION))
    return Agent(name="a", model=model, tools=tools, **case.agent)


def _seen(model: ScriptedModel) -> list[Any]:
    return [call.input for call in model.calls]


def _observed(result: Any, model: ScriptedModel) -> Any:
    return (
        result.final_output,
        [(i.raw_item.call_id, i.raw_item.name) for i in result.interruptions],
        _seen(model),
    )


async def _outcome(kind: str, case: Case) -> Any:
    model = _script(case)
    agent = _agent(kind, case, model)
    try:
        result = await Runner.run(agent, "go", context={"user": "ann"})
    except Exception as exc:  # the outcome compared
        return type(exc), str(exc), _seen(model)
    return _observed(result, model)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["scheduled", "undeclared", "fragile"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_same_outcome_as_the_bare_tools(case: Case, kind: str) -> None:
    expected = await _outcome("plain", case)
    assert await _outcome(kind, case) == expected


APPROVAL_CASES = {
    "approve": [[("delete", X), ("echo", X)]],
    "reject": [[("delete", X), ("echo", X)]],
    "policy-defaults-approve": [[("big_add", {"a": 1})]],
}


async def _approve_and_resume(kind: str, name: str) -> Any:
    case = Case(name, APPROVAL_CASES[name])
    model = _script(case)
    agent = _agent(kind, case, model)
    first = await Runner.run(agent, "go", context={"user": "ann"})
    assert first.interruptions
    state = first.to_state()
    for item in first.interruptions:
        if name == "reject":
            state.reject(item)
        else:
            state.approve(item)
    second = await Runner.run(agent, state)
    return _observed(second, model)


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(APPROVAL_CASES))
async def test_approval_resume_as_with_the_bare_tools(name: str) -> None:
    expected = await _approve_and_resume("plain", name)
    assert expected[0] == "done"
    assert await _approve_and_resume("scheduled", name) == expected


async def _streamed(kind: str) -> Any:
    case = CASES[0]
    model = _script(case)
    result = Runner.run_streamed(
        _agent(kind, case, model), "go", context={"user": "ann"}
    )
    kinds = [event.type async for event in result.stream_events()]
    return result.final_output, _seen(model), kinds.count("run_item_stream_event")


@pytest.mark.anyio
async def test_run_streamed_as_with_the_bare_tools() -> None:
    expected = await _streamed("plain")
    assert await _streamed("scheduled") == expected


def _agent_as_tool(model: ScriptedModel) -> Any:
    inner = Agent(name="helper", model=model, instructions="help")
    return inner.as_tool(tool_name="helper", tool_description="Ask the helper.")


async def _with_agent_tool(kind: str) -> Any:
    outer = ScriptedModel(
        [
            [
                function_call("helper", {"input": "hi"}, call_id="h0"),
                function_call("echo", X, call_id="e0"),
            ],
            [assistant_message("done")],
        ]
    )
    inner = ScriptedModel([[assistant_message("helped")]])
    tools = [_agent_as_tool(inner), _tools()[0]]
    if kind == "scheduled":
        tools = scheduled_tools(tools, {"helper": READ_ONLY, "echo": READ_ONLY})
    result = await Runner.run(Agent(name="a", model=outer, tools=tools), "go")
    return result.final_output, _seen(outer), _seen(inner)


@pytest.mark.anyio
async def test_agent_as_tool_as_with_the_bare_tools() -> None:
    expected = await _with_agent_tool("plain")
    assert await _with_agent_tool("scheduled") == expected


def _hand_built() -> FunctionTool:
    """A FunctionTool built by hand whose invoker takes a RunContextWrapper."""

    async def invoke(ctx: RunContextWrapper[Any], input_json: str) -> str:
        return f"{type(ctx).__name__} {input_json}"

    return FunctionTool(
        name="manual",
        description="Built by hand.",
        params_json_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        on_invoke_tool=invoke,
    )


@pytest.mark.anyio
async def test_hand_built_function_tool_gets_the_context_the_sdk_gives_it() -> None:
    outcomes = []
    for kind in ("plain", "scheduled"):
        case = Case("manual", [[("manual", X)]], extra_tools=lambda: [_hand_built()])
        outcomes.append(await _outcome(kind, case))
    assert outcomes[1] == outcomes[0]
    assert "RunContextWrapper" in str(outcomes[0][2][1])


def test_scheduled_function_tool_keeps_its_wrapped_callable() -> None:
    [echo] = _tools()[:1]
    [scheduled] = scheduled_tools([echo])
    assert scheduled.__wrapped__ is echo.__wrapped__


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "sdk_answers"),
    [("boom", True), ("boom_custom", True), ("boom_raw", False)],
)
async def test_on_error_answer_answers_only_what_the_sdk_would_raise(
    tool: str, sdk_answers: bool
) -> None:
    case = Case("answer", [[(tool, X), ("echo", X)]])
    expected = await _outcome("plain", case)
    model = _script(case)
    tools = scheduled_tools(_tools(), on_error="answer")
    result = await Runner.run(
        Agent(name="a", model=model, tools=tools), "go", context={"user": "ann"}
    )
    if sdk_answers:
        assert _observed(result, model) == expected
    else:
        assert isinstance(expected[0], type)  # the bare SDK run failed
        outputs = [
            item["output"]
            for item in model.calls[1].input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        assert outputs[0].startswith("Error: ") and "boom x" in outputs[0]
        assert outputs[1] == "echo x"
        assert result.final_output == "done"


@pytest.mark.anyio
async def test_a_hook_rewrite_reaches_a_tool_whose_arguments_the_sdk_prepared() -> None:
    """The approval policy's prepared arguments belong to the model's input, not the rewrite."""
    from toolweave.execution import Hooks, PreToolUseDecision

    hooks = Hooks()

    @hooks.pre_tool_use("strict_add")
    def double(data: Any) -> PreToolUseDecision:
        return PreToolUseDecision(
            updated_input={**data.input, "a": data.input["a"] * 2}
        )

    case = Case("rewrite", [[("strict_add", {"a": 2, "b": 1})]])
    model = _script(case)
    tools = scheduled_tools(
        _tools(), {"strict_add": READ_ONLY}, scheduler_options={"hooks": hooks}
    )
    result = await Runner.run(Agent(name="a", model=model, tools=tools), "go")
    outputs = [
        item["output"]
        for item in model.calls[1].input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert outputs == ["5"]
    assert result.final_output == "done"


def _hand_built_raising() -> FunctionTool:
    async def invoke(ctx: ToolContext[Any], input_json: str) -> str:
        raise RuntimeError(f"manual failed on {input_json}")

    return FunctionTool(
        name="manual_boom",
        description="Built by hand; raises.",
        params_json_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        on_invoke_tool=invoke,
    )


@pytest.mark.anyio
async def test_hand_built_function_tool_that_raises_as_with_the_bare_tools() -> None:
    case = Case(
        "manual-boom",
        [[("echo", X), ("manual_boom", X)]],
        extra_tools=lambda: [_hand_built_raising()],
    )
    expected = await _outcome("plain", case)
    assert isinstance(expected[0], type)  # the SDK fails the run
    assert await _outcome("scheduled", case) == expected


@pytest.fixture
def run_sync_loop() -> Iterator[None]:
    """Close the event loop `run_sync` leaves on this thread (else a later test sees it GC'd)."""
    yield
    policy = asyncio.get_event_loop_policy()
    policy.get_event_loop().close()
    policy.set_event_loop(None)


@pytest.mark.usefixtures("run_sync_loop")
def test_run_sync_as_with_the_bare_tools() -> None:
    outcomes = []
    for kind in ("plain", "scheduled"):
        case = CASES[0]
        model = _script(case)
        result = Runner.run_sync(
            _agent(kind, case, model), "go", context={"user": "ann"}
        )
        outcomes.append(_observed(result, model))
    assert outcomes[1] == outcomes[0]


async def _with_run_hooks(kind: str) -> Any:
    from agents import RunHooks

    seen: list[Any] = []

    class Hooks(RunHooks[Any]):
        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            seen.append(("start", tool.name, context.tool_call_id))

        async def on_tool_end(
            self, context: Any, agent: Any, tool: Any, result: Any
        ) -> None:
            seen.append(("end", tool.name, context.tool_call_id, str(result)))

    case = Case("hooks", [[("echo", X)], [("add", {"a": 1}), ("boom", X)]])
    model = _script(case)
    result = await Runner.run(
        _agent(kind, case, model), "go", context={"user": "ann"}, hooks=Hooks()
    )
    return sorted(seen), _observed(result, model)


@pytest.mark.anyio
async def test_run_hooks_see_the_same_calls_as_with_the_bare_tools() -> None:
    expected = await _with_run_hooks("plain")
    assert len(expected[0]) == 6
    assert await _with_run_hooks("scheduled") == expected


async def _resume_from_json(kind: str) -> Any:
    """Approve after a round trip through RunState JSON, with tools built anew."""
    from agents import RunState

    case = Case("json", [[("delete", X), ("echo", X)]])
    model = _script(case)
    first = await Runner.run(_agent(kind, case, model), "go", context={"user": "ann"})
    saved = first.to_state().to_json()
    agent = _agent(kind, case, model)  # a new process would build its tools anew
    state = await RunState.from_json(agent, saved)
    for item in state.get_interruptions():
        state.approve(item)
    second = await Runner.run(agent, state)
    return _observed(second, model)


@pytest.mark.anyio
async def test_resume_from_json_with_new_tools_as_with_the_bare_tools() -> None:
    expected = await _resume_from_json("plain")
    assert expected[0] == "done"
    assert await _resume_from_json("scheduled") == expected


def _local_shell() -> Any:
    async def run(request: Any) -> str:
        return "ran"

    return ShellTool(executor=run)


def _hosted_shell() -> Any:
    return ShellTool(environment={"type": "container_auto"})


def _local_custom() -> Any:
    async def invoke(ctx: Any, text: str) -> str:
        return text

    return CustomTool(name="custom", description="c", on_invoke_tool=invoke)


@pytest.mark.parametrize(
    ("make", "warns"),
    [
        (_local_shell, True),
        (_local_custom, True),
        (_hosted_shell, False),
        (WebSearchTool, False),
    ],
    ids=["local-shell", "custom-tool", "hosted-shell", "web-search"],
)
def test_locally_run_tools_pass_through_with_a_warning(
    make: Callable[[], Any], warns: bool
) -> None:
    """Not scheduled, never changed; the ones the SDK runs here are named in a warning."""
    import warnings

    other = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tools = scheduled_tools([other, _tools()[0]])
    assert tools[0] is other
    named = [w for w in caught if issubclass(w.category, UnscheduledToolWarning)]
    assert len(named) == (1 if warns else 0)
    if warns:
        assert other.name in str(named[0].message)


_MIXABLE: list[tuple[str, Any]] = [
    ("echo", X),
    ("add", {"a": 1}),
    ("add", "{not json"),
    ("add", {"a": "one"}),
    ("point", {"x": 1, "y": 2}),
    ("whoami", X),
    ("boom", X),
    ("boom_custom", X),
    ("guarded", {"text": "secret"}),
    ("guarded", {"text": "leak"}),
    ("empty", X),
    ("strict_add", {"a": 1, "b": 2}),
    ("delete", X),
]
"""Calls that never fail a run."""


def _mixes(seed: int, count: int) -> list[Case]:
    import random

    rng = random.Random(seed)
    return [
        Case(f"mix{i}", [rng.choices(_MIXABLE, k=rng.randint(1, 6))])
        for i in range(count)
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("case", _mixes(seed=15, count=20), ids=lambda c: c.id)
async def test_random_mixes_as_with_the_bare_tools(case: Case) -> None:
    """Seeded random responses mixing results, errors, guardrails and approvals."""
    expected = await _outcome("plain", case)
    for kind in ("scheduled", "undeclared", "fragile"):
        assert await _outcome(kind, case) == expected, kind
