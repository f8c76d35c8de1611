"""Helpers for the cluster tests: scripted task lines, tools, and a Ray rendezvous actor.

This module is importable inside Ray workers (the Ray fixture puts this
directory on the workers' PYTHONPATH), so tools defined here pickle by reference.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

import anyio

from toolweave import ToolInputError
from toolweave.cluster import BatchTask, scripted_spec
from toolweave.tools import Access, Concurrency, Interrupt, Tool, ToolContext, tool


def step_calls(
    *calls: tuple[str, str, dict[str, Any]], usage: tuple[int, int] = (10, 5)
) -> dict[str, Any]:
    """A scripted step that calls tools: (id, name, input) triples."""
    return {
        "tool_calls": [{"id": i, "name": n, "input": a} for i, n, a in calls],
        "usage": list(usage),
    }


def step_text(text: str, usage: tuple[int, int] = (20, 3)) -> dict[str, Any]:
    """A scripted final answer."""
    return {"text": text, "usage": list(usage)}


def task_line(task_id: str, steps: Sequence[dict[str, Any]], **extra: Any) -> str:
    """One JSONL task line with a scripted model."""
    model = scripted_spec(list(steps))
    return json.dumps(
        {"id": task_id, "prompt": f"prompt of {task_id}", "model": model, **extra}
    )


def ok_steps(n: int) -> list[dict[str, Any]]:
    """Two parallel local tool calls, then an answer naming `n`."""
    return [
        step_calls(("a", "add", {"a": n, "b": 1}), ("w", "whoami", {})),
        step_text(f"answer {n}"),
    ]


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
def whoami() -> str:
    """The process id the tool ran in."""
    return str(os.getpid())


@tool
def crash() -> str:
    """Kill the process the tool runs in (a crashed worker)."""
    os._exit(3)


def batch_tools(task: BatchTask) -> list[Tool]:
    """Tools factory of the batch tests (importable by Ray workers)."""
    del task
    return [add, whoami, crash]


# -- remote tools and their rendezvous --------------------------------------------------


class Rendezvous:
    """A Ray actor (async: its methods interleave) that remote tools report to.

    `arrive(tag)` blocks until `group` callers are inside at once, so a wave of
    tool calls can only pass if they really overlap; `peak` is the most ever
    inside together.
    """

    def __init__(self, group: int) -> None:
        self.group = group
        self.inside = 0
        self.peak = 0
        self.arrived = 0
        self.pids: dict[str, int] = {}
        self.finished: list[str] = []
        self._waves: dict[int, anyio.Event] = {}
        self._pid_seen = anyio.Event()

    async def arrive(self, tag: str, pid: int) -> None:
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        self.pids[tag] = pid
        self._pid_seen.set()
        wave = self.arrived // self.group
        self.arrived += 1
        event = self._waves.setdefault(wave, anyio.Event())
        if self.arrived % self.group == 0:
            event.set()
        await event.wait()

    async def leave(self, tag: str) -> None:
        self.inside -= 1
        self.finished.append(tag)

    async def wait_pid(self) -> dict[str, int]:
        await self._pid_seen.wait()
        return dict(self.pids)

    async def state(self) -> dict[str, Any]:
        return {
            "peak": self.peak,
            "pids": dict(self.pids),
            "finished": list(self.finished),
        }


def _actor(name: str) -> Any:
    import ray

    return ray.get_actor(name)


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda args: Access(),
    interrupt=Interrupt.CANCEL,
    placement="ray",
    resources={"num_cpus": 0.25},
)
def probe(tag: str, rendezvous: str, ctx: ToolContext) -> str:
    """Meet the other calls of a wave at the rendezvous actor; return tag:pid."""
    import ray

    actor = _actor(rendezvous)
    ctx.report_progress(f"{tag} started", 0.0)
    ray.get(actor.arrive.remote(tag, os.getpid()))
    ray.get(actor.leave.remote(tag))
    return f"{tag}:{os.getpid()}"


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda args: Access(),
    interrupt=Interrupt.CANCEL,
    placement="ray",
    resources={"num_cpus": 0.25},
)
def hang(tag: str, rendezvous: str) -> str:
    """Report this process to the actor, then hang (until cancelled)."""
    import ray

    actor = _actor(rendezvous)
    ray.get(actor.arrive.remote(tag, os.getpid()))
    threading.Event().wait(300)  # until the task is cancelled
    ray.get(actor.leave.remote(tag))
    return "finished"


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access(), placement="ray")
def fail(message: str) -> str:
    """Raise a ValueError remotely."""
    raise ValueError(message)


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access(), placement="ray")
def refuse(path: str) -> str:
    """Fail the way a tool tells the model what was wrong (a ToolError)."""
    raise ToolInputError(f"no such file: {path}")


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda args: Access(),
    placement="ray",
    resources={"num_cpus": 0.25},
)
def remote_crash() -> str:
    """Kill the Ray worker running the call."""
    os._exit(7)


BIG_OUTPUT = "".join(f"row {i:06d} " + "z" * 40 + "\n" for i in range(3_000))
"""About 150 KB: over every default result threshold."""


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
def dump() -> str:
    """Print about 150 KB."""
    return BIG_OUTPUT


def dump_tools(task: BatchTask) -> list[Tool]:
    """Tools factory with one large-output tool (importable by Ray workers)."""
    del task
    return [dump]


def dump_steps(task_id: str) -> list[dict[str, Any]]:
    """Call `dump`, then answer."""
    return [step_calls((f"{task_id}-d", "dump", {})), step_text(f"{task_id} done")]


# -- recovery: tools whose side effects are counted in a file ---------------------------


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{line}\n")
        handle.flush()
        os.fsync(handle.fileno())


@tool(concurrency=Concurrency.SEQUENTIAL, access=lambda args: Access())
def effect(path: str, tag: str) -> str:
    """Append `tag` to the file at `path` (one line per execution: a side effect)."""
    _append(path, tag)
    return f"done {tag}"


def wait_for_file(path: str, seconds: float = 60.0) -> bool:
    """Block this thread until `path` exists (real time, bounded); whether it does."""
    pause = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if os.path.exists(path):
            return True
        pause.wait(0.02)
    return os.path.exists(path)


@tool(concurrency=Concurrency.SEQUENTIAL, access=lambda args: Access())
def stall(path: str, tag: str) -> str:
    """Append ``<tag> started`` to `path`, then wait until ``<path>.release`` exists.

    Bounded (60 s of real time, on its worker thread: a virtual test clock
    does not shorten it): a test kills the process running it, or releases it.
    """
    _append(path, f"{tag} started")
    released = wait_for_file(path + ".release")
    return f"released {tag}" if released else f"not released {tag}"


def recovery_tools(task: BatchTask) -> list[Tool]:
    """Tools factory of the recovery tests (importable by Ray workers)."""
    del task
    return [effect, stall]


def recovery_steps(task_id: str, effects: str) -> list[dict[str, Any]]:
    """An effect, then a call that stalls, then an answer: what a killed driver cuts."""
    return [
        step_calls(("e", "effect", {"path": effects, "tag": f"{task_id} effect"})),
        step_calls(("s", "stall", {"path": effects, "tag": f"{task_id} stall"})),
        step_text(f"{task_id} done"),
    ]


def effect_lines(path: str | os.PathLike[str]) -> list[str]:
    """The side effects recorded so far, one per line (none if the file is missing)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return []


# -- faults on a multi-node cluster: tools pinned to a node by a custom resource --------


class Witness:
    """A Ray actor (async) where tools note where they run; tests wait for the notes."""

    def __init__(self) -> None:
        self.notes: dict[str, dict[str, Any]] = {}
        self._seen: dict[str, anyio.Event] = {}

    async def note(self, tag: str, info: dict[str, Any]) -> None:
        self.notes[tag] = info
        self._seen.setdefault(tag, anyio.Event()).set()

    async def wait_for(self, tag: str) -> dict[str, Any]:
        await self._seen.setdefault(tag, anyio.Event()).wait()
        return self.notes[tag]


def _note_here(witness: str, tag: str, ctx: ToolContext | None = None) -> None:
    import ray

    info = {
        "node_id": ray.get_runtime_context().get_node_id(),
        "pid": os.getpid(),
        "key": None if ctx is None else ctx.idempotency_key,
    }
    ray.get(_actor(witness).note.remote(tag, info))


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda args: Access(),
    interrupt=Interrupt.CANCEL,
    placement="ray",
    resources={"num_cpus": 0, "doomed": 1},
)
def doomed_wait(tag: str, witness: str, ctx: ToolContext) -> str:
    """Runs on the node with the ``doomed`` resource: note it, then wait (until killed)."""
    _note_here(witness, tag, ctx)
    threading.Event().wait(120)
    return f"{tag} finished"


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
def local_wait(tag: str, witness: str) -> str:
    """Runs inside the session's process: note where, then wait (until killed or frozen)."""
    _note_here(witness, tag)
    threading.Event().wait(120)
    return f"{tag} finished"


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda args: Access(),
    placement="ray",
    resources={"num_cpus": 0, "nowhere": 1},
)
def nowhere(path: str) -> str:
    """Needs a resource no node has; would record that it ran."""
    _append(path, "nowhere ran")
    return "ran"


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda args: Access(),
    placement="ray",
    resources={"num_cpus": 0},
)
def keyed_effect(ledger: str, tag: str, ctx: ToolContext) -> str:
    """A side effect deduplicated by the call's idempotency key (the documented pattern).

    The ledger holds one ``<key> <tag>`` line per effect done; an attempt whose
    key is already there is not done again.
    """
    key = ctx.idempotency_key
    done = {line.split(" ", 1)[0] for line in effect_lines(ledger)}
    if key in done:
        return f"already done {key}"
    _append(ledger, f"{key} {tag}")
    return f"did {key}"


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def loop_blocker(tag: str, witness: str) -> str:
    """Note where, then block the session's event loop itself (it cannot end the run)."""
    _note_here(witness, tag)
    threading.Event().wait(120)  # on the loop itself: the point of this tool
    return f"{tag} finished"


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
def env_var(name: str) -> str:
    """The environment variable `name` where the session runs ('<unset>' if none)."""
    return os.environ.get(name, "<unset>")


def fault_tools(task: BatchTask) -> list[Tool]:
    """Tools factory of the fault tests (importable by Ray workers)."""
    del task
    return [add, doomed_wait, local_wait, loop_blocker, nowhere, keyed_effect, env_var]
