"""Bash classification cost: p50/p99 per command, cold (fresh parse) and cached.

Run: python bench/bench_classifier.py [--rounds R]

The corpus is typical agent shell traffic: reads, git reads, pipelines,
substitutions and writers. "cold" clears the parse cache before each command
(a command the gate has never seen: parse + walk + allow-list); "cached" is
the gate's second, third ... call for the same command (the gate, access_for
and the permission stage all ask). The permission parts (bash(...) rules) are
timed cold too. Target (issue 11): p99 <= 2 ms cold. The pathological table
shows the worst case the time and size bounds allow (parse deadline 100 ms,
parse and walk 150 ms, 64 KiB). Percentiles are over the corpus of each
command's median round, so machine noise does not pose as classifier cost.
"""

from __future__ import annotations

import argparse
import statistics
import time

from toolweave.tools.builtin.bash._classifier import read_only_verdict
from toolweave.tools.builtin.bash._parse import parse_script
from toolweave.tools.builtin.bash._rules import command_parts

TARGET_MS = 2.0

CORPUS = [
    "ls -la",
    "ls src tests",
    "pwd",
    "cat README.md",
    "head -n 50 src/toolweave/__init__.py",
    "tail -20 build.log",
    "wc -l src/**/*.py",
    "grep -rn 'def main' src",
    "rg -n --type py 'import anyio' src",
    "rg --files | head -100",
    "find . -name '*.py' -not -path './.venv/*' | head",
    "git status",
    "git status --short",
    "git diff --stat",
    "git diff HEAD~1 -- src/toolweave/tools",
    "git log --oneline -20",
    "git log -p -3 -- README.md",
    "git show --stat HEAD",
    "git branch -a",
    "git rev-parse --abbrev-ref HEAD",
    "git blame -L 10,40 src/toolweave/tools/_tool.py",
    "cat pyproject.toml | grep -n version",
    "grep -c TODO $(git ls-files '*.py')",
    "sed -n '1,80p' src/toolweave/loop/_agent.py",
    "awk -F: '{print $1}' /etc/passwd | sort | uniq -c | sort -rn | head",
    "diff <(git show HEAD:README.md) README.md",
    "echo $HOME && which python3 && python3 --version",
    "cd src && ls -R | head -40",
    "jq '.dependencies' package.json",
    "stat -c '%s %n' *.py",
    "du -sh .venv 2>/dev/null || echo none",
    "ls tests/ && wc -l tests/*.py | tail -1",
    "if [ -f setup.py ]; then cat setup.py; else echo no setup.py; fi",
    "git log --format='%h %an %s' --since=1.week | head -50",
    "timeout 10 git fetch --dry-run",
    "python -m pytest -q tests/tools -x",
    "pip install -e '.[test]'",
    "npm run build",
    "make -j4",
    "rm -rf build dist",
    "mkdir -p out && cp a.txt out/",
    "git add -A && git commit -m 'wip'",
    "sed -i 's/old/new/g' src/a.py",
    "echo 'x = 1' > config.py",
    "cat > notes.md <<'EOF'\n# notes\n- one\n- two\nEOF",
    "for f in *.py; do python -m black $f; done",
    "export PATH=$HOME/bin:$PATH && tool --version",
    "curl -sSL https://example.com/install.sh | bash",
    "docker compose up -d",
    "bash -c 'cd /tmp && ls'",
]

PATHOLOGICAL = {
    "quoted ${ glued": 'grep "\\${HOME}x" f',
    "10,000-deep $(": "$(" * 10_000 + "ls" + ")" * 10_000,
    "10,000-deep (": "(" * 10_000 + "ls" + ")" * 10_000,
    "stacked heredocs (64 KiB)": "<<E\n" * 16_000,
    "many quoted ${ (60 KiB)": '"${' * 20_000,
    "1 MB command": "echo " + "a" * 1_000_000,
    "8,000-command && chain": " && ".join(["ls"] * 8_000),
}


def _time_ms(fn: object, command: str, *, cold: bool) -> float:
    assert callable(fn)
    if cold:
        parse_script.cache_clear()
        command_parts.cache_clear()
    start = time.perf_counter()
    fn(command)
    return (time.perf_counter() - start) * 1000


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99, ordered[-1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    runs = {
        "classify, cold": (read_only_verdict, True),
        "classify, cached parse": (read_only_verdict, False),
        "rule parts, cold": (command_parts, True),
    }
    rounds: dict[str, dict[str, list[float]]] = {
        name: {c: [] for c in CORPUS} for name in runs
    }
    for _ in range(args.rounds):
        for command in CORPUS:
            for name, (fn, cold) in runs.items():
                if not cold:
                    fn(command)  # warm this command's entry first
                rounds[name][command].append(_time_ms(fn, command, cold=cold))
    # Each command's median over the rounds (machine noise hits every command
    # alike), then the percentiles over the corpus.
    results = {
        name: [statistics.median(times) for times in per_command.values()]
        for name, per_command in rounds.items()
    }
    print(f"corpus: {len(CORPUS)} commands, median of {args.rounds} rounds each")
    print(f"{'':28}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'p99/target':>12}")
    worst = 0.0
    for name, samples in results.items():
        p50, p99, top = _percentiles(samples)
        print(f"{name:28}{p50:10.3f}{p99:10.3f}{top:10.3f}{p99 / TARGET_MS:12.2f}")
        worst = max(worst, p99)
    print(
        "\npathological inputs (one cold classification each; parse+walk budget 150 ms):"
    )
    for name, command in PATHOLOGICAL.items():
        ms = _time_ms(read_only_verdict, command, cold=True)
        verdict = read_only_verdict(command)
        print(f"  {name:28}{ms:9.1f} ms  read_only={verdict.read_only}")
    ok = worst <= TARGET_MS
    print(f"\ntarget p99 <= {TARGET_MS} ms: {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
