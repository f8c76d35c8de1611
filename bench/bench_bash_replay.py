"""Real parallel batches replayed through toolweave's own gate and policies (issue 28).

Run: python bench/bench_bash_replay.py [--data bench/data/real-batches.jsonl] [--limit N]

Every batch of ``bench/data/real-batches.jsonl`` (public Claude Code, Codex and
pi sessions; see ``bench/data/real-batches.md``) becomes the tool calls
toolweave's built-in coding tools would get (``Read`` -> ``read``, ``Bash`` and
``exec_command`` -> ``bash``, ``Edit`` -> ``edit``, ...), against the real tools
of `coding_tools`, with this machine's sandbox backend, so bash classifies
and declares access as it does in use.

Each session gets a workspace in a scratch tree (`SessionTrees`): the
sessions' home paths (``/Users/…``, ``/home/…``) are moved under the scratch
directory (in tool inputs and in command text alike), and what the file
proves existed is made: the directories holding every file the session read,
edited or searched, those files (empty), the working directory, and ``.git``
in the workspace of a session that ran git. Nothing else exists, so a
command whose target is not proven gets the coarser key (the nearest
existing directory) or none: the replay errs wide, never narrow. The
workspace is the call's ``workdir`` where the file keeps one (Codex), else
the deepest directory holding every file path of the session (cut before the
first ``src``/``lib``/``tests``/… component; a home dot-directory such as
``~/.claude`` not counted), since bash resolves relative operands against it.
A file-tool call outside its session's workspace is a barrier, as in use.

A call whose tool has no built-in twin (MCP, sub-agents, terminals), or
whose input the file does not keep or keeps cut (``…[+N]``: its meaning is
unknown) in a field its access depends on, goes to an undeclared tool: a
barrier. The file tools' access depends only on their path: an ``Edit``
whose strings are cut, or a ``Read`` whose path only the file's ``reads``
keeps, is replayed with that path; a ``Grep``/``Glob`` with no input as a
search of the whole workspace (its widest access). Nothing runs: the runner
only sleeps in virtual time (trio's MockClock), so the figures are the
scheduler's own.

Printed, in one run:

- **stages**: sequential stages per batch, summed. Each call lasts one virtual
  second, so a batch's makespan is its number of stages. toolweave's
  ``conflict`` (the default) and ``partition`` (Claude Code's rule, through
  toolweave's gate) beside the file's own reference columns, ``stages_cc``
  (consecutive read-only calls share a stage, by the file's heuristic kinds)
  and ``stages_key`` (per-path read/write keys, non-read-only shell a barrier).
- **makespan** with each call's observed latency, summed over batches: the
  same policies, serial (the sum of latencies) and the two reference rules
  recomputed from the file's kinds and paths.
- the same stages over the **known batches** only (every call's input kept
  whole), where toolweave sees what the reference rules' heuristic saw.
- **classification**: bash ``concurrency_for`` + ``access_for`` per distinct
  command of the file and of ``bench/bench_classifier.py``'s corpus, cold
  (the parse cache cleared first), against the session trees: p50 / p99.

``--per-batch FILE`` writes each batch's stages (toolweave conflict, the
per-path rule, Claude Code's rule) as JSON lines, to diff two trees' runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
import trio
import trio.testing

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools.builtin import coding_tools

sys.path.insert(0, str(Path(__file__).parent))
from bench_classifier import CORPUS  # noqa: E402 - the classify bench's own corpus

DATA = Path(__file__).parent / "data" / "real-batches.jsonl"
POLICIES = ("conflict", "partition")
READ_KINDS = frozenset({"read", "exec_ro"})
FILE_TOOLS = frozenset({"read", "read_file", "edit", "multiedit", "write"})
SEARCH_TOOLS = frozenset({"grep", "glob"})
HOME_PATH = re.compile(r"(?<![\w./~-])/(?=(?:Users|home)/)")
"""Where a session's home path starts in a text (not inside another word)."""
SOURCE_DIRS = frozenset(
    {"src", "lib", "test", "tests", "cmd", "docs", "internal", "pkg", "app", "e2e"}
    | {"crates", "scripts", "spec", "packages", "web", "api", "deps", "priv"}
)
"""Folder names a project root holds, never is: a session's root is cut before them."""


@tw.tool
async def opaque(what: str = "") -> str:
    """A call with no built-in twin or an unknown input: undeclared, so a barrier."""
    return what


@dataclass(frozen=True, slots=True)
class Replayed:
    """One real call as toolweave sees it, with what the file says about it."""

    call: tw.ToolCall
    latency: float
    kind: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Batch:
    """One real batch: its calls, its session's workspace, the file's record."""

    calls: list[Replayed]
    root: Path
    record: dict[str, Any]

    @property
    def known(self) -> bool:
        """True if toolweave sees every call (no input missing or cut)."""
        return all(r.call.name != "opaque" for r in self.calls)


def _cut(value: Any) -> bool:
    return "…[+" in json.dumps(value, ensure_ascii=False)


class SessionTrees:
    """The sessions' workspaces under one scratch directory (see the module doc)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._prefix = str(scratch)

    def rebase(self, text: str) -> str:
        """`text` with every home path moved under the scratch directory."""
        return HOME_PATH.sub(self._prefix + "/", text)

    def rebase_input(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.rebase(value)
        if isinstance(value, dict):
            return {k: self.rebase_input(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.rebase_input(v) for v in value]
        return value

    def build(self, records: Sequence[dict[str, Any]]) -> dict[str, Path]:
        """Make every session's proven tree; the workspace root of each session."""
        by_session: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_session.setdefault(record["session"], []).extend(record["calls"])
        return {s: self._session(s, calls) for s, calls in by_session.items()}

    def _session(self, session: str, calls: list[dict[str, Any]]) -> Path:
        workdirs = [
            c["input"]["workdir"]
            for c in calls
            if isinstance((c.get("input") or {}).get("workdir"), str)
        ]
        files, dirs = self._proven(calls, workdirs[0] if workdirs else None)
        if workdirs:
            root = Path(self.rebase(workdirs[0]))
        else:
            root = _project_root([*files, *dirs]) or self.scratch / f"_s{session}"
        root.mkdir(parents=True, exist_ok=True)
        for d in dirs:  # a searched path may be a file or a folder: its parent
            _make(d.parent, None)
        for f in files:
            _make(f.parent, f)
        if any(_runs_git(c) for c in calls):
            (root / ".git").mkdir(exist_ok=True)
        return root

    def _proven(
        self, calls: list[dict[str, Any]], workdir: str | None
    ) -> tuple[list[Path], list[Path]]:
        """Files read or edited, and folders searched: they existed."""
        base = Path(self.rebase(workdir)) if workdir else None
        files: list[Path] = []
        dirs: list[Path] = []
        for c in calls:
            key = c["name"].lower()
            if key not in FILE_TOOLS and key not in SEARCH_TOOLS:
                continue
            if key == "write":
                continue  # a write may create its file: nothing proven
            for raw in _paths_of(c):
                path = Path(self.rebase(raw))
                if not path.is_absolute():
                    if base is None:
                        continue
                    path = base / path
                if not path.is_relative_to(self.scratch) or ".." in path.parts:
                    continue
                (dirs if key in SEARCH_TOOLS else files).append(path)
        return files, dirs


def _make(folder: Path, file: Path | None) -> None:
    """Make `folder` and `file` in it; a name that is both (data noise): skipped."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if file is not None and not file.exists():
            file.touch()
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        pass


def _paths_of(c: dict[str, Any]) -> Iterator[str]:
    raw = c.get("input") or {}
    for key in ("file_path", "path"):
        if isinstance(raw.get(key), str) and not _cut(raw[key]):
            yield raw[key]
    yield from c.get("reads") or ()
    yield from c.get("writes") or ()


def _runs_git(c: dict[str, Any]) -> bool:
    command = (c.get("input") or {}).get("command") or (c.get("input") or {}).get("cmd")
    return (
        isinstance(command, str)
        and re.search(r"(^|[\s;&|(])git\s", command) is not None
    )


def _project_root(paths: Sequence[Path]) -> Path | None:
    """The deepest folder holding every path, cut before a source folder's name.

    Only below the home's own folders (``~/src/project`` is a project). A
    home dot-directory (``~/.claude/plans/x.md``) is not the project's.
    """
    kept = [p for p in paths if not _in_home_dot_dir(p)] or list(paths)
    if not kept:
        return None
    folders = [p.parent if p.suffix else p for p in kept]
    common = Path(os.path.commonpath([str(f) for f in folders]))
    parts = common.parts
    homes = [i for i, part in enumerate(parts) if part in ("Users", "home")]
    first = homes[0] + 3 if homes else 1  # ~/src/project: src is not cut
    for i, part in enumerate(parts):
        if part in SOURCE_DIRS and i >= first:
            return Path(*parts[:i])
    return common


def _in_home_dot_dir(path: Path) -> bool:
    parts = PurePosixPath(path).parts
    for i, part in enumerate(parts[:-2]):
        if part in ("Users", "home") and parts[i + 2].startswith("."):
            return True
    return False


def _path(raw: dict[str, Any], paths: Sequence[str]) -> str | None:
    for key in ("file_path", "path"):
        got = raw.get(key)
        if isinstance(got, str) and got and not _cut(got):
            return got
    return paths[0] if paths and not _cut(paths[0]) else None


def _as_builtin(
    name: str, raw: dict[str, Any] | None, c: dict[str, Any]
) -> tuple[str, dict[str, Any]] | None:
    """The built-in tool call a real call maps to, or None (then: a barrier).

    A field the call's access depends on must be whole: a bash command, a
    file tool's path, a search's pattern and path, a fetch's URL.
    """
    key = name.lower()
    paths = c.get("reads") or c.get("writes") or []
    if key in FILE_TOOLS:
        path = _path(raw or {}, paths)
        if path is None:
            return None
        if key.startswith("read"):
            return "read", {"path": path}
        if key == "write":
            return "write", {"path": path, "content": ""}
        return "edit", {"path": path, "old_string": "a", "new_string": "b"}
    if key in SEARCH_TOOLS and raw is None:
        return key, {"pattern": "*"}  # the whole workspace: its widest access
    if raw is None or _cut(raw):
        return None
    if key in ("bash", "exec_command", "shell"):
        command = raw.get("command") or raw.get("cmd")
        return ("bash", {"command": command}) if isinstance(command, str) else None
    if key in SEARCH_TOOLS:
        pattern = raw.get("pattern")
        if not isinstance(pattern, str):
            return None
        args: dict[str, Any] = {"pattern": pattern}
        if isinstance(raw.get("path"), str):
            args["path"] = raw["path"]
        return key, args
    if key in ("todowrite", "taskcreate", "taskupdate", "todo"):
        return "todo_write", {"todos": []}
    if key in ("tasklist",):
        return "todo_read", {}
    if key == "webfetch" and isinstance(raw.get("url"), str):
        return "web_fetch", {"url": raw["url"]}
    return None


def load(path: Path, limit: int | None, trees: SessionTrees) -> list[Batch]:
    records = []
    with path.open(encoding="utf-8") as file:
        for n, line in enumerate(file):
            if limit is not None and n >= limit:
                break
            records.append(json.loads(line))
    roots = trees.build(records)
    batches: list[Batch] = []
    for record in records:
        calls: list[Replayed] = []
        for i, c in enumerate(record["calls"]):
            mapped = _as_builtin(c["name"], c.get("input"), c)
            name, args = mapped if mapped else ("opaque", {"what": c["name"]})
            calls.append(
                Replayed(
                    tw.ToolCall(f"c{i}", name, trees.rebase_input(args)),
                    max(float(c.get("latency_s") or 0.0), 0.0),
                    c["kind"],
                    tuple(c.get("reads") or ()),
                    tuple(c.get("writes") or ()),
                )
            )
        batches.append(Batch(calls, roots[record["session"]], record))
    return batches


async def makespan(
    batch: Sequence[Replayed], registry: tw.ToolRegistry, policy: str, unit: bool
) -> float:
    """The batch through a fresh Dispatcher; each call sleeps its latency (or 1 s).

    No ceiling (``default_tool_timeout=None``): the file's longest calls ran
    for over 600 s, the default ceiling, and cutting them there would make
    toolweave's makespan shorter than the same schedule's.
    """
    latency = {r.call.id: (1.0 if unit else r.latency) for r in batch}
    start = anyio.current_time()

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        await anyio.sleep(latency[call.id])
        return tw.ToolResult(call.id, "")

    async with Dispatcher(
        ConcurrencyConfig(policy=policy, default_tool_timeout=None)
    ) as dispatcher:  # type: ignore[arg-type]
        await dispatcher.dispatch([r.call for r in batch], registry, runner)
    return anyio.current_time() - start


def cc_rule(batch: Sequence[Replayed], unit: bool) -> float:
    """Claude Code's rule on the file's kinds: a run of read-only calls is one stage."""
    total, run = 0.0, 0.0
    for r in batch:
        d = 1.0 if unit else r.latency
        if r.kind in READ_KINDS:
            run = max(run, d)
        else:
            total += run + d
            run = 0.0
    return total + run


def key_rule(batch: Sequence[Replayed], unit: bool) -> float:
    """The per-path heuristic on the file's kinds and paths (its ``stages_key``).

    A read waits for earlier writes of its paths, a write for earlier reads and
    writes of its paths, a read-only shell command reads everything, task-list
    calls share one key, anything else (non-read-only shell, unknown, MCP,
    spawns) is a barrier.
    """
    ends: list[float] = []
    for i, r in enumerate(batch):
        d = 1.0 if unit else r.latency
        after = 0.0
        for j in range(i):
            if _key_conflict(batch[j], r):
                after = max(after, ends[j])
        ends.append(after + d)
    return max(ends, default=0.0)


def _keys(r: Replayed) -> tuple[set[str], set[str], bool]:
    if r.kind == "read":
        return set(r.reads), set(), False
    if r.kind == "exec_ro":
        return {"*"}, set(), False
    if r.kind == "write":
        return set(), set(r.writes) or {"*"}, False
    if r.kind == "state":
        return set(), {"todo:"}, False
    return set(), set(), True


def _key_conflict(a: Replayed, b: Replayed) -> bool:
    ar, aw, abar = _keys(a)
    br, bw, bbar = _keys(b)
    if abar or bbar:
        return True

    def hit(x: set[str], y: set[str]) -> bool:
        return bool(x & y) or ("*" in x and bool(y)) or ("*" in y and bool(x))

    return hit(aw, br) or hit(aw, bw) or hit(ar, bw)


class Registries:
    """One registry of the built-in tools per session workspace."""

    def __init__(self) -> None:
        self._by_root: dict[Path, tw.ToolRegistry] = {}

    def __call__(self, root: Path) -> tw.ToolRegistry:
        if root not in self._by_root:
            self._by_root[root] = tw.ToolRegistry([*coding_tools(root), opaque])
        return self._by_root[root]


async def replay(
    batches: list[Batch], per_batch: list[dict[str, Any]] | None
) -> dict[str, float]:
    registries = Registries()
    totals: dict[str, float] = {}

    def add(key: str, value: float) -> None:
        totals[key] = totals.get(key, 0.0) + value

    for n, batch in enumerate(batches):
        calls, registry = batch.calls, registries(batch.root)
        stages: dict[str, float] = {}
        for policy in POLICIES:
            stages[policy] = await makespan(calls, registry, policy, unit=True)
            add(f"stages {policy}", stages[policy])
            add(
                f"makespan {policy}",
                await makespan(calls, registry, policy, unit=False),
            )
        stages["cc"], stages["key"] = (
            cc_rule(calls, unit=True),
            key_rule(calls, unit=True),
        )
        add("stages cc rule", stages["cc"])
        add("stages key rule", stages["key"])
        add("makespan cc rule", cc_rule(calls, unit=False))
        add("makespan key rule", key_rule(calls, unit=False))
        add("makespan serial", sum(r.latency for r in calls))
        add("stages serial", len(calls))
        if batch.known:
            add("known batches", 1)
            for name in ("conflict", "partition", "cc", "key"):
                add(f"known {name}", stages[name])
            add("known serial", len(calls))
        if per_batch is not None:
            per_batch.append({"n": n, "known": batch.known, **stages})
    return totals


def _clear_parse_cache() -> None:
    """The bash parse cache, so each timing is a command the gate never saw.

    The parse module moved in issue 25's rooms; both paths are tried so the
    same bench measures the tree before and after.
    """
    for name in (
        "toolweave.tools.builtin.bash._parse",
        "toolweave.tools.builtin._bash_parse",
    ):
        try:
            module = __import__(name, fromlist=["parse_script"])
        except ImportError:
            continue
        module.parse_script.cache_clear()
        return


def classification(
    batches: list[Batch], registries: Registries
) -> tuple[int, float, float]:
    """p50 and p99 (ms) of bash concurrency_for + access_for per distinct command, cold.

    The file's commands in their sessions' workspaces (access_for looks at the
    tree), and the classify bench's corpus in a scratch one.
    """
    commands = {
        (str(r.call.input["command"]), b.root)
        for b in batches
        for r in b.calls
        if r.call.name == "bash"
    }
    scratch = Path(tempfile.mkdtemp(prefix="corpus-")).resolve()
    try:
        commands |= {(c, scratch) for c in CORPUS}
        times = [_classify_ms(registries, c, root) for c, root in sorted(commands)]
    finally:
        os.rmdir(scratch)
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    return len(commands), p(0.50), p(0.99)


def _classify_ms(registries: Registries, command: str, root: Path) -> float:
    bash = registries(root).get("bash")
    assert bash is not None
    rounds = []
    for _ in range(5):
        _clear_parse_cache()
        args = bash.parse({"command": command})
        start = time.perf_counter()
        bash.concurrency_for(args)
        bash.access_for(args)
        rounds.append((time.perf_counter() - start) * 1000)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--per-batch", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-") as scratch:
        report(args, SessionTrees(Path(scratch).resolve()))


def report(args: argparse.Namespace, trees: SessionTrees) -> None:
    batches = load(args.data, args.limit, trees)
    raw = [b.record for b in batches]
    calls = sum(len(b.calls) for b in batches)
    per_batch: list[dict[str, Any]] | None = [] if args.per_batch else None
    totals = trio.run(
        replay, batches, per_batch, clock=trio.testing.MockClock(autojump_threshold=0)
    )
    print(f"{len(batches):,} real batches, {calls:,} calls ({args.data.name})")
    print("stages (sum over batches; fewer is more parallel)")
    print(f"    toolweave conflict (default)   {totals['stages conflict']:8,.0f}")
    print(f"    toolweave partition (CC rule)  {totals['stages partition']:8,.0f}")
    print(f"    file's stages_cc               {sum(r['stages_cc'] for r in raw):8,}")
    print(f"    file's stages_key (per-path)   {sum(r['stages_key'] for r in raw):8,}")
    print(f"    recomputed cc rule             {totals['stages cc rule']:8,.0f}")
    print(f"    recomputed per-path rule       {totals['stages key rule']:8,.0f}")
    print(f"    serial                         {totals['stages serial']:8,.0f}")
    known = totals.get("known batches", 0.0)
    print(f"stages over the {known:,.0f} known batches (every input whole)")
    for key, label in [
        ("known conflict", "toolweave conflict (default)"),
        ("known partition", "toolweave partition (CC rule)"),
        ("known cc", "recomputed cc rule"),
        ("known key", "recomputed per-path rule"),
        ("known serial", "serial"),
    ]:
        print(f"    {label:30s} {totals.get(key, 0.0):8,.0f}")
    print("makespan with observed latencies (s, sum over batches)")
    for key, label in [
        ("makespan conflict", "toolweave conflict"),
        ("makespan partition", "toolweave partition"),
        ("makespan cc rule", "cc rule (file kinds)"),
        ("makespan key rule", "per-path rule (file kinds)"),
        ("makespan serial", "serial"),
    ]:
        ratio = totals[key] / totals["makespan serial"]
        print(f"    {label:30s} {totals[key]:10,.1f}  ({ratio:.3f} x serial)")
    n, p50, p99 = classification(batches, Registries())
    print(f"bash classification with access, cold, {n:,} distinct commands:")
    print(f"    p50 {p50:.3f} ms   p99 {p99:.3f} ms   (target p99 <= 2 ms)")
    if per_batch is not None:
        with args.per_batch.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in per_batch)


if __name__ == "__main__":
    main()
