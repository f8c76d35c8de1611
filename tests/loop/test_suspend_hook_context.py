"""What hooks said before a suspension reaches the resumed run as it would an uninterrupted one.

Issue 29 item 1: the PostToolUse context of calls that ran before the batch
suspended used to be dropped. It is kept in the `Suspension` (and in the
store's `RunSuspended`), so the request after the resumed batch carries the
same reminder, in call order, as the run an ask handler answered at once.
The hooks' own calls are counted. Both backends.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from loop_support import call, say, use

from toolweave import CompletionReason
from toolweave.execution import (
    Hooks,
    PermissionRules,
    PostToolUseDecision,
    PostToolUseInput,
    PreToolUseDecision,
    PreToolUseInput,
)
from toolweave.loop import Agent, AgentConfig
from toolweave.models import ScriptedModel
from toolweave.tools import Access, Concurrency, tool

pytestmark = pytest.mark.anyio


@tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
async def free(tag: str) -> str:
    """Runs without asking."""
    return f"did {tag}"


@tool
async def guarded(tag: str) -> str:
    """Needs approval."""
    return f"did {tag}"


def _hooks(seen: list[str]) -> Hooks:
    hooks = Hooks()

    @hooks.post_tool_use("free")
    def after_free(data: PostToolUseInput) -> PostToolUseDecision:
        seen.append(f"post {data.input['tag']}")
        return PostToolUseDecision(additional_context=f"note on {data.input['tag']}")

    @hooks.post_tool_use("guarded")
    def after_guarded(data: PostToolUseInput) -> PostToolUseDecision:
        seen.append(f"post {data.input['tag']}")
        return PostToolUseDecision(additional_context="guarded ran")

    @hooks.pre_tool_use("guarded")
    def before_guarded(data: PreToolUseInput) -> PreToolUseDecision:
        seen.append(f"pre {data.input['tag']}")
        return PreToolUseDecision()

    return hooks


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            use(
                call("a", "free", tag="a"),
                call("b", "guarded", tag="b"),
                call("c", "free", tag="c"),
            ),
            say("done"),
        ]
    )


def _agent(model: ScriptedModel, seen: list[str], **config: object) -> Agent:
    settings = AgentConfig(
        permissions=PermissionRules(ask=["guarded"]),
        on_ask="suspend",
        hooks=_hooks(seen),
        **config,  # type: ignore[arg-type]
    )
    return Agent(model, [free, guarded], config=settings)


def _reminders(model: ScriptedModel) -> list[str]:
    last = model.requests[-1].messages[-1]
    assert not isinstance(last.content, str)
    return [
        b.text
        for b in last.content
        if hasattr(b, "text") and "<system-reminder>" in b.text
    ]


async def test_post_tool_use_context_before_a_suspension_reaches_the_resumed_run() -> (
    None
):
    async def approve(call: object, reason: str) -> str:
        return "allow"

    straight_seen: list[str] = []
    straight_model = _script()
    with anyio.fail_after(30):
        straight = await _agent(straight_model, straight_seen, ask=approve).run("go")
    assert straight.completion_reason is CompletionReason.COMPLETED
    expected = _reminders(straight_model)
    assert expected and "note on a" in expected[0] and "note on c" in expected[0]

    seen: list[str] = []
    model = _script()
    agent = _agent(model, seen)
    with anyio.fail_after(30):
        first = await agent.run("go")
        assert first.completion_reason is CompletionReason.SUSPENDED
        assert {s for s, _, _ in first.suspension.signals} == {"context"}  # type: ignore[union-attr]
        result = await agent.resume(first.suspension, {"1.1": "allow"})  # type: ignore[arg-type]
    assert result.completion_reason is CompletionReason.COMPLETED, result.detail
    assert _reminders(model) == expected  # the same reminder, in call order
    # each PostToolUse hook ran once per call that ran
    assert sorted(s for s in seen if s.startswith("post")) == [
        "post a",
        "post b",
        "post c",
    ]


async def test_the_kept_context_survives_the_store(tmp_path: Path) -> None:
    """Suspended in one store, resumed from it: the reminder is the uninterrupted one."""
    from toolweave.sessions import SessionRecorder, SQLiteSessionStore, prepare_resume

    async def approve(call: object, reason: str) -> str:
        return "allow"

    straight_model = _script()
    with anyio.fail_after(30):
        await _agent(straight_model, [], ask=approve).run("go")
    expected = _reminders(straight_model)

    store = SQLiteSessionStore(tmp_path / "s.db")
    try:
        sid = store.create_session(
            workspace=str(tmp_path), model="scripted", title="t"
        ).id
        model = _script()
        seen: list[str] = []
        agent = _agent(model, seen)
        with anyio.fail_after(30):
            first = await agent.run(
                "go", recorder=SessionRecorder(store, sid, model="scripted")
            )
        assert first.completion_reason is CompletionReason.SUSPENDED
        plan = prepare_resume(store, sid)
        assert plan.suspension is not None
        assert plan.suspension.signals == first.suspension.signals  # type: ignore[union-attr]
        recorder = SessionRecorder(store, sid, model="scripted", lease=plan.lease)
        with anyio.fail_after(30):
            result = await agent.resume(
                plan.suspension, {"1.1": "allow"}, recorder=recorder
            )
        assert result.completion_reason is CompletionReason.COMPLETED, result.detail
        assert _reminders(model) == expected
        assert sorted(s for s in seen if s.startswith("post")) == [
            "post a",
            "post b",
            "post c",
        ]
    finally:
        store.close()
