"""Every optional feature, used without its extra, says which extra to install.

Each case runs in a fresh interpreter with the extra's packages made
unimportable, in both ways a package can be missing: a meta-path finder that
finds nothing for it (as when it was never installed) and ``sys.modules[name] =
None`` (Python's own "import of X halted"). What the user sees is checked as
they would see it: the last line of the traceback, or the CLI's one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from extras import EXTRA_MODULES

BLOCK_BY_FINDER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
"""

BLOCK_BY_NONE = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None
"""

BLOCKERS = {"finder": BLOCK_BY_FINDER, "sys.modules": BLOCK_BY_NONE}

INTEGRATIONS = [
    # (module, the packages to block, the extra it must name)
    ("toolweave.integrations.langgraph", ["langgraph"], "langgraph"),
    ("toolweave.integrations.langgraph", ["langchain_core"], "langgraph"),
    ("toolweave.integrations.pydantic_ai", ["pydantic_ai"], "pydantic-ai"),
    ("toolweave.integrations.openai_agents", ["agents"], "openai-agents"),
]


def _python(
    code: str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("blocker", sorted(BLOCKERS))
@pytest.mark.parametrize(("module", "blocked", "extra"), INTEGRATIONS)
def test_importing_an_integration_without_its_extra_names_the_extra(
    module: str, blocked: list[str], extra: str, blocker: str
) -> None:
    done = _python(BLOCKERS[blocker].format(blocked=blocked) + f"import {module}\n")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("toolweave._exceptions.MissingExtraError: "), done.stderr
    assert f"pip install 'toolweave[{extra}]'" in last
    # who needs what, and what is missing (the blocked package, or another of
    # the extra's when that one is absent here too: it is imported first)
    assert module in last
    assert any(repr(name) in last for name in EXTRA_MODULES[extra]), last
    assert "No module named" not in last


@pytest.mark.parametrize(("module", "blocked", "extra"), INTEGRATIONS)
def test_the_error_is_still_an_import_error_and_a_usage_error(
    module: str, blocked: list[str], extra: str
) -> None:
    """Code probing for a feature with ``except ImportError`` keeps working."""
    code = BLOCK_BY_FINDER.format(blocked=blocked) + (
        "import toolweave as tw\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    assert isinstance(exc, ModuleNotFoundError) and isinstance(exc, tw.UsageError)\n"
        "    assert isinstance(exc, tw.MissingExtraError)\n"
        f"    assert exc.extra == {extra!r}, exc.extra\n"
        f"    assert exc.name in {EXTRA_MODULES[extra]!r}, exc.name\n"
        "    print('caught')\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "caught"


def test_a_package_of_another_version_gets_the_same_advice() -> None:
    """An ImportError that is not a missing module (a name the installed release
    lacks) is told as such, with the extra that pins the right release."""
    code = """
import importlib.abc, sys
class OldRelease(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "agents":
            raise ImportError("cannot import name 'FunctionTool' from 'agents'")
        return None
sys.meta_path.insert(0, OldRelease())
import toolweave.integrations.openai_agents
"""
    done = _python(code)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("toolweave._exceptions.MissingExtraError: "), done.stderr
    assert "cannot import name 'FunctionTool'" in last
    assert "pip install 'toolweave[openai-agents]'" in last


def test_ray_work_without_ray_names_the_extra() -> None:
    code = BLOCK_BY_FINDER.format(blocked=["ray"]) + (
        "import anyio, toolweave as tw\n"
        "from toolweave.cluster import connect_ray\n"
        "async def main():\n"
        "    async with connect_ray():\n"
        "        pass\n"
        "try:\n"
        "    anyio.run(main)\n"
        "except tw.MissingExtraError as exc:\n"
        "    print(exc.extra, '|', exc)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    extra, _, message = done.stdout.strip().partition(" | ")
    assert extra == "ray"
    assert "pip install 'toolweave[ray]'" in message and "'ray'" in message


def test_toolweave_batch_with_ray_but_no_ray_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    """The CLI's real entry point: one line naming the extra, exit 2, no traceback."""
    steps = {"name": "s", "steps": [{"text": "an answer"}]}
    tasks = tmp_path / "tasks.jsonl"
    line = {
        "id": "t1",
        "prompt": "p",
        "workspace": str(tmp_path),
        "model": "scripted:" + json.dumps(steps),
    }
    tasks.write_text(json.dumps(line) + "\n")
    code = BLOCK_BY_FINDER.format(blocked=["ray"]) + (
        "from toolweave.cli import main\nmain()\n"
    )
    done = _python(
        code,
        *["batch", str(tasks), "--tools", "none", "--ray", "--no-store"],
        "--no-progress",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert any("pip install 'toolweave[ray]'" in text for text in lines), lines


def test_a_ray_client_address_without_ray_client_names_what_to_install(
    tmp_path: Path,
) -> None:
    """``--ray-address ray://...`` with Ray but not Ray Client (grpcio): one line, exit 2."""
    from extras import require_extra

    require_extra("ray")
    steps = {"name": "s", "steps": [{"text": "an answer"}]}
    tasks = tmp_path / "tasks.jsonl"
    line = {"id": "t1", "prompt": "p", "model": "scripted:" + json.dumps(steps)}
    tasks.write_text(json.dumps(line) + "\n")
    code = BLOCK_BY_FINDER.format(blocked=["grpc"]) + (
        "from toolweave.cli import main\nmain()\n"
    )
    done = _python(
        code,
        *["batch", str(tasks), "--tools", "none", "--no-store", "--no-progress"],
        *["--ray-address", "ray://127.0.0.1:1"],
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    text = " ".join(done.stderr.split())
    assert "joining ray://127.0.0.1:1 (Ray Client) needs ray[client]" in text
    assert "pip install 'toolweave[ray]'" in text
