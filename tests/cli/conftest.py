"""CLI fixtures: a private TOOLWEAVE_HOME, and trio on its real clock.

The CLI drives real subprocesses, worker threads and SQLite under deadlines;
trio's autojump MockClock would jump to those deadlines whenever everything
waits on real I/O, so here trio runs on its real clock (as in the built-in
tool tests).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio on its real clock (see the module docstring)."""
    return request.param


@pytest.fixture(autouse=True)
def home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh TOOLWEAVE_HOME per test: the real ~/.toolweave is never touched."""
    path = tmp_path_factory.mktemp("toolweave-home")
    monkeypatch.setenv("TOOLWEAVE_HOME", str(path))
    for name in ("TOOLWEAVE_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    return path


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory (a git root), made the working directory."""
    path = (tmp_path / "project").resolve()
    path.mkdir()
    (path / ".git").mkdir()  # the project boundary for toolweave.toml lookup
    monkeypatch.chdir(path)
    return path
