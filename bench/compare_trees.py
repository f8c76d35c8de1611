"""Run one bench script against two (or more) source trees in one run, lines paired.

A figure is only worth comparing with another measured beside it: this runs
the same bench script with each tree's ``src`` first on ``PYTHONPATH``, the
trees alternating round by round (so a machine's load falls on all of them
alike), and prints every output line once per tree, one under the other, each
as measured in the round nearest the median (`representative`).

Run: python bench/compare_trees.py --tree before=/path/to/old --tree after=. \
         [--rounds 3] bench/bench_scheduling.py [-- its arguments]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def run(script: str, args: list[str], src: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run(
        [sys.executable, script, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # 1: a bench that reports a target NOT met
        sys.exit(f"{script} under {src} failed:\n{done.stderr}")
    return done.stdout.splitlines()


def representative(rounds: list[list[str]]) -> list[str]:
    """Each line as measured in the round nearest the medians of all its numbers.

    One real line, not a median per number: its figures stay consistent with
    each other (a ratio with its two times, a verdict with its ratio).
    """
    out = []
    for lines in zip(*rounds, strict=False):
        columns = [[float(x) for x in NUMBER.findall(line)] for line in lines]
        if not columns[0] or any(len(c) != len(columns[0]) for c in columns):
            out.append(lines[-1])
            continue
        middle = [
            statistics.median(c[i] for c in columns) for i in range(len(columns[0]))
        ]

        def distance(figures: list[float], middle: list[float] = middle) -> float:
            return sum(
                abs(f - m) / (abs(m) or 1.0)
                for f, m in zip(figures, middle, strict=True)
            )

        best = min(range(len(lines)), key=lambda r: distance(columns[r]))
        out.append(lines[best])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="name=path")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    trees = {}
    for spec in options.tree:
        name, _, path = spec.partition("=")
        trees[name] = Path(path).resolve() / "src"
    script_args = [a for a in options.args if a != "--"]
    outputs: dict[str, list[list[str]]] = {name: [] for name in trees}
    for _ in range(options.rounds):
        for name, src in trees.items():
            outputs[name].append(run(options.script, script_args, src))
    width = max(len(name) for name in trees)
    per_tree = {name: representative(rounds) for name, rounds in outputs.items()}
    print(
        f"{options.script} {' '.join(script_args)}: per line, the round nearest"
        f" the median of {options.rounds}"
    )
    for row in zip(*per_tree.values(), strict=False):
        for name, line in zip(per_tree, row, strict=True):
            print(f"{name:>{width}} | {line}")
        print()


if __name__ == "__main__":
    main()
