"""Run one bench script against two (or more) source trees in one run, lines paired.

A figure is only worth comparing with another measured beside it: this runs
the same bench script with each tree's ``src`` first on ``PYTHONPATH``, the
trees alternating round by round (so a machine's load falls on all of them
alike), and prints every output line once per tree, one under the other, each
number the median over the rounds.

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


def medians(rounds: list[list[str]]) -> list[str]:
    """Each line with every number the median of that number over the rounds."""
    out = []
    for lines in zip(*rounds, strict=False):
        template = NUMBER.split(lines[0])
        columns = [NUMBER.findall(line) for line in lines]
        if any(len(c) != len(columns[0]) for c in columns):
            out.append(lines[-1])  # the rounds disagree in shape: the last one
            continue
        figures = [
            statistics.median(float(c[i]) for c in columns)
            for i in range(len(columns[0]))
        ]
        pieces = [template[0]]
        for figure, text, rest in zip(figures, columns[0], template[1:], strict=True):
            decimals = len(text.split(".")[1]) if "." in text else 0
            pieces.append(f"{figure:.{decimals}f}{rest}")
        out.append("".join(pieces))
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
    per_tree = {name: medians(rounds) for name, rounds in outputs.items()}
    print(
        f"{options.script} {' '.join(script_args)}, median of {options.rounds} rounds"
    )
    for row in zip(*per_tree.values(), strict=False):
        for name, line in zip(per_tree, row, strict=True):
            print(f"{name:>{width}} | {line}")
        print()


if __name__ == "__main__":
    main()
