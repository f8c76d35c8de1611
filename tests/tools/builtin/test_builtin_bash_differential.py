"""Differential check of the parser against bash itself.

Fragments that tokenize differently in tree-sitter and bash (heredocs,
backslash-newlines, backticks, comments, quotes, carriage returns) are glued
around a marker command. Whenever the parser accepts an input but shows no
command that could be the marker, bash must not run it either: otherwise a
command would be hidden from the classifier and from permission rules. The
marker prints ``RAN`` without that text appearing in its source.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

from toolweave.tools.builtin._bash_parse import Unparsed, parse_script
from toolweave.tools.builtin._bash_rules import command_parts

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
