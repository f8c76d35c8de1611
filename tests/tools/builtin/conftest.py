"""Fixtures for the built-in tool tests.

These tests drive real subprocesses, sockets and worker threads under
deadlines (a bash timeout, an HTTP time limit). trio's autojump MockClock jumps
to the next deadline whenever every task waits on real I/O, so those deadlines
would fire at once: here the trio backend runs on its real clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolweave.tools import SessionState


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio on its real clock (see the module docstring)."""
    return request.param


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace directory."""
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret file."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("TOP SECRET\n")
    return path.resolve()


@pytest.fixture
def state(root: Path) -> SessionState:
    """A fresh session state over the workspace."""
    return SessionState(workspace=root)
