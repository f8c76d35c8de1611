from __future__ import annotations

from typing import Any

import toolweave as tw
from toolweave.scheduling import classify


def _registry() -> tw.ToolRegistry:
    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def safe(x: int) -> int:
        """The safe test tool."""
        return x

    @tw.tool
    async def plain(x: int) -> int:
        """The plain test tool."""
        return x

    @tw.tool(concurrency=lambda a: a["x"] > 0)
    async def by_input(x: int) -> int:
        """The by_input test tool."""
        return x

    def explode(args: dict[str, Any]) -> tw.Concurrency:
        raise RuntimeError("classifier bug")

    @tw.tool(concurrency=explode)
    async def raising(x: int) -> int:
        """The raising test tool."""
        return x

    @tw.tool(concurrency=tw.Concurrency.SAFE, hidden=True)
    async def hidden(x: int) -> int:
        """The hidden test tool."""
        return x

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    def sync_cancel(x: int) -> int:
        """The sync_cancel test tool."""
        return x

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    async def async_cancel(x: int) -> int:
        """The async_cancel test tool."""
        return x

    @tw.tool(
        concurrency=tw.Concurrency.SAFE,
        access=lambda a: tw.Access(reads=[f"k:{a['x']}"]),
    )
    async def declared(x: int) -> int:
        """The declared test tool."""
        return x

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: 1 / 0)  # type: ignore[arg-type,return-value]
    async def bad_access(x: int) -> int:
        """The bad_access test tool."""
        return x

    @tw.tool(concurrency=tw.Concurrency.SAFE, aliases=("alias",))
    async def aliased(x: int) -> int:
        """The aliased test tool."""
        return x

    return tw.ToolRegistry(
        [
            safe,
            plain,
            by_input,
            raising,
            hidden,
            sync_cancel,
            async_cancel,
            declared,
            bad_access,
            aliased,
        ]
    )


def _plan(
    name: str, args: dict[str, Any] | None = None, **kw: Any
) -> tw.scheduling.CallPlan:
    return classify(
        tw.ToolCall("id", name, {"x": 1} if args is None else args, **kw), _registry()
    )


def test_safe_resolved_call_is_parallel_and_reads_everything() -> None:
    plan = _plan("safe")
    assert plan.parallel_ok
    assert plan.access == tw.Access.read_all()
    assert plan.args == {"x": 1}


def test_default_is_sequential_and_a_barrier() -> None:
    plan = _plan("plain")
    assert not plan.parallel_ok
    assert plan.access.is_barrier


def test_hallucinated_name_runs_nothing_so_it_is_no_barrier() -> None:
    plan = _plan("no_such_tool")
    assert plan.tool is None and plan.runs_nothing
    assert plan.parallel_ok and plan.access == tw.Access()
    assert "unknown tool" in plan.reason


def test_input_failing_its_schema_runs_nothing_so_it_is_no_barrier() -> None:
    plan = _plan("safe", {"x": "not a number"})
    assert plan.tool is not None and plan.args is None and plan.runs_nothing
    assert plan.parallel_ok and plan.access == tw.Access()


def test_unparseable_json_runs_nothing_so_it_is_no_barrier() -> None:
    plan = _plan("plain", {}, raw_arguments="{oops")
    assert plan.runs_nothing and plan.parallel_ok and plan.access == tw.Access()


def test_a_validator_that_raises_still_fails_closed() -> None:
    # Something ran and misbehaved: not "provably runs nothing".
    tool = _registry().get("safe")
    assert tool is not None

    def boom(raw: object) -> dict[str, object]:
        raise RuntimeError("validator bug")

    tool.parse = boom  # type: ignore[method-assign,assignment]
    plan = classify(tw.ToolCall("id", "safe", {"x": 1}), tw.ToolRegistry([tool]))
    assert not plan.runs_nothing and not plan.parallel_ok and plan.access.is_barrier
    assert plan.reason == "input validation raised"


def test_resolved_valid_calls_do_not_claim_to_run_nothing() -> None:
    for name in ("safe", "plain", "raising", "hidden", "sync_cancel", "bad_access"):
        assert not _plan(name).runs_nothing, name


def test_concurrency_from_validated_input() -> None:
    assert _plan("by_input", {"x": 5}).parallel_ok
    assert not _plan("by_input", {"x": -5}).parallel_ok
    # "5" validates to 5 first: the classifier sees the validated value
    assert _plan("by_input", {"x": "5"}).parallel_ok


def test_classifier_that_raises_fails_closed() -> None:
    plan = _plan("raising")
    assert not plan.parallel_ok and plan.access.is_barrier


def test_hidden_tool_is_never_parallel() -> None:
    plan = _plan("hidden")
    assert not plan.parallel_ok and plan.access.is_barrier


def test_sync_cancel_tool_is_not_parallel_but_async_cancel_is() -> None:
    assert not _plan("sync_cancel").parallel_ok
    assert _plan("async_cancel").parallel_ok


def test_declared_access_is_used() -> None:
    assert _plan("declared", {"x": 7}).access == tw.Access(reads=["k:7"])


def test_access_declaration_that_raises_is_a_barrier() -> None:
    assert _plan("bad_access").access.is_barrier


def test_aliases_resolve() -> None:
    assert _plan("alias").parallel_ok


def test_keys_overlap_rules() -> None:
    from toolweave.tools import keys_overlap

    assert keys_overlap("fs:/a", "fs:/a/b")
    assert keys_overlap("fs:/a/b", "fs:/a")
    assert not keys_overlap("fs:/a", "fs:/ab")
    assert keys_overlap("*", "anything")
    assert keys_overlap("fs:", "fs:/x")
    assert not keys_overlap("todo:", "fs:/x")
    assert keys_overlap("fs:/a/", "fs:/a/b")


def test_access_conflicts() -> None:
    r = tw.Access(reads=["fs:/a"])
    w = tw.Access(writes=["fs:/a/b"])
    other = tw.Access(writes=["fs:/c"])
    assert not r.conflicts_with(tw.Access(reads=["fs:/a"]))
    assert r.conflicts_with(w) and w.conflicts_with(r)
    assert not r.conflicts_with(other)
    assert not tw.Access().conflicts_with(tw.Access.barrier())
    assert tw.Access.barrier().conflicts_with(r)
