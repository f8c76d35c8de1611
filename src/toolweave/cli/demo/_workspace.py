"""The demo's workspace: a tiny Python project with one bug, in a real git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["DEMO_FILES", "make_workspace", "python_command"]

DEMO_FILES = {
    "README.md": "# calc\n\nA tiny statistics helper used by the toolweave demo.\n",
    "src/util.py": (
        "def clean(values):\n"
        '    """Drop missing values."""\n'
        "    return [v for v in values if v is not None]\n"
    ),
    "src/calc.py": (
        '"""Small statistics helpers."""\n'
        "\n"
        "from util import clean\n"
        "\n"
        "\n"
        "def total(values):\n"
        "    return sum(clean(values))\n"
        "\n"
        "\n"
        "def average(values):\n"
        "    values = clean(values)\n"
        "    # TODO: this only works for two values\n"
        "    return total(values) / 2\n"
    ),
    "tests/test_calc.py": (
        "import sys\n"
        "import unittest\n"
        "from pathlib import Path\n"
        "\n"
        'sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))\n'
        "\n"
        "from calc import average, total  # noqa: E402\n"
        "\n"
        "\n"
        "class CalcTest(unittest.TestCase):\n"
        "    def test_total(self):\n"
        "        self.assertEqual(total([1, 2, None, 3]), 6)\n"
        "\n"
        "    def test_average(self):\n"
        "        self.assertEqual(average([2, 4, 6]), 4)\n"
    ),
}
"""Path → content of the demo project."""

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "toolweave demo",
    "GIT_AUTHOR_EMAIL": "demo@toolweave.invalid",
    "GIT_COMMITTER_NAME": "toolweave demo",
    "GIT_COMMITTER_EMAIL": "demo@toolweave.invalid",
}


def python_command() -> str:
    """``python3`` if it is on PATH, else this interpreter's path."""
    return "python3" if shutil.which("python3") else sys.executable


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, **_GIT_ENV}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def make_workspace(root: Path) -> bool:
    """Write the demo project into `root` and commit it; False if git is missing.

    Raises:
        OSError: if the files cannot be written.
        subprocess.CalledProcessError: if git fails.
    """
    for relative, content in DEMO_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    if shutil.which("git") is None:
        return False
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "calc: total and average")
    _git(root, "commit", "-q", "--allow-empty", "-m", "docs: describe the project")
    return True
