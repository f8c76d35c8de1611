"""Runs do not share a memory they do not share (issue 24, item 10).

The read tool answers a re-read of unchanged lines with "unchanged since your
last read; that earlier result is still current". That is true only if the
earlier result is in the transcript the model sees: a second run on the same
Agent, a compaction that dropped the read, or a fresh process resuming a
session must read the file again. What the runs share is what is known of the
file on disk: read-before-edit keeps working across them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from loop_support import add, call, config, say, scripted, use

import toolweave as tw
from toolweave.execution import PermissionRules
from toolweave.messages import Message, ToolResult, Usage
from toolweave.tools.builtin import EditTool, ReadTool

pytestmark = pytest.mark.anyio

UNCHANGED = "unchanged since your last read"
EDITS_ALLOWED = config(permissions=PermissionRules(allow=["edit"]))
CONTENT = "alpha line"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(f"{CONTENT}\nbeta line\n")
    return tmp_path


def read(call_id: str) -> tw.ModelResponse:
    return use(call(call_id, "read", path="a.txt"))


def answers(result: tw.RunResult) -> dict[str, ToolResult]:
    return {r.call_id: r for m in result.messages for r in m.tool_results}


def showed_content(result: ToolResult) -> bool:
    assert not result.is_error, result.text
    return CONTENT in result.text and UNCHANGED not in result.text


async def test_a_reread_in_the_same_run_is_deduplicated(root: Path) -> None:
    """The control: the earlier result is in this run's transcript."""
    agent = tw.Agent(scripted(read("r1"), read("r2"), say("done")), [ReadTool(root)])
    got = answers(await agent.run("go"))
    assert showed_content(got["r1"])
    assert UNCHANGED in got["r2"].text


async def test_a_second_run_on_the_same_agent_reads_again(root: Path) -> None:
    agent = tw.Agent(
        scripted(read("r1"), say("done"), read("r2"), say("done")),
        [ReadTool(root), EditTool(root)],
    )
    first = await agent.run("go")
    second = await agent.run("go again")  # a fresh transcript
    assert showed_content(answers(first)["r1"])
    assert showed_content(answers(second)["r2"])


async def test_read_before_edit_stays_shared_across_runs(root: Path) -> None:
    edit = call("e", "edit", path="a.txt", old_string="beta", new_string="gamma")
    agent = tw.Agent(
        scripted(read("r1"), say("done"), use(edit), say("done")),
        [ReadTool(root), EditTool(root)],
        config=EDITS_ALLOWED,
    )
    await agent.run("go")
    second = await agent.run("edit it")
    assert not answers(second)["e"].is_error, answers(second)["e"].text
    assert "gamma" in (root / "a.txt").read_text()


async def test_a_run_given_the_history_that_holds_the_read_may_deduplicate(
    root: Path,
) -> None:
    agent = tw.Agent(
        scripted(read("r1"), say("done"), read("r2"), say("done")), [ReadTool(root)]
    )
    first = await agent.run("go")
    second = await agent.run("again", history=first.messages)
    assert showed_content(answers(first)["r1"])
    assert UNCHANGED in answers(second)["r2"].text


async def test_history_without_the_read_does_not(root: Path) -> None:
    """The same agent, a history that never held the read's result."""
    agent = tw.Agent(
        scripted(read("r1"), say("done"), read("r2"), say("done")), [ReadTool(root)]
    )
    await agent.run("go")
    other = [Message("user", "hi"), Message("assistant", "hello")]
    second = await agent.run("again", history=other)
    assert showed_content(answers(second)["r2"])


async def test_a_resumed_session_whose_history_holds_the_read(root: Path) -> None:
    """A new process: the ledger comes back from the store, the history from the session.

    What is on disk is known again (an edit works without a re-read), but the
    restored ledger cannot tell that the history's result is the one it
    recorded: the read shows the lines again rather than claim an earlier
    result is current.
    """
    first_agent = tw.Agent(scripted(read("r1"), say("done")), [ReadTool(root)])
    first = await first_agent.run("go")
    stored = first_agent.state.read_files.snapshot()  # what a session store keeps

    def resumed(*steps: tw.ModelResponse) -> tw.Agent:
        agent = tw.Agent(
            scripted(*steps, say("done")),
            [ReadTool(root), EditTool(root)],
            config=EDITS_ALLOWED,
        )
        agent.state.read_files.restore(stored)
        return agent

    reread = await resumed(read("r2")).run("go on", history=first.messages)
    assert showed_content(answers(reread)["r2"])
    edit = call("e", "edit", path="a.txt", old_string="beta", new_string="gamma")
    edited = await resumed(use(edit)).run("go on", history=first.messages)
    assert not answers(edited)["e"].is_error, answers(edited)["e"].text


async def test_a_compaction_that_dropped_the_read_reads_again(root: Path) -> None:
    big = Usage(600, 5)
    model = scripted(
        read("r1"),
        use(call("c1", "add", a=1, b=1)),
        use(call("c2", "add", a=2, b=2), usage=big),  # compaction comes next
        say("SUMMARY: read a.txt, added numbers"),
        read("r2"),
        say("done"),
        context_window=1_000,
    )
    agent = tw.Agent(
        model,
        [ReadTool(root), add],
        config=config(compaction_threshold=0.5, compaction_keep_recent=2),
    )
    result = await agent.run("go")
    assert all(r.call_id != "r1" for m in result.messages for r in m.tool_results)
    assert showed_content(answers(result)["r2"])


async def test_concurrent_runs_on_one_agent_each_read_for_themselves(
    root: Path,
) -> None:
    """Both runs read, meet at a barrier, and read again: each sees only its own."""
    at_barrier = 0
    both = anyio.Event()

    @tw.tool(name="barrier")
    async def barrier() -> str:
        """Wait for the other run."""
        nonlocal at_barrier
        at_barrier += 1
        if at_barrier == 2:
            both.set()
        await both.wait()
        return "met"

    def script(tag: str) -> tw.models.ScriptedModel:
        return scripted(
            read(f"{tag}1"),
            use(call(f"{tag}b", "barrier")),
            read(f"{tag}2"),
            say("done"),
        )

    results: dict[str, tw.RunResult] = {}
    models = {"a": script("a"), "b": script("b")}

    class Routed(tw.models.Model):
        """Routes each run's requests to its own script (by the prompt)."""

        @property
        def name(self) -> str:
            return "routed"

        def stream(
            self, request: tw.models.ModelRequest
        ) -> AsyncIterator[tw.models.StreamChunk]:
            return models[request.messages[0].text].stream(request)

    agent = tw.Agent(Routed(), [ReadTool(root), barrier])

    async def run(tag: str) -> None:
        results[tag] = await agent.run(tag)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a")
            tg.start_soon(run, "b")
    for tag in ("a", "b"):
        got = answers(results[tag])
        assert showed_content(got[f"{tag}1"])  # the other run's read is not its own
        assert UNCHANGED in got[f"{tag}2"].text
