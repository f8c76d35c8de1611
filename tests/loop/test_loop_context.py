"""Context assembly: providers, routing by kind, failures skipped, wiring into the request."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from loop_support import (
    add,
    assert_provider_valid,
    call,
    config,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave.events import CompletionReason, Warning
from toolweave.loop import (
    Agent,
    ContextAssembler,
    ContextBlock,
    ContextKind,
    ContextRequest,
    DirectorySummaryContext,
    EnvironmentContext,
    GitContext,
    refreshes,
    transcript_problems,
)
from toolweave.messages import Message, Text
from toolweave.tools import tool

SHA = "0123456789abcdef0123456789abcdef01234567"


def make_repo(root: Path, head: str, refs: dict[str, str] | None = None) -> Path:
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text(head + "\n")
    for name, sha in (refs or {}).items():
        (git / name).parent.mkdir(parents=True, exist_ok=True)
        (git / name).write_text(sha + "\n")
    return git


def test_git_branch_from_files(tmp_path: Path) -> None:
    make_repo(tmp_path, "ref: refs/heads/feature", {"refs/heads/feature": SHA})
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    block = GitContext()(ContextRequest(workspace=tmp_path / "src" / "pkg"))
    assert block is not None
    assert block.kind is ContextKind.ATTACHMENT
    assert block.body == "Git branch: feature at 0123456"


def test_git_detached_head_packed_refs_and_empty_repo(tmp_path: Path) -> None:
    detached = tmp_path / "d"
    make_repo(detached, SHA)
    block = GitContext()(ContextRequest(workspace=detached))
    assert block is not None and block.body == "Git HEAD: detached at 0123456"

    packed = tmp_path / "p"
    git = make_repo(packed, "ref: refs/heads/main")
    (git / "packed-refs").write_text(
        f"# pack-refs with: peeled\n{SHA} refs/heads/main\n"
    )
    block = GitContext()(ContextRequest(workspace=packed))
    assert block is not None and block.body == "Git branch: main at 0123456"

    fresh = tmp_path / "f"
    make_repo(fresh, "ref: refs/heads/main")
    block = GitContext()(ContextRequest(workspace=fresh))
    assert block is not None and block.body == "Git branch: main (no commits yet)"


def test_git_worktree_file_and_no_repo(tmp_path: Path) -> None:
    main = tmp_path / "main"
    git = make_repo(main, "ref: refs/heads/main", {"refs/heads/topic": SHA})
    worktree_dir = git / "worktrees" / "wt"
    worktree_dir.mkdir(parents=True)
    (worktree_dir / "HEAD").write_text("ref: refs/heads/topic\n")
    (worktree_dir / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {worktree_dir}\n")
    block = GitContext()(ContextRequest(workspace=wt))
    assert block is not None and block.body == "Git branch: topic at 0123456"

    lonely = tmp_path / "lonely"
    lonely.mkdir()
    assert GitContext()(ContextRequest(workspace=lonely)) is None


def test_directory_summary_is_cut(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text("x")
    (tmp_path / "pkg").mkdir()
    (tmp_path / ".hidden").write_text("x")
    block = DirectorySummaryContext(max_entries=3)(ContextRequest(workspace=tmp_path))
    lines = block.body.splitlines()
    assert lines[0].endswith("(6 entries):")
    assert lines[1:] == ["f0.py", "f1.py", "f2.py", "... and 3 more"]


def test_environment_block_is_system(tmp_path: Path) -> None:
    block = EnvironmentContext()(ContextRequest(workspace=tmp_path))
    assert block.kind is ContextKind.SYSTEM
    assert f"Working directory: {tmp_path}" in block.body


@pytest.mark.anyio
async def test_assembler_routes_by_kind_and_skips_failures() -> None:
    def broken(request: ContextRequest) -> ContextBlock:
        raise OSError("disk on fire")

    async def late(request: ContextRequest) -> list[ContextBlock]:
        return [ContextBlock(ContextKind.ATTACHMENT, "todo", "2 open items")]

    def first(request: ContextRequest) -> list[ContextBlock]:
        return [
            ContextBlock(ContextKind.SYSTEM, "volatile", "changes", cacheable=False),
            ContextBlock(ContextKind.SYSTEM, "rules", "be brief"),
            ContextBlock(ContextKind.USER_PREPEND, "note", "read me first"),
        ]

    assembled = await ContextAssembler([late, broken, first]).assemble(ContextRequest())
    assert assembled.system == "# rules\nbe brief\n\n# volatile\nchanges"
    assert assembled.reminder == (
        "<system-reminder>\n# note\nread me first\n\n# todo\n2 open items\n</system-reminder>"
    )
    assert len(assembled.skipped) == 1 and "disk on fire" in assembled.skipped[0]
    empty = await ContextAssembler().assemble(ContextRequest())
    assert (empty.system, empty.reminder) == ("", None)


@pytest.mark.anyio
async def test_context_reaches_the_request(tmp_path: Path) -> None:
    make_repo(tmp_path, "ref: refs/heads/main", {"refs/heads/main": SHA})

    def broken(request: ContextRequest) -> None:
        raise RuntimeError("nope")

    model = scripted(say("hello"))
    agent = Agent(
        model,
        system="You are terse.",
        config=config(
            workspace=tmp_path,
            context_providers=[EnvironmentContext(), GitContext(), broken],
        ),
    )
    result, events = await run_collect(agent, "hi")
    assert result.completion_reason is CompletionReason.COMPLETED
    request = model.requests[0]
    assert request.system is not None
    assert request.system.startswith(
        "You are terse.\n\n# environment\nWorking directory:"
    )
    first = request.messages[0]
    assert first.role == "user"
    reminder, prompt = first.blocks
    assert isinstance(reminder, Text) and "Git branch: main at 0123456" in reminder.text
    assert prompt == Text("hi")
    assert any(isinstance(e, Warning) and "nope" in e.message for e in events)


NEW_SHA = "abcdef0123456789abcdef0123456789abcdef01"


class Counting:
    """A refreshed provider whose block never changes; counts its evaluations."""

    kind = ContextKind.ATTACHMENT

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: ContextRequest) -> ContextBlock:
        self.calls += 1
        return ContextBlock(self.kind, "todo", "2 open items")


def _reminders(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages if m.text.startswith("<system-reminder>")]


@pytest.mark.anyio
async def test_a_commit_by_a_tool_reaches_the_next_request_as_a_reminder(
    tmp_path: Path,
) -> None:
    git = make_repo(tmp_path, "ref: refs/heads/main", {"refs/heads/main": SHA})

    @tool
    def commit(message: str) -> str:
        """Commit (moves the branch, as `git commit` would)."""
        (git / "refs" / "heads" / "main").write_text(NEW_SHA + "\n")
        return "committed"

    once = Counting()
    once.kind = ContextKind.SYSTEM  # declared SYSTEM: runs once per run
    todo = Counting()
    model = scripted(
        use(call("c", "commit", message="fix")),
        use(call("a", "add", a=1, b=2)),  # nothing changes during this batch
        say("done"),
    )
    agent = Agent(
        model,
        [commit, add],
        system="Be terse.",
        config=config(workspace=tmp_path, context_providers=[GitContext(), todo, once]),
    )
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    first, second, third = model.requests
    assert "Git branch: main at 0123456" in first.messages[0].text
    assert "# todo\n2 open items" in first.messages[0].text
    # After the commit: one reminder, holding only the block that changed.
    assert len(second.messages) == 4
    assert second.messages[-1] == Message(
        "user",
        "<system-reminder>\n# git\nGit branch: main at abcdef0\n</system-reminder>",
    )
    # Nothing changed: nothing injected, the earlier prompt is a byte-identical prefix.
    assert third.messages[: len(second.messages)] == second.messages
    assert len(third.messages) == len(second.messages) + 2
    assert third.messages[-1].tool_results[0].text == "3"
    assert _reminders(third.messages[1:]) == [second.messages[-1].text]
    assert todo.calls == 3 and once.calls == 1  # refreshed before each later call
    assert first.system == second.system == third.system
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert not [w for w in warnings if "context provider" in w]
    assert_provider_valid(result.messages)
    assert transcript_problems(result.messages) == []


@pytest.mark.anyio
async def test_a_failing_refreshed_provider_is_a_warning_not_a_failure(
    tmp_path: Path,
) -> None:
    state = {"calls": 0}

    def flaky(request: ContextRequest) -> ContextBlock:
        state["calls"] += 1
        if state["calls"] >= 2:
            raise OSError("disk on fire")
        return ContextBlock(ContextKind.ATTACHMENT, "flaky", "fine")

    flaky.kind = ContextKind.ATTACHMENT  # type: ignore[attr-defined]
    model = scripted(
        use(call("a", "add", a=1, b=1)),
        use(call("b", "add", a=2, b=2)),
        say("done"),
    )
    agent = Agent(model, [add], config=config(context_providers=[flaky]))
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    warnings = [e.message for e in events if isinstance(e, Warning)]
    failures = [w for w in warnings if "disk on fire" in w]
    assert len(failures) == 1  # said once while it keeps failing the same way
    assert "context provider flaky failed" in failures[0]
    assert state["calls"] == 3
    assert _reminders(model.requests[2].messages[1:]) == []


@pytest.mark.anyio
async def test_refresh_sends_only_what_changed_and_everything_after_forget() -> None:
    todo = Counting()
    assembler = ContextAssembler([todo, EnvironmentContext()])
    assert refreshes(todo) and not refreshes(EnvironmentContext())
    assert not refreshes(lambda request: None)  # undeclared: once per run
    start = await assembler.assemble(ContextRequest())
    assert start.reminder is not None and "# environment" in start.system
    unchanged = await assembler.refresh(ContextRequest())
    assert (unchanged.system, unchanged.reminder, unchanged.skipped) == ("", None, ())
    assembler.forget()
    again = await assembler.refresh(ContextRequest())
    assert (
        again.reminder == "<system-reminder>\n# todo\n2 open items\n</system-reminder>"
    )
    assert todo.calls == 3
