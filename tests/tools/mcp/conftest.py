"""Fixtures for the MCP tests: real servers, a real git repository, real clocks."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
NPM_CACHE = REPO_ROOT / ".cache" / "mcp-npm"
FS_PACKAGE = "@modelcontextprotocol/server-filesystem"
FS_VERSION = "2026.8.31"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio with its *real* clock.

    These tests talk to real server processes. Under trio's autojump MockClock
    every wait on a pipe or socket lets virtual time jump to the next deadline,
    so each startup timeout (and the SDK's shutdown grace periods) would expire
    at once. Nothing here asserts a duration, so real time costs nothing.
    """
    return request.param


def _installed_version(entry: Path) -> str | None:
    manifest = entry.parents[1] / "package.json"
    if not manifest.exists():
        return None
    version = json.loads(manifest.read_text())["version"]
    return str(version)


@pytest.fixture(scope="session")
def fs_server_js() -> Path:
    """The npm filesystem server's entry point, installed once into .cache/mcp-npm."""
    entry = NPM_CACHE / "node_modules" / FS_PACKAGE / "dist" / "index.js"
    if _installed_version(entry) != FS_VERSION:
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            pytest.fail("node and npm are needed for the filesystem MCP server")
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", f"{FS_PACKAGE}@{FS_VERSION}"],
            cwd=NPM_CACHE,
            check=True,
            capture_output=True,
            timeout=110,
        )
    return entry


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real git repository with two committed files."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("alpha\n")
    (repo / "b.txt").write_text("beta\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "a.txt", "b.txt")
    _git(repo, "commit", "-q", "-m", "first commit")
    return repo
