"""The declaration audit attributes each operation to exactly the call that did it."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from lifecycle_helpers import (
    Events,
    audit_runner,
    call,
    dispatch,
    make_state,
    run_concurrently,
)

from toolweave.events import DeclarationViolation
from toolweave.execution import ToolRunner
from toolweave.tools import Access, Concurrency, ToolContext, ToolRegistry, tool

pytestmark = pytest.mark.anyio


def _write(path: Path, text: str = "x") -> None:
    with open(path, "w") as f:
        f.write(text)


def _reads(base: Path) -> Access:
    return Access(reads=(f"fs:{base}",))


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = (tmp_path / "area").resolve()
    root.mkdir()
    return root


@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_overlapping_calls_only_the_violator_is_reported(
    audit: str, base: Path, tmp_path: Path
) -> None:
    """Both calls are inside at once (rendezvous) and both write; only one may."""
    inside = 0
    both_in = anyio.Event()

    async def rendezvous() -> None:
        nonlocal inside
        inside += 1
        if inside == 2:
            both_in.set()
        await both_in.wait()

    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    async def sneaky() -> str:
        """Writes although it declares only reads."""
        await rendezvous()
        _write(base / "sneaky.txt")
        await anyio.lowlevel.checkpoint()
        return "sneaked"

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda args: Access(writes=(f"fs:{base}/honest.txt",)),
    )
    async def honest() -> str:
        """Writes what it declares."""
        await rendezvous()
        _write(base / "honest.txt")
        await anyio.lowlevel.checkpoint()
        return "honest"

    events = Events()
    runner = audit_runner(tmp_path, [sneaky, honest], audit, events)
    results = await run_concurrently(runner, [call("s", "sneaky"), call("h", "honest")])
    assert both_in.is_set()
    violations = events.of(DeclarationViolation)
    assert [(v.call_id, v.tool) for v in violations] == [("s", "sneaky")]
    assert violations[0].target == f"{base}/sneaky.txt"
    assert results[1].text == "honest" and not results[1].is_error
    assert (base / "honest.txt").exists()
    assert results[0].is_error is (audit == "enforce")
    assert (base / "sneaky.txt").exists() is (audit == "warn")


@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_a_sync_tool_is_followed_into_its_worker_thread(
    audit: str, base: Path, tmp_path: Path
) -> None:
    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    def threaded() -> str:
        """Runs on a worker thread."""
        assert threading.current_thread() is not threading.main_thread()
        _write(base / "t.txt")
        return "ok"

    events = Events()
    runner = audit_runner(tmp_path, [threaded], audit, events)
    result = await runner(call("t", "threaded"))
    [violation] = events.of(DeclarationViolation)
    assert violation.call_id == "t"
    assert violation.source.startswith(__file__ + ":")
    assert result.is_error is (audit == "enforce")


async def test_to_thread_and_child_tasks_inside_a_call_are_attributed(
    base: Path, tmp_path: Path
) -> None:
    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    async def spreads() -> str:
        """Writes from a worker thread and from two nested child tasks."""
        await anyio.to_thread.run_sync(_write, base / "from-thread")

        async def grandchild() -> None:
            _write(base / "from-grandchild")

        async def child() -> None:
            async with anyio.create_task_group() as inner:
                inner.start_soon(grandchild)
            _write(base / "from-child")

        async with anyio.create_task_group() as tg:
            tg.start_soon(child)
        return "ok"

    events = Events()
    runner = audit_runner(tmp_path, [spreads], "warn", events)
    await runner(call("x", "spreads"))
    seen = {Path(v.target).name: v.call_id for v in events.of(DeclarationViolation)}
    assert seen == {"from-thread": "x", "from-grandchild": "x", "from-child": "x"}


@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_limit_a_raw_thread_is_out_of_sight(
    audit: str, base: Path, tmp_path: Path
) -> None:
    """A raw threading.Thread starts with an empty context: its writes are not seen."""

    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    def raw() -> str:
        """Writes from a thread it starts itself."""
        worker = threading.Thread(target=_write, args=(base / "raw.txt",))
        worker.start()
        worker.join()
        return "ok"

    events = Events()
    runner = audit_runner(tmp_path, [raw], audit, events)
    result = await runner(call("r", "raw"))
    assert not result.is_error
    assert (base / "raw.txt").exists()
    assert events.of(DeclarationViolation) == []


async def test_limit_what_a_child_process_does_is_out_of_sight(
    base: Path, tmp_path: Path
) -> None:
    """The spawn is checked; the child's own writes are not."""

    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access(reads=("proc:sh",)))
    async def shell() -> str:
        """Runs a child that writes a file."""
        process = await anyio.run_process(["sh", "-c", f"echo hi > {base}/child.txt"])
        return str(process.returncode)

    events = Events()
    runner = audit_runner(tmp_path, [shell], "enforce", events)
    result = await runner(call("p", "shell"))
    assert result.text == "0"
    assert (base / "child.txt").read_text() == "hi\n"
    assert events.of(DeclarationViolation) == []


async def test_a_violation_in_a_batch_never_affects_its_siblings(
    base: Path, tmp_path: Path
) -> None:
    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def bad(ctx: ToolContext) -> str:
        """Writes although it declares nothing."""
        ctx.report_progress("about to write")
        _write(base / "bad.txt")
        return "never"

    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def good(n: int) -> str:
        """Touches nothing."""
        await anyio.lowlevel.checkpoint()
        return f"good {n}"

    events = Events()
    runner = audit_runner(tmp_path, [bad, good], "enforce", events)
    calls = [call("g1", "good", n=1), call("b", "bad"), call("g2", "good", n=2)]
    results = await dispatch(runner, ToolRegistry([bad, good]), calls)
    assert [r.text for r in (results[0], results[2])] == ["good 1", "good 2"]
    assert not results[0].is_error and not results[2].is_error
    assert results[1].is_error and "bad.txt" in results[1].text
    assert not (base / "bad.txt").exists()
    assert [v.call_id for v in events.of(DeclarationViolation)] == ["b"]


async def test_a_swallowed_permission_error_still_fails_the_call(
    base: Path, tmp_path: Path
) -> None:
    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def stubborn() -> str:
        """Catches the refusal and claims success."""
        try:
            _write(base / "s.txt")
        except PermissionError:
            return "fine, really"
        return "wrote"

    events = Events()
    runner = audit_runner(tmp_path, [stubborn], "enforce", events)
    result = await runner(call("s", "stubborn"))
    assert result.is_error
    assert "s.txt" in result.text


async def test_exclusive_creates_and_bytecode_caches_are_private(
    base: Path, tmp_path: Path
) -> None:
    """An atomic write (O_EXCL temp file, then replace) needs only the target declared."""
    import tempfile

    target = base / "t.txt"

    @tool(
        concurrency=Concurrency.SEQUENTIAL,
        access=lambda args: Access(writes=(f"fs:{target}",)),
    )
    def atomic() -> str:
        """Writes a temp file beside the target, then renames it over the target."""
        fd, name = tempfile.mkstemp(dir=base)
        with open(fd, "w") as f:
            f.write("new")
        Path(name).replace(target)
        fd, scratch = tempfile.mkstemp(dir=base)
        Path(scratch).unlink()
        return "ok"

    events = Events()
    runner = audit_runner(tmp_path, [atomic], "enforce", events)
    result = await runner(call("a", "atomic"))
    assert result.text == "ok", result.text
    assert target.read_text() == "new"
    assert events.of(DeclarationViolation) == []


async def test_progress_listeners_run_outside_the_call(
    base: Path, tmp_path: Path
) -> None:
    """A listener's own I/O (the session store, a log file) is not the tool's."""

    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def chatty(ctx: ToolContext) -> str:
        """Reports progress."""
        ctx.report_progress("working")
        return "ok"

    events = Events()

    def listener(event: object) -> None:
        _write(base / "log.txt")
        events(event)  # type: ignore[arg-type]

    runner = ToolRunner(
        ToolRegistry([chatty]),
        state=make_state(tmp_path),
        on_event=listener,
        audit="enforce",
    )
    result = await runner(call("c", "chatty"))
    assert result.text == "ok"
    assert events.of(DeclarationViolation) == []


async def test_enforce_without_a_listener_still_fails_the_call(
    base: Path, tmp_path: Path
) -> None:
    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def writer() -> str:
        """Writes although it declares nothing."""
        _write(base / "w.txt")
        return "wrote"

    runner = ToolRunner(
        ToolRegistry([writer]), state=make_state(tmp_path), audit="enforce"
    )
    result = await runner(call("w", "writer"))
    assert result.is_error and "w.txt" in result.text
    assert not (base / "w.txt").exists()


async def test_makedirs_on_existing_directories_is_no_violation(
    base: Path, tmp_path: Path
) -> None:
    import os

    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    async def ensure() -> str:
        """Makes sure a directory exists (it does)."""
        os.makedirs(base, exist_ok=True)
        return "ok"

    events = Events()
    runner = audit_runner(tmp_path, [ensure], "enforce", events)
    assert (await runner(call("e", "ensure"))).text == "ok"
    assert events.of(DeclarationViolation) == []


@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_a_finalizer_the_garbage_collector_runs_is_not_the_tools(
    audit: str, base: Path, tmp_path: Path
) -> None:
    """GC may run another object's cleanup at any allocation inside a call."""
    import gc
    import weakref

    class Leftover:
        def __del__(self) -> None:
            _write(base / "from-del")

    class Owner:
        pass

    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    async def innocent() -> str:
        """Does nothing itself; two objects are collected while it runs."""
        owner = Owner()
        weakref.finalize(owner, _write, base / "from-finalize")
        leftover = Leftover()
        del owner, leftover
        gc.collect()
        return "ok"

    events = Events()
    runner = audit_runner(tmp_path, [innocent], audit, events)
    assert (await runner(call("i", "innocent"))).text == "ok"
    assert (base / "from-del").exists() and (base / "from-finalize").exists()
    assert events.of(DeclarationViolation) == []


async def test_audited_wraps_a_runner_of_your_own(base: Path, tmp_path: Path) -> None:
    """Scheduler-only users: the Dispatcher with a bare runner, audited."""
    from toolweave.execution import audited
    from toolweave.messages import ToolCall, ToolResult
    from toolweave.scheduling import ConcurrencyConfig, Dispatcher
    from toolweave.tools import ToolContext

    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(base))
    async def sneaky(n: int) -> str:
        """Writes although it declares only reads."""
        _write(base / f"s{n}")
        return "sneaked"

    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def fine() -> str:
        """Touches nothing."""
        return "fine"

    @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def boom() -> str:
        """Fails."""
        raise RuntimeError("its own failure")

    registry = ToolRegistry([sneaky, fine, boom])

    async def bare(call_: ToolCall) -> ToolResult:
        found = registry.get(call_.name)
        assert found is not None
        output = await found.call(found.parse(call_.input), ToolContext(call_))
        return ToolResult(call_.id, str(output))

    assert audited(bare, registry, audit="off") is bare
    events = Events()
    runner = audited(bare, registry, audit="enforce", on_event=events)
    calls = [
        call("a", "sneaky", n=1),
        call("b", "fine"),
        call("c", "missing"),  # unknown: run unaudited (the bare runner fails it)
        call("d", "sneaky", n="not a number"),  # unparsable: run unaudited
    ]
    async with Dispatcher(ConcurrencyConfig()) as dispatcher:
        results = await dispatcher.dispatch(calls, registry, runner)
    assert results[0].is_error and "Blocked by the declaration audit" in results[0].text
    assert results[1].text == "fine"
    assert results[2].is_error and results[3].is_error
    assert [v.call_id for v in events.of(DeclarationViolation)] == ["a"]
    assert not (base / "s1").exists()
    warn = audited(bare, registry, audit="warn")
    assert (await warn(call("e", "sneaky", n=2))).text == "sneaked"
    assert (base / "s2").exists()
    with pytest.raises(RuntimeError, match="its own failure"):
        await warn(call("f", "boom"))
