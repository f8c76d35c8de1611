"""Faults on a real multi-node Ray cluster: a killed node, a frozen node, no node at all.

One `ray.cluster_utils.Cluster` per module (a head node with the ``head``
resource); each test adds the small worker nodes it breaks, pinned work to them
by custom resources, and removes them (and every process it froze) in a
``finally``. The Liveness of these tests is short (silence 4 s, unschedulable
1 s) so a frozen node is ended by its silence long before Ray would declare it
dead (~65 s); every wait is bounded by ``fail_after``.

asyncio only, as in test_cluster_ray.py: Ray works in real time in other
processes, which trio's virtual test clock would run past.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from cluster_support import (
    Witness,
    effect_lines,
    fault_tools,
    recovery_steps,
    step_calls,
    step_text,
    task_line,
)
from test_cluster_batch_recovery import CLI, _expected, _kill_when, _lost_answer

from extras import require_extra
from toolweave.cluster import Liveness, load_records, run_batch
from toolweave.sessions import CallState, SQLiteSessionStore

pytestmark = [pytest.mark.ray, pytest.mark.anyio]

HERE = Path(__file__).resolve().parent
LIVENESS = Liveness(silence=4.0, unschedulable=1.0, poll=0.1)
ON_HEAD = {"num_cpus": 0, "head": 1}


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only (see the module docstring)."""
    return "asyncio"


class Nodes:
    """The module's cluster: add a worker node, kill it, freeze it."""

    def __init__(self, cluster: Any, ray: Any) -> None:
        self.cluster = cluster
        self.ray = ray

    def add(self, **resources: float) -> Any:
        return self.cluster.add_node(num_cpus=1, resources=resources, wait=True)

    def remove(self, node: Any) -> None:
        with contextlib.suppress(Exception):
            self.cluster.remove_node(node, allow_graceful=False)

    def witness(self) -> tuple[str, Any]:
        name = f"witness-{uuid.uuid4().hex[:8]}"
        actor = self.ray.remote(Witness).options(name=name, resources={"head": 1})
        return name, actor.remote()

    async def note(self, actor: Any, tag: str) -> dict[str, Any]:
        with anyio.fail_after(60):
            return await anyio.to_thread.run_sync(
                self.ray.get, actor.wait_for.remote(tag)
            )


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    """A head node (2 CPUs, ``head``) whose workers import `cluster_support`."""
    require_extra("ray")
    temp = tempfile.mkdtemp(prefix="r-", dir="/tmp")  # short: Ray's socket paths
    # the Cluster records its address in $RAY_TMPDIR/ray, not in the host's /tmp/ray
    (Path(temp) / "ray").mkdir()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RAY_AUTH_MODE", "disabled")
            patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
            patch.setenv("RAY_TMPDIR", temp)
            path = os.pathsep.join(
                filter(None, [str(HERE), os.environ.get("PYTHONPATH")])
            )
            patch.setenv("PYTHONPATH", path)  # every raylet's workers inherit it
            yield from _cluster(temp)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _cluster(temp: str) -> Iterator[Nodes]:
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():  # pragma: no cover - someone else's cluster
        pytest.fail("Ray was already initialised before the cluster fixture")
    cluster: Any = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "resources": {"head": 100},
            "include_dashboard": False,
            "temp_dir": str(Path(temp) / "ray"),
        },
        shutdown_at_exit=True,
    )
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        yield Nodes(cluster, ray)
    finally:
        ray.shutdown()
        cluster.shutdown()


def _node_of(nodes: Nodes, node_id: str) -> Any:
    (node,) = [n for n in nodes.cluster.worker_nodes if n.node_id == node_id]
    return node


def _process_tree(root: int) -> list[int]:
    """`root` and every descendant (from /proc), parents first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def _raylet_pid(node: Any) -> int:
    from ray._private import ray_constants

    (info,) = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET]
    pid: int = info.process.pid
    return pid


@contextlib.contextmanager
def _frozen(node: Any) -> Iterator[list[int]]:
    """SIGSTOP the node's raylet and every process under it; SIGKILL them after."""
    tree = _process_tree(_raylet_pid(node))
    try:
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        yield tree
    finally:
        for pid in tree:  # a stopped process still takes SIGKILL
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _tasks(tmp_path: Path, *lines: str) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    return tasks


async def _batch_then(
    done: anyio.Event, tmp_path: Path, tasks: Path, **options: Any
) -> None:
    """Run a Ray batch of the fault tools into ``out.jsonl``, then set `done`."""
    await run_batch(
        tasks,
        output=tmp_path / "out.jsonl",
        tools=fault_tools,
        ray=True,
        liveness=LIVENESS,
        **options,
    )
    done.set()


def _answers(store: SQLiteSessionStore, session_id: str) -> dict[str, list[str]]:
    """Every tool result in the stored transcript, by call id."""
    found: dict[str, list[str]] = {}
    for message in store.messages(session_id):
        for result in message.tool_results:
            found.setdefault(result.call_id, []).append(result.text)
    return found


# -- (a) a node killed mid-call --------------------------------------------------------


async def test_a_killed_node_fails_its_remote_call_and_the_session_goes_on(
    nodes: Nodes, tmp_path: Path
) -> None:
    witness, actor = nodes.witness()
    doomed = nodes.add(doomed=1)
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    steps = [
        step_calls(
            ("d", "doomed_wait", {"tag": "d", "witness": witness}),
            ("a", "add", {"a": 1, "b": 2}),
        ),
        step_text("carried on"),
    ]
    try:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            tg.start_soon(
                partial(
                    _batch_then,
                    done,
                    tmp_path,
                    _tasks(tmp_path, task_line("k", steps)),
                    store=store,
                    session_resources=ON_HEAD,
                )
            )
            note = await nodes.note(actor, "d")
            assert note["node_id"] == doomed.node_id  # it really ran there
            nodes.remove(doomed)  # SIGKILL: raylet, store, workers
            with anyio.fail_after(30):  # Ray's own detection alone takes ~15-65 s
                await done.wait()
        (record,) = load_records(tmp_path / "out.jsonl").values()
        assert (record.status, record.output) == ("completed", "carried on")
        sid = record.session_id or ""
        answers = _answers(store, sid)
        assert sorted(answers) == ["a", "d"]  # one result per call
        assert all(len(texts) == 1 for texts in answers.values())
        assert answers["a"] == ["3"]
        (lost,) = answers["d"]
        assert "effects unknown" in lost and "Not run" not in lost
        calls = {c.call.id: c for c in store.calls(sid)}
        assert calls["d"].result is not None and calls["d"].result.is_error
        assert calls["d"].state is CallState.FINISHED
        assert store.list_sessions()[0].status == "completed"
    finally:
        nodes.remove(doomed)
        store.close()


async def test_a_killed_node_ends_its_session_and_the_queue_behind_is_not_run(
    nodes: Nodes, tmp_path: Path
) -> None:
    """The session on the killed node ends 'effects unknown'; the next one,
    needing the resource that died with it, ends at once as never started."""
    witness, actor = nodes.witness()
    doomed = nodes.add(doomed=1)
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    first = [step_calls(("w", "local_wait", {"tag": "w", "witness": witness}))]
    second = [step_calls(("a", "add", {"a": 1, "b": 2})), step_text("never")]
    tasks = _tasks(tmp_path, task_line("on-node", first), task_line("queued", second))
    try:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            tg.start_soon(
                partial(
                    _batch_then,
                    done,
                    tmp_path,
                    tasks,
                    store=store,
                    max_sessions=1,
                    session_resources={"num_cpus": 0, "doomed": 1},
                )
            )
            note = await nodes.note(actor, "w")
            assert note["node_id"] == doomed.node_id
            nodes.remove(doomed)
            with anyio.fail_after(30):
                await done.wait()
        records = load_records(tmp_path / "out.jsonl")
        assert sorted(records) == ["on-node", "queued"]
        lost, queued = records["on-node"], records["queued"]
        assert lost.status == "crashed" and "effects unknown" in lost.reason
        assert queued.status == "crashed" and "never started" in queued.reason
        assert "effects unknown" not in queued.reason
        sessions = {s.id: s for s in store.list_sessions()}
        assert len(sessions) == 2
        assert sessions[lost.session_id or ""].status == "abandoned"
        assert store.messages(queued.session_id or "") == []  # nothing of it ran
    finally:
        nodes.remove(doomed)
        store.close()


# -- (b) a node frozen with SIGSTOP ------------------------------------------------------


async def test_a_frozen_node_ends_its_session_by_silence_and_the_queue_moves(
    nodes: Nodes, tmp_path: Path
) -> None:
    """Two nodes can host sessions, one at a time runs; the first one's node is
    frozen: its session ends by heartbeat silence (seconds, not Ray's ~65 s), the
    second session then starts on the other node and completes."""
    witness, actor = nodes.witness()
    shelters = [nodes.add(shelter=1), nodes.add(shelter=1)]
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    first = [step_calls(("w", "local_wait", {"tag": "w", "witness": witness}))]
    second = [step_calls(("a", "add", {"a": 2, "b": 2})), step_text("moved on")]
    tasks = _tasks(tmp_path, task_line("frozen", first), task_line("next", second))
    try:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            tg.start_soon(
                partial(
                    _batch_then,
                    done,
                    tmp_path,
                    tasks,
                    store=store,
                    max_sessions=1,
                    session_resources={"num_cpus": 0, "shelter": 1},
                )
            )
            note = await nodes.note(actor, "w")
            with _frozen(_node_of(nodes, note["node_id"])) as tree:
                assert note["pid"] in tree  # the session's worker is frozen too
                with anyio.fail_after(30):
                    await done.wait()
        records = load_records(tmp_path / "out.jsonl")
        frozen, moved = records["frozen"], records["next"]
        assert frozen.status == "crashed"
        assert "no heartbeat" in frozen.reason and "effects unknown" in frozen.reason
        assert (moved.status, moved.output) == ("completed", "moved on")
        sessions = {s.id: s for s in store.list_sessions()}
        assert sessions[frozen.session_id or ""].status == "abandoned"
        assert sessions[moved.session_id or ""].status == "completed"
    finally:
        for node in shelters:
            nodes.remove(node)
        store.close()


# -- (c) a call no node can host ---------------------------------------------------------


async def test_an_unschedulable_call_fails_fast_as_not_run(
    nodes: Nodes, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    steps = [
        step_calls(
            ("n", "nowhere", {"path": str(effects)}),
            ("a", "add", {"a": 1, "b": 1}),
        ),
        step_text("done"),
    ]
    try:
        with anyio.fail_after(30):  # the tool's own timeout is minutes
            stats = await run_batch(
                _tasks(tmp_path, task_line("u", steps)),
                output=tmp_path / "out.jsonl",
                tools=fault_tools,
                store=store,
                ray=True,
                session_resources=ON_HEAD,
                liveness=LIVENESS,
            )
        assert stats.completed == 1
        (record,) = load_records(tmp_path / "out.jsonl").values()
        answers = _answers(store, record.session_id or "")
        (refused,) = answers["n"]
        assert refused.startswith("Not run: the remote call no live node has")
        assert "nowhere=1" in refused and "effects unknown" not in refused
        assert answers["a"] == ["2"]
        assert effect_lines(effects) == []  # it never ran
    finally:
        store.close()


async def test_an_unschedulable_session_ends_as_never_started(
    nodes: Nodes, tmp_path: Path
) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    steps = [step_calls(("a", "add", {"a": 1, "b": 1})), step_text("never")]
    try:
        with anyio.fail_after(30):
            stats = await run_batch(
                _tasks(tmp_path, task_line("s", steps)),
                output=tmp_path / "out.jsonl",
                tools=fault_tools,
                store=store,
                ray=True,
                session_resources={"num_cpus": 0, "nowhere": 1},
                liveness=LIVENESS,
            )
        assert (stats.completed, stats.failed) == (0, 1)
        (record,) = load_records(tmp_path / "out.jsonl").values()
        assert record.status == "crashed" and "never started" in record.reason
        assert "effects unknown" not in record.reason
        assert store.messages(record.session_id or "") == []
    finally:
        store.close()


# -- (d) idempotency keys on a remote tool -------------------------------------------------


async def test_a_remote_tool_sees_the_stored_calls_idempotency_key(
    nodes: Nodes, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    steps = [
        step_calls(
            ("p", "keyed_effect", {"ledger": str(ledger), "tag": "pay"}),
            ("q", "keyed_effect", {"ledger": str(ledger), "tag": "pay"}),
        ),
        step_calls(("p", "keyed_effect", {"ledger": str(ledger), "tag": "pay"})),
        step_text("paid"),
    ]
    try:
        with anyio.fail_after(60):
            stats = await run_batch(
                _tasks(tmp_path, task_line("i", steps)),
                output=tmp_path / "out.jsonl",
                tools=fault_tools,
                store=store,
                ray=True,
                session_resources=ON_HEAD,
                liveness=LIVENESS,
            )
        assert stats.completed == 1
        (record,) = load_records(tmp_path / "out.jsonl").values()
        sid = record.session_id or ""
        calls = store.calls(sid)
        assert len(calls) == 3
        expected = [f"{sid}/{c.run}/{c.call.ref}/{c.attempt}" for c in calls]
        assert len(set(expected)) == 3  # the model's repeat of `p` is a new call
        texts = [c.result.text for c in calls if c.result is not None]
        assert texts == [f"did {key}" for key in expected]  # the remote tool's key
        ledger_keys = [line.split(" ", 1)[0] for line in effect_lines(ledger)]
        assert sorted(ledger_keys) == sorted(expected)  # one effect per call
    finally:
        store.close()


# -- (e) the driver killed, the batch re-run --------------------------------------------


def _driver(tmp_path: Path, address: str) -> list[str]:
    return [
        *CLI,
        "batch",
        str(tmp_path / "tasks.jsonl"),
        "--store",
        str(tmp_path / "sessions.db"),
        "--tools",
        "cluster_support:recovery_tools",
        "--no-progress",
        "--ray-address",
        address,
    ]


def _effects_stored(db: Path, effects: Path, count: int) -> bool:
    """Every stall started and every effect's result is in the driver's store."""
    if len(effect_lines(effects)) < 2 * count or not db.exists():
        return False
    store = SQLiteSessionStore(db, read_only=True)
    try:
        finished = [
            c
            for s in store.list_sessions()
            for c in store.calls(s.id)
            if c.call.name == "effect" and c.result is not None
        ]
    finally:
        store.close()
    return len(finished) == count


def test_a_sigkilled_ray_driver_rerun_resumes_every_session(
    nodes: Nodes, tmp_path: Path
) -> None:
    """`toolweave batch --ray-address` SIGKILLed with every session in `stall`, re-run.

    The cluster outlives its driver; Ray ends the dead driver's tasks. The
    re-run resumes each session from the store: every side effect (counted in
    a file) happened once, one session per task, the cut call answered
    "outcome unknown" (a remote session is recorded after the fact, so no call
    is known not to have started), never run again.
    """
    effects = tmp_path / "effects.txt"
    ids = ["r0", "r1"]
    lines = [task_line(i, recovery_steps(i, str(effects))) for i in ids]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp_path / "sessions.db"
    command = _driver(tmp_path, nodes.cluster.address)
    env = {**os.environ}
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _kill_when(proc, lambda: _effects_stored(db, effects, len(ids)), timeout=90)
    try:
        rerun = subprocess.run(
            command,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        (tmp_path / "effects.txt.release").touch()  # a stall still alive ends
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(effect_lines(effects)) == _expected(ids)  # nothing ran twice
    records = load_records(tmp_path / "tasks.results.jsonl")
    assert sorted(records) == ids
    assert all(r.ok and r.placement == "ray" for r in records.values())
    store = SQLiteSessionStore(db, read_only=True)
    try:
        assert len(store.list_sessions()) == 2  # one per task
        for record in records.values():
            sid = record.session_id or ""
            assert _lost_answer(store, sid).startswith("Interrupted, outcome unknown")
            assert [r.run for r in store.runs(sid)] == [1, 2]
            effect_calls = [c for c in store.calls(sid) if c.call.name == "effect"]
            assert [c.run for c in effect_calls] == [1]  # kept, not run in run 2
            assert store.lease(sid) is None
    finally:
        store.close()


# -- the command line: a private cluster unless an address is given ------------------------


def _cli_batch(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    steps = [step_calls(("e", "env_var", {"name": "TW_MARK"})), step_text("done")]
    (tmp_path / "tasks.jsonl").write_text(task_line("c", steps) + "\n")
    command = [
        *CLI,
        "batch",
        str(tmp_path / "tasks.jsonl"),
        "--store",
        str(tmp_path / "sessions.db"),
        "--tools",
        "cluster_support:fault_tools",
        "--no-progress",
        "--session-resources",
        json.dumps({"head": 1}),  # only the module's cluster has it
        *extra,
    ]
    return subprocess.run(
        command,
        env={**os.environ},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _stored_answer(tmp_path: Path) -> str:
    store = SQLiteSessionStore(tmp_path / "sessions.db", read_only=True)
    try:
        (session,) = store.list_sessions()
        (answer,) = _answers(store, session.id).get("e", ["<no answer>"])
        return answer
    finally:
        store.close()


def test_batch_ray_starts_a_private_cluster_not_the_one_on_the_host(
    nodes: Nodes, tmp_path: Path
) -> None:
    """With the module's cluster recorded on this host (where a plain
    ``ray.init()`` joins it), ``--ray`` still starts its own: there no node has
    the ``head`` resource, so the session never starts."""
    done = _cli_batch(tmp_path, "--ray")
    assert done.returncode == 0, done.stderr
    assert "Ray: starting a private local cluster" in done.stderr
    (record,) = load_records(tmp_path / "tasks.results.jsonl").values()
    assert record.status == "crashed" and "never started" in record.reason
    assert "head=1" in record.reason


def test_batch_ray_address_joins_with_runtime_env_and_session_resources(
    nodes: Nodes, tmp_path: Path
) -> None:
    runtime_env = tmp_path / "runtime_env.json"
    runtime_env.write_text(json.dumps({"env_vars": {"TW_MARK": "from a file"}}))
    address = nodes.cluster.address
    done = _cli_batch(
        tmp_path, "--ray-address", address, "--runtime-env", str(runtime_env)
    )
    assert done.returncode == 0, done.stderr
    assert f"Ray: joining the cluster at {address}" in done.stderr
    (record,) = load_records(tmp_path / "tasks.results.jsonl").values()
    assert (record.status, record.placement) == ("completed", "ray")
    assert _stored_answer(tmp_path) == "from a file"  # the job's runtime_env


async def test_a_frozen_node_fails_its_remote_call_by_silence_and_the_session_goes_on(
    nodes: Nodes, tmp_path: Path
) -> None:
    witness, actor = nodes.witness()
    doomed = nodes.add(doomed=1)
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    steps = [
        step_calls(("d", "doomed_wait", {"tag": "d", "witness": witness})),
        step_text("carried on"),
    ]
    try:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            tg.start_soon(
                partial(
                    _batch_then,
                    done,
                    tmp_path,
                    _tasks(tmp_path, task_line("f", steps)),
                    store=store,
                    session_resources=ON_HEAD,
                )
            )
            note = await nodes.note(actor, "d")
            with _frozen(doomed) as tree:
                assert note["pid"] in tree
                with anyio.fail_after(30):
                    await done.wait()
        (record,) = load_records(tmp_path / "out.jsonl").values()
        assert (record.status, record.output) == ("completed", "carried on")
        (lost,) = _answers(store, record.session_id or "")["d"]
        assert "no heartbeat for 4 s" in lost and "effects unknown" in lost
    finally:
        nodes.remove(doomed)
        store.close()


async def test_a_session_past_its_deadline_is_ended_by_the_driver(
    nodes: Nodes, tmp_path: Path
) -> None:
    """A live, heartbeating session whose loop cannot end itself (a tool blocks
    its event loop, so its own wall-clock budget cannot act) ends at the
    driver's deadline, max_wall_clock + silence, honestly."""
    witness, actor = nodes.witness()
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    steps = [step_calls(("w", "loop_blocker", {"tag": "w", "witness": witness}))]
    line = task_line("late", steps, budget={"max_wall_clock": 1})
    try:
        with anyio.fail_after(40):
            await run_batch(
                _tasks(tmp_path, line),
                output=tmp_path / "out.jsonl",
                tools=fault_tools,
                store=store,
                ray=True,
                session_resources=ON_HEAD,
                liveness=LIVENESS,
            )
        await nodes.note(actor, "w")  # the tool did start
        (record,) = load_records(tmp_path / "out.jsonl").values()
        assert record.status == "crashed"
        assert "its deadline passed while it ran; effects unknown" in record.reason
        (session,) = store.list_sessions()
        assert session.status == "abandoned"
    finally:
        store.close()
