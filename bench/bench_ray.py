"""Ray benchmark (issue 8): scripted sessions through the batch runner, local vs Ray.

200 scripted sessions (two iterations; two parallel tool calls, then an answer)
go through `run_batch` (what ``toolweave batch`` runs), each recorded in a fresh
SQLite session store and a result JSONL by the driver:

* locally: one process, `--max-sessions` sessions at once on one event loop;
* on a local Ray cluster of the same machine with 1 and with 2 workers (the
  cluster has that many CPUs and each session asks for one CPU, so that many
  sessions run at once, each in its own worker process).

Two workloads: ``light`` (trivial tools: pure runtime overhead) and ``cpu``
(each tool call burns about `--cpu-ms` of CPU in Python, like a heavy tool).
Ray start-up and the first tasks (worker processes starting) are timed
separately and excluded from throughput. Throughput ratios are printed side by
side; docs/scaling.md interprets them.

Run: python bench/bench_ray.py [--sessions 200] [--workers 1,2] [--workloads light,cpu]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

import toolweave as tw
from toolweave.cluster import BatchTask, parse_tasks, run_batch, scripted_spec
from toolweave.sessions import SQLiteSessionStore

HASHES_PER_MS = 1


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
def crunch(ms: int) -> str:
    """Burn about `ms` milliseconds of CPU (sha256 rounds)."""
    digest = b"toolweave"
    for _ in range(ms * HASHES_PER_MS):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()[:8]


def bench_tools(task: BatchTask) -> list[tw.Tool]:
    del task
    return [add, crunch]


@dataclass(frozen=True)
class Timing:
    wall: float
    """Seconds from start to the last result line."""
    driver_cpu: float
    """CPU seconds the driver process used (threads included)."""


def calibrate() -> int:
    """sha256 rounds per millisecond on this machine."""
    rounds, digest = 20_000, b"x"
    started = time.perf_counter()
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return max(1, int(rounds / ((time.perf_counter() - started) * 1000)))


def task_lines(count: int, workload: str, cpu_ms: int) -> list[str]:
    lines = []
    for n in range(count):
        if workload == "cpu":
            calls = [("c1", "crunch", {"ms": cpu_ms}), ("c2", "crunch", {"ms": cpu_ms})]
        else:
            calls = [("c1", "add", {"a": n, "b": 1}), ("c2", "add", {"a": n, "b": 2})]
        steps: list[dict[str, Any]] = [
            {
                "tool_calls": [{"id": i, "name": m, "input": a} for i, m, a in calls],
                "usage": [100, 20],
            },
            {"text": f"answer {n}", "usage": [150, 10]},
        ]
        lines.append(
            json.dumps(
                {
                    "id": f"{workload}-{n}",
                    "prompt": f"task {n}",
                    "model": scripted_spec(steps),
                }
            )
        )
    return lines


def run(lines: list[str], workdir: Path, name: str, **options: Any) -> Timing:
    store = SQLiteSessionStore(workdir / f"{name}.db")
    tasks = parse_tasks(lines)
    cpu, started = time.process_time(), time.perf_counter()
    stats = anyio.run(
        lambda: run_batch(
            tasks,
            output=workdir / f"{name}.jsonl",
            tools=bench_tools,
            store=store,
            **options,
        )
    )
    timing = Timing(time.perf_counter() - started, time.process_time() - cpu)
    store.close()
    assert stats.completed == len(lines), stats
    return timing


def best(
    repeat: int, lines: list[str], workdir: Path, name: str, **options: Any
) -> Timing:
    """The fastest of `repeat` runs (the machine is shared and noisy)."""
    runs = [run(lines, workdir, f"{name}-{i}", **options) for i in range(repeat)]
    return min(runs, key=lambda t: t.wall)


def ray_runs(
    workers: int, workloads: list[str], args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    import ray

    started = time.perf_counter()
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(workdir / f"ray{workers}"),
        _node_ip_address="127.0.0.1",
    )
    init = time.perf_counter() - started
    options = {
        "ray": True,
        "max_sessions": args.max_sessions,
        "session_resources": {"num_cpus": 1},
    }
    warm = run(
        task_lines(workers * 2, "light", 0), workdir, f"warm{workers}", **options
    )
    out: dict[str, Any] = {"init": init, "warmup": warm}
    for workload in workloads:
        lines = task_lines(args.sessions, workload, args.cpu_ms)
        out[workload] = best(
            args.repeat, lines, workdir, f"ray{workers}-{workload}", **options
        )
    ray.shutdown()
    return out


def _row(label: str, workload: str, timing: Timing, sessions: int, base: float) -> str:
    rate = sessions / timing.wall
    per = 1000 * timing.driver_cpu / sessions
    return (
        f"{label:<16}{workload:<10}{timing.wall:>9.2f}{rate:>12.1f}{rate / base:>10.2f}"
        f"{per:>14.2f}"
    )


def report(
    sessions: int,
    workloads: list[str],
    local: dict[str, Timing],
    ray_results: dict[int, dict[str, Any]],
) -> None:
    print()
    header = (
        f"{'mode':<16}{'workload':<10}{'seconds':>9}{'sessions/s':>12}{'vs local':>10}"
    )
    print(header + f"{'driver ms/s.':>14}")
    for workload in workloads:
        base = sessions / local[workload].wall
        print(_row("local", workload, local[workload], sessions, base))
        for w, results in ray_results.items():
            label = f"ray {w} worker" + ("s" if w > 1 else "")
            print(_row(label, workload, results[workload], sessions, base))
    print(
        "(driver ms/s. = driver-process CPU milliseconds per session; fastest of --repeat)"
    )
    print()
    for w, results in ray_results.items():
        print(
            f"ray {w} worker(s): ray.init {results['init']:.1f} s, first {2 * w} sessions "
            f"(worker start-up) {results['warmup'].wall:.1f} s; not counted above"
        )
    sizes = sorted(ray_results)
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        for workload in workloads:
            gain = ray_results[lo][workload].wall / ray_results[hi][workload].wall
            print(f"{workload}: {hi} workers vs {lo}: x{gain:.2f} throughput")


def main() -> int:
    global HASHES_PER_MS  # noqa: PLW0603 - set once, before any tool runs or is pickled
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", default="1,2", help="Ray cluster sizes to measure")
    parser.add_argument("--workloads", default="light,cpu")
    parser.add_argument(
        "--cpu-ms", type=int, default=10, help="CPU per cpu-workload call"
    )
    parser.add_argument("--max-sessions", type=int, default=8)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per cell; the fastest counts"
    )
    args, _ = parser.parse_known_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    HASHES_PER_MS = calibrate()
    workloads = args.workloads.split(",")
    sizes = [int(w) for w in args.workers.split(",")]
    print(
        f"{args.sessions} scripted sessions per run, 2 iterations, 2 parallel tool calls; "
        f"cpu workload: {args.cpu_ms} ms per call; {os.cpu_count()} cores; "
        f"max_sessions={args.max_sessions}; python {sys.version.split()[0]}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="tw-bench-ray-") as tmp:
        workdir = Path(tmp)
        local = {}
        for workload in workloads:
            lines = task_lines(args.sessions, workload, args.cpu_ms)
            local[workload] = best(
                args.repeat,
                lines,
                workdir,
                f"local-{workload}",
                max_sessions=args.max_sessions,
            )
        ray_results = {w: ray_runs(w, workloads, args, workdir) for w in sizes}
    report(args.sessions, workloads, local, ray_results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
