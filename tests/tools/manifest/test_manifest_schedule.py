"""`executionMode` is honoured by every policy and by the streaming seam."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import manifest_probe
import pytest
from manifest_probe import Probe

import toolweave as tw
from toolweave.execution import ExecutionConfig, ToolRunner
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, PolicyName
from toolweave.tools import SessionState
from toolweave.tools.manifest import ManifestTool, load_manifest, load_manifests

pytestmark = pytest.mark.anyio

KEY_SCHEMA = {
    "type": "object",
    "properties": {"key": {"type": "string"}},
    "required": ["key"],
}


def _tool(
    name: str, mode: str, access: dict[str, list[str]] | None
) -> dict[str, object]:
    spec: dict[str, object] = {
        "name": name,
        "description": f"{mode} step",
        "inputSchema": KEY_SCHEMA,
        "entryPoint": "manifest_probe:step",
        "executionMode": mode,
    }
    if access is not None:
        spec["access"] = access
    return spec


@pytest.fixture
def probe() -> Iterator[Probe]:
    manifest_probe.PROBE = Probe()
    yield manifest_probe.PROBE
    manifest_probe.PROBE = Probe()


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    manifest = tmp_path / "tools.json"
    tools = [
        _tool("par_read", "parallel", {"reads": ["k:{key}"]}),
        _tool("seq_write", "sequential", {"writes": ["k:{key}"]}),
        _tool("seq_any", "sequential", None),  # undeclared: a barrier
        _tool("par_any", "parallel", None),  # undeclared: reads everything
    ]
    manifest.write_text(json.dumps({"tools": tools}))
    return manifest


@pytest.fixture
def registry(manifest: Path) -> tw.ToolRegistry:
    # trusted: its parallel tools may start while a response streams
    return tw.ToolRegistry(load_manifest(manifest, trusted=True))


def _runner(registry: tw.ToolRegistry, tmp_path: Path) -> ToolRunner:
    config = ExecutionConfig(default_timeout=None)  # virtual time must not expire
    return ToolRunner(registry, state=SessionState(workspace=tmp_path), config=config)


BATCH = [
    ("par_read", "a"),
    ("par_read", "b"),
    ("seq_write", "c"),
    ("par_read", "d"),
    ("seq_any", "e"),
    ("par_read", "f"),
    ("par_any", "g"),
]
CALLS = [tw.ToolCall(key, name, {"key": key}) for name, key in BATCH]


def _pairs(*groups: str) -> set[frozenset[str]]:
    return {frozenset({x, y}) for g in groups for x in g for y in g if x < y}


# What may overlap in each policy. `seq_any` ("e") overlaps nothing anywhere;
# `seq_write` ("c") is exclusive except under `conflict`, where its declared
# write of k:c only excludes calls that touch k:c.
EXPECTED = {
    "all_or_nothing": set(),
    "partition": _pairs("ab", "fg"),
    "rwlock": _pairs("ab", "fg"),
    "conflict": _pairs("abcd", "fg"),
}


def test_execution_mode_becomes_the_tools_concurrency(
    registry: tw.ToolRegistry,
) -> None:
    tools = {t.name: t for t in registry.visible()}
    assert all(isinstance(t, ManifestTool) for t in tools.values())
    assert tools["par_read"].concurrency is tw.Concurrency.SAFE
    assert tools["seq_write"].concurrency is tw.Concurrency.SEQUENTIAL
    assert tools["seq_any"].access_for({"key": "x"}) is None
    assert tools["seq_write"].access_for({"key": "x"}) == tw.Access(writes=["k:x"])


@pytest.mark.parametrize("policy", list(EXPECTED))
async def test_sequential_manifest_tools_are_honoured_by_every_policy(
    policy: PolicyName, probe: Probe, registry: tw.ToolRegistry, tmp_path: Path
) -> None:
    results: list[tw.ToolResult] = []
    started: list[str] = []

    async def work() -> None:
        dispatcher = Dispatcher(ConcurrencyConfig(policy=policy))
        results.extend(
            await dispatcher.dispatch(
                CALLS,
                registry,
                _runner(registry, tmp_path),
                on_started=lambda c: started.append(c.id),
            )
        )

    await probe.drive(work)
    assert probe.overlaps == EXPECTED[policy]
    assert probe.overlapped_with("e") == set()
    assert [r.text for r in results] == [f"did {key}" for _, key in BATCH]
    assert started == [key for _, key in BATCH]


async def test_sequential_manifest_tools_hold_the_stream_until_the_response_is_final(
    probe: Probe, registry: tw.ToolRegistry, tmp_path: Path
) -> None:
    calls = [CALLS[0], CALLS[4], CALLS[5]]  # par_read a, seq_any e, par_read f
    runner = _runner(registry, tmp_path)
    async with Dispatcher().open_stream(registry, runner) as stream:
        stream.submit(calls[0])
        stream.submit(calls[1])
        stream.submit(calls[2])
        await anyio.wait_all_tasks_blocked()
        # Only the SAFE call before the sequential one started mid-stream.
        assert probe.running == {"a"}
        stream.finish()
        await anyio.wait_all_tasks_blocked()
        assert probe.running == {"a"}  # e waits for a (barrier); f waits for e
        probe.gate("a").set()
        await anyio.wait_all_tasks_blocked()
        assert probe.running == {"e"}
        probe.gate("e").set()
        await anyio.wait_all_tasks_blocked()
        assert probe.running == {"f"}
        probe.gate("f").set()
        results = await stream.harvest()
    assert [r.text for r in results] == ["did a", "did e", "did f"]
    assert probe.overlaps == set()


async def test_a_discarded_stream_never_starts_a_sequential_call(
    probe: Probe, registry: tw.ToolRegistry, tmp_path: Path
) -> None:
    runner = _runner(registry, tmp_path)
    async with Dispatcher().open_stream(registry, runner) as stream:
        stream.submit(CALLS[0])  # par_read a starts at once
        stream.submit(CALLS[2])  # seq_write c must wait for the final response
        await anyio.wait_all_tasks_blocked()
        assert probe.running == {"a"}
        probe.gate("a").set()
        await anyio.wait_all_tasks_blocked()
        stream.discard()  # a retried response: c must leave no side effect
    assert "start c" not in probe.log


@pytest.mark.parametrize(
    ("trusted", "audit_enforced", "early"),
    [
        (True, False, True),  # you vouch for the manifest
        (False, True, True),  # an entry point runs here: the audit enforces it
        (False, False, False),  # someone's claim, nothing enforces it
    ],
)
async def test_a_parallel_manifest_tool_starts_early_only_if_vouched_for(
    probe: Probe,
    manifest: Path,
    tmp_path: Path,
    trusted: bool,
    audit_enforced: bool,
    early: bool,
) -> None:
    registry = tw.ToolRegistry(load_manifest(manifest, trusted=trusted))
    runner = _runner(registry, tmp_path)
    stream_of = Dispatcher().open_stream(
        registry, runner, audit_enforced=audit_enforced
    )
    async with stream_of as stream:
        stream.submit(CALLS[0])  # par_read a
        await anyio.wait_all_tasks_blocked()
        assert probe.running == ({"a"} if early else set())
        stream.finish()  # final: it runs either way, as its plan says
        await anyio.wait_all_tasks_blocked()
        assert probe.running == {"a"}
        probe.gate("a").set()
        [result] = await stream.harvest()
    assert result.text == "did a"


def test_who_vouches_for_a_manifest_tool(manifest: Path, tmp_path: Path) -> None:
    command = tmp_path / "cmd.json"
    spec = {**_tool("cmd", "parallel", None), "command": ["true"]}
    del spec["entryPoint"]
    command.write_text(json.dumps(spec))
    [entry] = [t for t in load_manifest(manifest) if t.name == "par_read"]
    [cmd] = load_manifest(command)
    [trusted_cmd] = load_manifest(command, trusted=True)
    assert entry.warrant is tw.tools.Warrant.AUDITED
    assert cmd.warrant is tw.tools.Warrant.UNVOUCHED
    assert trusted_cmd.warrant is tw.tools.Warrant.USER
    assert {t.warrant for t in load_manifests(tmp_path)} == {
        tw.tools.Warrant.AUDITED,
        tw.tools.Warrant.UNVOUCHED,
    }
    assert {t.warrant for t in load_manifests(tmp_path, trusted=True)} == {
        tw.tools.Warrant.USER
    }
