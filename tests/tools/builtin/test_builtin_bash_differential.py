"""Differential check of the parser against bash itself.

Fragments that tokenize differently in tree-sitter and bash (heredocs,
backslash-newlines, backticks, comments, quotes, carriage returns) are glued
around a marker command. Whenever the parser accepts an input but shows no
command that could be the marker, bash must not run it either: otherwise a
command would be hidden from the classifier and from permission rules. The
marker prints ``RAN`` without that text appearing in its source.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import subprocess
from pathlib import Path

from toolweave.tools.builtin.bash._classifier import read_only_verdict
from toolweave.tools.builtin.bash._parse import Unparsed, parse_script
from toolweave.tools.builtin.bash._rules import command_parts

MARK = "printf %s%s\\\\n R AN"

FRAGMENTS = [
    "cat <<EOF\n", "cat <<'EOF'\n", "cat <<-EOF\n", "EOF\n", "\tEOF\n", "\\\n",
    "# c \\\n", "# )\n", "echo $(", ")\n", "`", '"', "'", "case x in x) ", ";;\n",
    "esac\n", "{ ", "}\n", "(", "$((", "))", "; ", "&& ", "\n", "x=\\\n", "ls ",
    "<<<", "$'\\n'", "\r\n", "\\\r\n", "cat <<EOF\n`", "$(cat <<EOF\n", "\\\n\n",
    "${x:-", "}", "[[ ", " ]]\n", "! ", "time ", "2>&1 ", "\\", "> /dev/null ", "x=\x0c", "x=\x0b",
]  # fmt: skip


def _hidden(source: str) -> bool:
    """True if the parser accepts `source` yet shows no command that may be MARK.

    "Shows" is what permission rules see (wrappers such as ``time`` looked
    through); the classifier only calls an input read-only when every command
    it shows is, so a wrapper it shows instead of MARK keeps it exclusive.
    """
    if isinstance(parse_script(source), Unparsed):
        return False
    parts = command_parts(source)
    if parts is None:
        return False
    return not any(words[0] in ("printf", None) for words in parts.possible)


def test_no_command_bash_runs_is_hidden_from_the_parser(tmp_path: Path) -> None:
    hidden = []
    for n in (1, 2):
        for combo in itertools.product(FRAGMENTS, repeat=n):
            source = "".join(combo) + MARK + "\n" + "".join(reversed(combo))
            if _hidden(source):
                hidden.append(source)
    assert hidden  # the check below must have inputs to look at
    ran = []
    for source in hidden:
        try:
            done = subprocess.run(
                ["bash", "-c", source],
                capture_output=True,
                text=True,
                timeout=5,
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            continue
        if "RAN" in done.stdout:
            ran.append(source)
    assert ran == []


SOUP = [
    "echo a", "cat f", "ls", "grep x f", "sort f", "uniq f", "wc -l f", "head -1 f",
    "printf %s x", "true", " ", " ", " ", ";", "&&", "||", "|", "\n", ">", ">>", "<",
    "2>", "&>", ">|", "<>", ">&", "1", "2", "/dev/null", "out", "'", '"', "\\", "$(",
    ")", "`", "(", "{", "}", "<(", ">(", "#", "=", "x", "-o", "--output=o", "-", "--",
    "*", "<<E\n", "E\n", "<<<", "$'", "\t", ";;", "&", "!", "[", "]", "test", "-v",
    "a[$(touch p)]", "%s", "-vx", "tee", "o", "file", "-C", "date", "-s", "sed", "-n",
    "p", "w o", "s/a/b/w o", "-i", "find", ".", "-fprint", "awk", "'{print > \"o\"}'",
]  # fmt: skip


def test_inputs_judged_read_only_write_nothing_when_bash_runs_them(
    tmp_path: Path,
) -> None:
    """Random soups of readers, writers and shell syntax: every one the classifier
    calls read-only is run by bash in an empty directory, which must stay as it was."""
    rng = random.Random(20261201)
    judged = 0
    for i in range(6000):
        source = "".join(rng.choice(SOUP) for _ in range(rng.randint(1, 8)))
        if not read_only_verdict(source).read_only:
            continue
        judged += 1
        work = tmp_path / str(i)
        work.mkdir()
        (work / "f").write_text("a\nx\n")
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(
                ["bash", "-c", source],
                cwd=work,
                capture_output=True,
                timeout=5,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        assert sorted(p.name for p in work.iterdir()) == ["f"], source
        assert (work / "f").read_text() == "a\nx\n", source
    assert judged >= 100
