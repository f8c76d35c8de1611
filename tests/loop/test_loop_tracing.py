"""OpenTelemetry spans run -> iteration -> chat / execute_tool, via the in-memory exporter."""

from __future__ import annotations

import sys

import pytest
from loop_support import add, call, config, run_collect, say, scripted, use
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolweave.events import CompletionReason
from toolweave.loop import Agent, TracePolicy, subagent
from toolweave.loop._tracing import NULL_SPAN, make_tracer

pytestmark = pytest.mark.anyio


def traced(payloads: bool = False) -> tuple[TracePolicy, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return TracePolicy(tracer_provider=provider, capture_payloads=payloads), exporter


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_spans_follow_the_loop() -> None:
    policy, exporter = traced()
    model = scripted(
        use(call("a", "add", a=1, b=2)), say("3"), name="claude-sonnet-4-5"
    )
    result, _ = await run_collect(
        Agent(model, [add], name="calc", config=config(tracing=policy))
    )
    assert result.completion_reason is CompletionReason.COMPLETED
    spans = by_name(exporter.get_finished_spans())
    [run] = spans["invoke_agent calc"]
    [it1] = spans["iteration 1"]
    [it2] = spans["iteration 2"]
    chats = spans["chat claude-sonnet-4-5"]
    [tool_span] = spans["execute_tool add"]
    assert (
        run.context is not None and it1.context is not None and it2.context is not None
    )
    assert parent_of(it1) == parent_of(it2) == run.context.span_id
    assert [parent_of(c) for c in chats] == [it1.context.span_id, it2.context.span_id]
    assert parent_of(tool_span) == it1.context.span_id
    assert run.attributes is not None and it2.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "calc"
    assert run.attributes["toolweave.completion_reason"] == "completed"
    assert it2.attributes["toolweave.loop.transition"] == "next_iteration"
    chat = chats[0].attributes
    assert chat is not None
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert chat["gen_ai.usage.input_tokens"] == 10
    assert chat["gen_ai.response.finish_reasons"] == ("tool_use",)
    tool_attrs = tool_span.attributes
    assert tool_attrs is not None
    assert (
        tool_attrs["gen_ai.tool.name"] == "add"
        and tool_attrs["gen_ai.tool.call.id"] == "a"
    )
    every_key = {k for s in exporter.get_finished_spans() for k in (s.attributes or {})}
    assert (
        not {
            "gen_ai.input.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        }
        & every_key
    )


async def test_payloads_only_with_the_policy() -> None:
    policy, exporter = traced(payloads=True)
    model = scripted(use(call("a", "add", a=1, b=2)), say("3"))
    await run_collect(Agent(model, [add], config=config(tracing=policy)))
    spans = by_name(exporter.get_finished_spans())
    tool_attrs = spans["execute_tool add"][0].attributes
    assert tool_attrs is not None
    assert tool_attrs["gen_ai.tool.call.result"] == "3"
    assert "'a': 1" in str(tool_attrs["gen_ai.tool.call.arguments"])
    chat = spans["chat scripted"][0].attributes
    assert chat is not None and "go" in str(chat["gen_ai.input.messages"])


async def test_failed_tool_marks_its_span() -> None:
    policy, exporter = traced()
    model = scripted(use(call("x", "nope")), say("sorry"))
    await run_collect(Agent(model, [add], config=config(tracing=policy)))
    [span] = by_name(exporter.get_finished_spans())["execute_tool nope"]
    assert span.attributes is not None and span.attributes["error.type"] == "tool_error"
    assert not span.status.is_ok


async def test_without_opentelemetry_nothing_is_traced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    tracer = make_tracer(TracePolicy())
    assert tracer.start("x") is NULL_SPAN
    model = scripted(use(call("a", "add", a=1, b=2)), say("3"))
    result, _ = await run_collect(Agent(model, [add]))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert make_tracer(TracePolicy(enabled=False)).start("y") is NULL_SPAN


async def test_a_sub_agent_run_nests_under_its_tool_span() -> None:
    policy, exporter = traced()
    child = subagent(
        "helper",
        "Helps.",
        model=scripted(say("child answer")),
        config=config(tracing=policy),
    )
    model = scripted(use(call("h", "helper", prompt="help")), say("done"))
    await run_collect(
        Agent(model, [child], name="parent", config=config(tracing=policy))
    )
    spans = by_name(exporter.get_finished_spans())
    [tool_span] = spans["execute_tool helper"]
    [child_run] = spans["invoke_agent helper"]
    assert tool_span.context is not None
    assert parent_of(child_run) == tool_span.context.span_id
