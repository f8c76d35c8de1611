from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolweave._exceptions import ToolInputError, WorkspaceEscapeError
from toolweave.tools.builtin import Workspace


def test_relative_and_absolute_paths_inside_resolve(root: Path) -> None:
    (root / "src").mkdir()
    ws = Workspace(root)
    assert ws.resolve("src/a.py") == root / "src" / "a.py"
    assert ws.resolve(str(root / "src")) == root / "src"
    assert ws.resolve("src/../b.txt") == root / "b.txt"  # `..` that stays inside
    assert ws.resolve(".") == root
    assert ws.relative(root) == "."
    assert ws.relative(root / "src" / "a.py") == "src/a.py"
    assert Workspace.key(root / "src") == f"fs:{root}/src"


@pytest.mark.parametrize(
    "path", ["..", "../outside/secret.txt", "src/../../x", "/etc/passwd"]
)
def test_paths_leading_out_are_refused(root: Path, outside: Path, path: str) -> None:
    with pytest.raises(WorkspaceEscapeError, match="outside the workspace"):
        Workspace(root).resolve(path)


def test_home_is_outside(root: Path) -> None:
    with pytest.raises(WorkspaceEscapeError):
        Workspace(root).resolve("~/anything")


def test_symlinks_leading_out_are_refused(root: Path, outside: Path) -> None:
    (root / "to_file").symlink_to(outside / "secret.txt")
    (root / "to_dir").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    ws = Workspace(root)
    for path in ("to_file", "to_dir/secret.txt", "to_dir", "dangling"):
        with pytest.raises(WorkspaceEscapeError):
            ws.resolve(path)


def test_symlink_inside_resolves_to_its_target(root: Path) -> None:
    (root / "real.txt").write_text("x")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert Workspace(root).resolve("alias.txt") == root / "real.txt"


def test_bad_paths_are_input_errors(root: Path) -> None:
    ws = Workspace(root)
    (root / "loop").symlink_to(root / "loop")
    for path in ("", "   ", "a\x00b", "loop/x"):
        with pytest.raises((ToolInputError, WorkspaceEscapeError)):
            ws.resolve(path)


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("")
    with pytest.raises(NotADirectoryError):
        Workspace(file)
    with pytest.raises(FileNotFoundError):
        Workspace(tmp_path / "missing")


def test_root_given_through_a_symlink_is_resolved(tmp_path: Path, root: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(root)
    ws = Workspace(link)
    assert ws.root == root
    assert ws.resolve(os.fspath(link / "a")) == root / "a"
