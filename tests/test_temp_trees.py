"""The suite's temp clean-up: deep trees are found and removed without recursing.

The session check in ``conftest.py`` relies on `too_deep`; the tests that make
deep trees rely on `remove_tree`. Both are shown on real trees here, deeper
than the recursion limit and longer than PATH_MAX.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from temp_trees import (
    MAX_LEFT_DEPTH,
    make_chain,
    remove_stuck_garbage,
    remove_tree,
    too_deep,
)


def test_a_tree_deeper_than_the_recursion_limit_is_found_and_removed(
    tmp_path: Path,
) -> None:
    depth = sys.getrecursionlimit() + 500
    top = tmp_path / "pytest-9" / "test_x0"
    top.mkdir(parents=True)
    make_chain(top, "a", depth)
    (top / "shallow").mkdir()
    assert too_deep(tmp_path) == [os.path.join("pytest-9", "test_x0", "a")]
    remove_tree(top / "a")
    assert not (top / "a").exists()
    assert [p.name for p in top.iterdir()] == ["shallow"]  # nothing else touched
    assert too_deep(tmp_path) == []


def test_a_tree_within_the_bound_is_not_reported_and_rmtree_removes_it(
    tmp_path: Path,
) -> None:
    make_chain(tmp_path, "a", MAX_LEFT_DEPTH - 1)
    assert too_deep(tmp_path) == []
    shutil.rmtree(tmp_path / "a")  # what pytest's own clean-up does
    assert not (tmp_path / "a").exists()


@pytest.mark.timeout(60)
def test_a_tree_past_path_max_with_a_locked_directory_is_removed(
    tmp_path: Path,
) -> None:
    name = "n" * 200
    make_chain(tmp_path, name, 4096 // 200 + 5)
    (tmp_path / name).chmod(0o500)  # read-only: its child cannot be unlinked as is
    remove_tree(tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_remove_tree_of_a_file_a_symlink_or_nothing(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    make_chain(target, "d", 3)
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "file").write_text("x")
    remove_tree(tmp_path / "link")  # the link goes, never what it points to
    remove_tree(tmp_path / "file")
    remove_tree(tmp_path / "missing")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]
    assert (target / "d" / "d" / "d" / "f.py").exists()


def test_a_stuck_garbage_tree_from_an_earlier_run_is_removed_and_others_are_kept(
    tmp_path: Path,
) -> None:
    stuck = tmp_path / "garbage-1111"
    stuck.mkdir()
    make_chain(stuck, "a", sys.getrecursionlimit() + 500)
    shallow = tmp_path / "garbage-2222"  # maybe another run deleting it now
    shallow.mkdir()
    make_chain(shallow, "a", 3)
    piece = tmp_path / "garbage-3333.up5"  # moved up by another run's remove_tree
    piece.mkdir()
    make_chain(piece, "a", MAX_LEFT_DEPTH + 5)
    live = tmp_path / "pytest-7"  # a numbered root: pytest's own, not garbage
    live.mkdir()
    make_chain(live, "a", MAX_LEFT_DEPTH + 5)
    try:
        with pytest.raises(RecursionError):
            shutil.rmtree(stuck)  # what made every later run fail at exit
        assert remove_stuck_garbage(tmp_path) == ["garbage-1111"]
        kept = sorted(p.name for p in tmp_path.iterdir())
        assert kept == ["garbage-2222", "garbage-3333.up5", "pytest-7"]
    finally:
        remove_tree(stuck)
        remove_tree(piece)
        remove_tree(live)
    assert remove_stuck_garbage(tmp_path / "missing") == []
