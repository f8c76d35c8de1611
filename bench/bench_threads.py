"""Sync functions on worker threads: toolweave's daemon pool vs anyio's, side by side.

Run: python bench/bench_threads.py [--calls N] [--rounds R]

On asyncio, sync tool functions run on toolweave's own daemon threads (an
abandoned one must not keep the process alive; anyio's are not daemons).
This measures what the hand-off costs next to ``anyio.to_thread.run_sync``:
N trivial calls in a row, then N at once (the limiter's 40 threads busy),
alternating the two so machine noise hits both alike; the median round
counts. Informative: no target, exit status 0.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread

from toolweave._native.daemon_pool import run_on_daemon_thread

Hop = Callable[[Callable[[], int]], Awaitable[int]]


def _work() -> int:
    return 1


async def _anyio(fn: Callable[[], int]) -> int:
    return await anyio.to_thread.run_sync(fn)


async def _pool(fn: Callable[[], int]) -> int:
    return await run_on_daemon_thread(fn)


async def _serial(hop: Hop, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await hop(_work)
    return (time.perf_counter() - start) / calls


async def _parallel(hop: Hop, calls: int) -> float:
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(hop, _work)
    return (time.perf_counter() - start) / calls


async def _main(calls: int, rounds: int) -> None:
    hops: dict[str, Hop] = {"anyio": _anyio, "toolweave pool": _pool}
    for shape in (_serial, _parallel):
        for hop in hops.values():  # warm both pools
            await shape(hop, calls)
        times: dict[str, list[float]] = {name: [] for name in hops}
        for index in range(rounds):
            order = list(hops) if index % 2 == 0 else list(reversed(hops))
            for name in order:
                times[name].append(await shape(hops[name], calls))
        medians = {name: statistics.median(t) * 1e6 for name, t in times.items()}
        ratio = medians["toolweave pool"] / medians["anyio"]
        print(
            f"{shape.__name__[1:]:>8}: anyio {medians['anyio']:.1f} us/call · toolweave"
            f" pool {medians['toolweave pool']:.1f} us/call · ratio {ratio:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    args, _ = parser.parse_known_args()
    anyio.run(_main, args.calls, args.rounds)


if __name__ == "__main__":
    main()
