"""Issue 29, item 6: the smaller rows, through `tw.Agent`.

- Persisted-result files are named by call key: with repeated ids a parallel
  batch (completing out of order) writes the same files and the same
  transcript as a serial one.
- A response is final when it has no tool calls, whatever its stop reason
  (scripted, and on the official SDKs' wire: Anthropic ``tool_use`` and OpenAI
  ``tool_calls`` with no call in them).
- ``accept_edits`` without a workspace names the missing setting.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from loop_support import call, say, use
from window_support import PROVIDERS, LoopbackServer, model_for, text_reply

import toolweave as tw
from toolweave.events import CompletionReason
from toolweave.events import Warning as WarningEvent
from toolweave.execution import PermissionMode
from toolweave.messages import ModelResponse, StopReason, Text, ToolResult
from toolweave.models import ScriptedModel
from toolweave.scheduling import ConcurrencyConfig
from toolweave.tools import Access, Concurrency
from toolweave.tools.builtin import coding_tools

pytestmark = [
    pytest.mark.anyio,
    # see test_context_window: the openai SDK's generators under trio's finaliser
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

_SAVED = re.compile(r"saved to: (\S+)")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Real clocks: persistence writes on worker threads, the SDKs on sockets."""
    return request.param


# -- persisted results named by key -------------------------------------------------


def _report_tool(parallel: bool) -> tw.Tool:
    second_done = anyio.Event()

    @tw.tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(), max_result_chars=100
    )
    async def report(part: int) -> str:
        """A long report."""
        if parallel and part == 0:
            await second_done.wait()  # the first call finishes last
        if part == 1:
            second_done.set()
        return f"report {part}\n" + f"line of part {part}\n" * 40

    return report


async def _run_repeated_ids(tmp_path: Path, *, parallel: bool) -> tw.RunResult:
    model = ScriptedModel(
        [
            use(call("call_0", "report", part=0), call("call_0", "report", part=1)),
            say("done"),
        ]
    )
    config = tw.AgentConfig(
        concurrency=ConcurrencyConfig(enabled=parallel), results_dir=tmp_path
    )
    agent = tw.Agent(model, [_report_tool(parallel)], config=config)
    try:
        with anyio.fail_after(10):
            return await agent.run("report")
    finally:
        await agent.aclose()


async def test_persisted_files_are_named_by_call_key(tmp_path: Path) -> None:
    serial = await _run_repeated_ids(tmp_path / "serial", parallel=False)
    parallel = await _run_repeated_ids(tmp_path / "parallel", parallel=True)
    assert serial.completion_reason is parallel.completion_reason
    assert parallel.completion_reason is CompletionReason.COMPLETED

    def saved(result: tw.RunResult, root: Path) -> list[tuple[str, str]]:
        results = [
            b for m in result.messages for b in m.blocks if isinstance(b, ToolResult)
        ]
        paths = [Path(_SAVED.search(r.text).group(1)) for r in results]  # type: ignore[union-attr]
        return [(p.relative_to(root).as_posix(), p.read_text()[:8]) for p in paths]

    assert saved(serial, tmp_path / "serial") == [
        ("tool-results/call_0@1.0.txt", "report 0"),
        ("tool-results/call_0@1.1.txt", "report 1"),
    ]
    assert saved(parallel, tmp_path / "parallel") == saved(serial, tmp_path / "serial")

    def texts(result: tw.RunResult, root: Path) -> list[str]:
        return [
            b.text.replace(str(root), "ROOT")
            for m in result.messages
            for b in m.blocks
            if isinstance(b, ToolResult)
        ]

    assert texts(parallel, tmp_path / "parallel") == texts(serial, tmp_path / "serial")


# -- a response without calls is final ---------------------------------------------------


@pytest.mark.parametrize("stop", list(StopReason))
async def test_a_response_without_calls_is_final_whatever_its_stop_reason(
    stop: StopReason,
) -> None:
    model = ScriptedModel([ModelResponse([Text("the answer")], stop)])
    agent = tw.Agent(model, [])
    try:
        result = await agent.run("question")
    finally:
        await agent.aclose()
    assert len(model.requests) == 1  # no second call
    expected = (
        CompletionReason.TRUNCATED
        if stop is StopReason.MAX_TOKENS
        else CompletionReason.COMPLETED
    )
    assert result.completion_reason is expected
    assert result.output.startswith("the answer")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, loopback.unexpected


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_tool_use_stop_with_no_calls_is_final_on_the_wire(
    provider: str, server: LoopbackServer
) -> None:
    stop = "tool_use" if provider == "anthropic" else "tool_calls"
    server.script(text_reply(provider, "the answer", stop=stop))
    model = model_for(provider, server.url, window=None)
    agent = tw.Agent(model, [])
    try:
        result = await agent.run("question")
    finally:
        await agent.aclose()
        await model.aclose()
    assert len(server.requests) == 1
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.output == "the answer"


# -- accept_edits without a workspace ------------------------------------------------------


async def test_accept_edits_without_a_workspace_names_the_setting(
    tmp_path: Path,
) -> None:
    target = tmp_path / "notes.txt"
    model = ScriptedModel(
        [use(call("w", "write", path=str(target), content="hello")), say("ok")]
    )
    config = tw.AgentConfig(permission_mode=PermissionMode.ACCEPT_EDITS)
    agent = tw.Agent(model, coding_tools(tmp_path), config=config)
    try:
        events = [e async for e in agent.run_stream("write it")]
    finally:
        await agent.aclose()
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    assert any("no workspace is set" in w for w in warnings), warnings
    answer = model.requests[1].messages[-1].tool_results[0]
    assert answer.is_error
    assert "AgentConfig(workspace=" in answer.text and "accept_edits" in answer.text
    assert not target.exists()


async def test_accept_edits_with_a_workspace_writes(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    model = ScriptedModel(
        [use(call("w", "write", path=str(target), content="hello")), say("ok")]
    )
    config = tw.AgentConfig(
        permission_mode=PermissionMode.ACCEPT_EDITS, workspace=tmp_path
    )
    agent = tw.Agent(model, coding_tools(tmp_path), config=config)
    try:
        events = [e async for e in agent.run_stream("write it")]
    finally:
        await agent.aclose()
    assert not any(
        isinstance(e, WarningEvent) and "workspace" in e.message for e in events
    )
    assert target.read_text() == "hello"


# -- read-only, yet never overlapping (a rate-limited endpoint) ---------------------------


async def test_a_rate_limited_reader_never_overlaps_itself_but_overlaps_others() -> (
    None
):
    """The declaration docs give: SAFE, and a write of the endpoint's own key.

    Rendezvous: while the first `quota` call is held, the other reader runs
    beside it (2 reached) and no second `quota` call starts (never above 1).
    """
    release = anyio.Event()
    inside: list[str] = []
    peak = {"quota": 0}

    @tw.tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(writes=("rate:api.example.com",)),
    )
    async def quota(account: str) -> str:
        """Read an account's quota from a rate-limited API (one request at a time)."""
        inside.append(f"quota {account}")
        peak["quota"] = max(peak["quota"], sum(i.startswith("quota") for i in inside))
        await release.wait()
        inside.remove(f"quota {account}")
        return f"{account}: 100"

    @tw.tool(concurrency=Concurrency.SAFE, access=lambda a: Access(reads=("doc:",)))
    async def lookup(term: str) -> str:
        """Look a term up (another service)."""
        inside.append(f"lookup {term}")
        await release.wait()
        inside.remove(f"lookup {term}")
        return f"{term}: defined"

    calls = [
        call("q1", "quota", account="a"),
        call("q2", "quota", account="b"),
        call("l1", "lookup", term="x"),
        call("q3", "quota", account="c"),
    ]
    model = ScriptedModel([use(*calls), say("done")])
    agent = tw.Agent(model, [quota, lookup])
    async with anyio.create_task_group() as tg:
        results: list[tw.RunResult] = []

        async def drive() -> None:
            results.append(await agent.run("check"))

        tg.start_soon(drive)
        with anyio.fail_after(10):
            while len(inside) < 2:
                await anyio.wait_all_tasks_blocked()
        await anyio.wait_all_tasks_blocked()
        assert sorted(inside) == ["lookup x", "quota a"]  # 2 reached, one quota
        release.set()
    await agent.aclose()
    assert peak["quota"] == 1  # never two requests to the endpoint at once
    assert results[0].completion_reason is CompletionReason.COMPLETED
    answers = [r.text for m in results[0].messages for r in m.tool_results]
    assert answers == ["a: 100", "b: 100", "x: defined", "c: 100"]  # call order
