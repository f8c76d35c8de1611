"""Task lines, scripted model specs, result records and tool wrapping (no Ray needed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from cluster_support import add, fail, probe

from extras import require_extra
from toolweave import ConfigError, ModelServerError, ToolDefinitionError, ToolError
from toolweave._exceptions import ClusterError
from toolweave.cluster import (
    BatchTask,
    Budget,
    RayTool,
    RecordWriter,
    SessionRecord,
    load_records,
    model_from_spec,
    parse_tasks,
    ray_task_options,
    ray_tools,
    scripted_spec,
)
from toolweave.cluster._pump import Emit, pump
from toolweave.cluster._wire import Chunk, Outcome, portable_error, portable_event
from toolweave.events import CompletionReason, RunFinished, RunStarted, ToolResultReady
from toolweave.messages import Message, StopReason, Text, ToolCall, ToolResult, Usage
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.tools import Access, Concurrency, Interrupt, tool

# -- task lines ------------------------------------------------------------------------


def test_task_lines_parse_with_stable_ids() -> None:
    lines = [
        json.dumps({"id": "a", "prompt": "first", "budget": {"max_iterations": 3}}),
        "",
        json.dumps({"prompt": "no id", "model": "openai:gpt-4.1", "workspace": "/w"}),
        json.dumps({"id": 7, "prompt": "numeric id", "metadata": {"split": "dev"}}),
        json.dumps({"prompt": "no id"}, indent=1).replace("\n", " "),
    ]
    first, second, third, fourth = parse_tasks(lines)
    assert first == BatchTask("a", "first", line=1, budget=Budget(max_iterations=3))
    assert second.task_id.startswith("sha-") and second.line == 3
    assert (second.model, second.workspace) == ("openai:gpt-4.1", "/w")
    assert (third.task_id, third.metadata) == ("7", {"split": "dev"})
    # the same content (whatever its spacing) is the same task; a repeat is numbered
    assert fourth.task_id != second.task_id
    assert [t.error for t in (first, second, third, fourth)] == [None] * 4
    again = parse_tasks([lines[2], lines[2]])
    assert [t.task_id for t in again] == [second.task_id, second.task_id + "#2"]
    assert parse_tasks(lines)[1].task_id == second.task_id  # stable across parses


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps({"id": "x"}), "'prompt' must be a non-empty string"),
        (json.dumps({"prompt": "p", "modle": "x"}), "unknown key(s) ['modle']"),
        (
            json.dumps({"prompt": "p", "budget": {"max_iterations": 0}}),
            "must be positive",
        ),
        (
            json.dumps({"prompt": "p", "budget": {"max_iterations": 1.5}}),
            "must be an integer",
        ),
        (
            json.dumps({"prompt": "p", "budget": {"max_cost_usd": True}}),
            "must be a number",
        ),
        (json.dumps({"prompt": "p", "budget": {"tokens": 3}}), "unknown budget key(s)"),
        (json.dumps({"prompt": "p", "budget": 3}), "budget must be an object"),
        (json.dumps({"prompt": "p", "metadata": []}), "'metadata' must be an object"),
    ],
)
def test_bad_lines_become_invalid_tasks(line: str, problem: str) -> None:
    (task,) = parse_tasks([line])
    assert task.error is not None and problem in task.error
    assert task.error.startswith("line 1")


def test_duplicate_declared_id_is_an_error() -> None:
    first, second = parse_tasks(
        [json.dumps({"id": "a", "prompt": "x"}), json.dumps({"id": "a", "prompt": "y"})]
    )
    assert first.error is None
    assert second.task_id == "a#2" and second.error == "line 2: duplicate id 'a'"


def test_budget_overrides_only_what_is_set() -> None:
    budget = Budget(max_iterations=4, max_wall_clock=2.5)
    assert budget.overrides() == {"max_iterations": 4, "max_wall_clock": 2.5}
    assert Budget().overrides() == {}


# -- scripted model specs ------------------------------------------------------------------


@pytest.mark.anyio
async def test_scripted_spec_round_trips_to_a_scripted_model() -> None:
    spec = scripted_spec(
        [
            {
                "tool_calls": [{"id": "c1", "name": "add", "input": {"a": 1}}],
                "usage": [3, 4],
            },
            {"text": "done", "stop": "max_tokens", "delay": 0.5},
            {"error": "down", "kind": "server"},
        ],
        name="eval",
    )
    model = model_from_spec(spec)
    assert isinstance(model, ScriptedModel) and model.name == "eval"
    request = ModelRequest([Message("user", "go")])
    first = await model.complete(request)
    assert first.content == (ToolCall("c1", "add", {"a": 1}),)
    assert (first.stop_reason, first.usage) == (
        StopReason.TOOL_USE,
        Usage(3, 4, requests=1),
    )
    started = anyio.current_time()
    second = await model.complete(request)
    assert (second.content, second.stop_reason) == (
        (Text("done"),),
        StopReason.MAX_TOKENS,
    )
    assert anyio.current_time() - started >= 0.5
    with pytest.raises(ModelServerError, match="down"):
        await model.complete(request)
    model.assert_complete()


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("scripted:{", "invalid JSON"),
        ("scripted:[]", "non-empty list"),
        ('scripted:[{"txt": "x"}]', "unknown script step key(s) ['txt']"),
        ('scripted:[{"text": "x", "usage": [1]}]', "'usage' must be"),
        ('scripted:[{"text": "x", "stop": "later"}]', "unknown stop reason"),
        ('scripted:[{"error": "x", "kind": "teapot"}]', "unknown error kind"),
        ('scripted:[{"tool_calls": [{"input": {}}]}]', "needs a 'name'"),
        ('scripted:[{"text": "x", "delay": -1}]', "'delay' must be"),
        ("nonsense:model", "unknown model provider"),
    ],
)
def test_bad_model_specs_are_config_errors(spec: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        model_from_spec(spec)


# -- result records ------------------------------------------------------------------------


def test_records_round_trip_and_torn_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.jsonl"
    record = SessionRecord(
        "t1",
        "failed",
        line=3,
        session_id="s1",
        completion_reason="max_iterations",
        output="partial",
        usage=Usage(5, 6, cache_read_tokens=7),
        cost=0.25,
        reason="max_iterations",
        placement="ray",
        metadata={"k": 1},
    )
    with RecordWriter(path) as writer:
        writer.write(record)
    with path.open("a") as handle:
        handle.write('{"task_id": "t2", "status": "compl')  # a crash mid-write
    assert load_records(path) == {"t1": record}
    with RecordWriter(path) as writer:  # the torn line is ended before the next record
        writer.write(SessionRecord("t3", "completed"))
    assert set(load_records(path)) == {"t1", "t3"}
    assert path.read_text().count("\n") == 3
    assert load_records(tmp_path / "missing.jsonl") == {}


def test_a_later_record_of_a_task_wins(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as writer:
        writer.write(SessionRecord("t", "crashed", reason="first"))
        writer.write(SessionRecord("t", "completed"))
    assert load_records(path)["t"].ok
    path.write_text(json.dumps({"task_id": "t", "status": "weird"}) + "\n")
    assert load_records(path) == {}


# -- tools placed on Ray -----------------------------------------------------------------


def test_ray_tools_wraps_only_ray_placed_tools() -> None:
    local, remote = ray_tools([add, probe], options={"max_retries": 0})
    assert local is add
    assert isinstance(remote, RayTool) and remote.inner is probe
    assert ray_tools([remote]) == [remote]  # already wrapped
    assert remote.task_options == {
        "num_cpus": 0.25,
        "max_retries": 0,
    }
    # every declaration is the inner tool's
    args = remote.parse({"tag": "t", "rendezvous": "r"})
    assert args == probe.parse({"tag": "t", "rendezvous": "r"})
    assert remote.concurrency_for(args) is Concurrency.SAFE
    assert remote.access_for(args) == Access()
    assert remote.interrupt is Interrupt.CANCEL
    assert remote.anthropic_spec() == probe.anthropic_spec()
    assert (remote.placement, dict(remote.resources)) == ("ray", {"num_cpus": 0.25})


def test_resources_map_to_ray_options() -> None:
    options = ray_task_options(
        {"num_cpus": 2, "num_gpus": 1, "memory": 1e9, "licence": 1}, {"max_retries": 0}
    )
    assert options == {
        "num_cpus": 2,
        "num_gpus": 1,
        "memory": 1e9,
        "resources": {"licence": 1.0},
        "max_retries": 0,
    }
    with pytest.raises(ConfigError, match="must be a number >= 0"):
        ray_task_options({"num_cpus": -1})
    with pytest.raises(ConfigError, match="must be a number >= 0"):
        ray_task_options({"num_cpus": "two"})  # type: ignore[dict-item]


def test_placement_is_validated() -> None:
    with pytest.raises(ToolDefinitionError, match="placement"):

        @tool(placement="gpu-farm")
        def nowhere() -> None:
            """Never built."""

    assert (fail.placement, fail.resources) == ("ray", {})
    assert (add.placement, add.resources) == ("local", {})

    @tool
    def elsewhere() -> None:
        """Declared somewhere unknown after the fact."""

    elsewhere.placement = "moon"
    with pytest.raises(ConfigError, match="placement must be"):
        ray_tools([elsewhere])


def test_importing_toolweave_never_imports_ray_and_remote_work_needs_ray() -> None:
    require_extra("ray")  # without it, tests/test_missing_extras.py has the row
    code = (
        "import sys, anyio, toolweave, toolweave.cluster\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
        "from toolweave.cluster import RayTool\n"
        "from toolweave.tools import tool, ToolContext\n"
        "from toolweave.messages import ToolCall\n"
        "@tool(placement='ray')\n"
        "def f() -> int:\n"
        "    '''F.'''\n"
        "    return 1\n"
        "try:\n"
        "    anyio.run(RayTool(f).call, {}, ToolContext(ToolCall('c', 'f', {})))\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("ClusterError Ray is not initialised"), done.stderr


# -- what travels between worker and driver ------------------------------------------------


def test_pump_streams_items_then_one_outcome() -> None:
    async def work(emit: Emit) -> str:
        for n in range(3):
            emit(n)
        return "value"

    async def broken(emit: Emit) -> None:
        emit("first")
        raise ValueError("bad")

    async def exits(emit: Emit) -> None:
        raise SystemExit(3)

    *chunks, last = list(pump(work))
    assert [i for c in chunks for i in c.items] == [0, 1, 2]  # type: ignore[union-attr]
    assert last == Outcome(value="value")
    items = list(pump(broken))
    assert isinstance(items[-1], Outcome) and isinstance(items[-1].error, ValueError)
    assert items[0] == Chunk(("first",))
    (stopped,) = list(pump(exits))
    assert isinstance(stopped, Outcome) and isinstance(stopped.error, ClusterError)


def test_unpicklable_errors_keep_their_words() -> None:
    class Local(Exception):  # a local class cannot be pickled by reference
        pass

    error = portable_error(Local("lost detail"))
    assert isinstance(error, ToolError) and str(error) == "Local: lost detail"
    kept = ValueError("fine")
    assert portable_error(kept) is kept


@pytest.mark.anyio
async def test_portable_events_drop_worker_only_parts() -> None:
    call = ToolCall("c", "t", {})
    result = ToolResult("c", "out", context_modifier=lambda: None)
    ready = portable_event(ToolResultReady(call, result))
    assert isinstance(ready, ToolResultReady)
    assert ready.result.context_modifier is None and ready.result == result
    finished = RunFinished(
        CompletionReason.COMPLETED,
        "ok",
        messages=(Message("assistant", (call,)), Message("user", (result,))),
        extra={"iterations": 2, "handle": object()},
    )
    plain = portable_event(finished)
    assert isinstance(plain, RunFinished)
    assert plain.extra == {"iterations": 2}
    assert plain.messages[1].tool_results[0].context_modifier is None
    assert plain.messages == finished.messages
    started = RunStarted("r", "p")
    assert portable_event(started) is started
