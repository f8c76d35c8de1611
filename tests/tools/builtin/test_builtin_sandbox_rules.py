"""Landlock's read rules for a confined call: what each entry beside the workspace gets.

A confined read-only call (issue 28) gets a read rule for every entry of every
folder above the workspace but the next one down. The entries are listed with
``os.scandir`` (the type from the listing, a link followed as ``os.path.isdir``
follows it) and the rules added through one reused attribute record: a spawn
under a crowded folder such as ``/tmp`` carries a thousand of them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolweave.tools.builtin.sandbox._confine import read_rules
from toolweave.tools.builtin.sandbox._landlock import (
    EXECUTE,
    FS_READ,
    READ_FILE,
    Ruleset,
    landlock_abi,
)

FILE_READ = EXECUTE | READ_FILE


@pytest.fixture
def beside() -> Iterator[Path]:
    """A workspace `ws` with a folder, a file and links of every kind beside it.

    Made right under /tmp, not in pytest's run directory: that holds one entry
    per test (thousands in a full run), past `MAX_ANCESTOR_ENTRIES`, where
    `read_rules` rightly gives None.
    """
    base = Path(tempfile.mkdtemp(prefix="tw-rules-", dir="/tmp")).resolve()
    try:
        yield _beside(base)
    finally:
        shutil.rmtree(base)


def _beside(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("x\n")
    (tmp_path / "to-folder").symlink_to(tmp_path / "folder")
    (tmp_path / "to-file").symlink_to(tmp_path / "file.txt")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    return (tmp_path / "ws").resolve()


def test_each_entry_beside_the_workspace_gets_the_right_of_its_type(
    beside: Path,
) -> None:
    rules = read_rules(beside, ())
    assert rules is not None
    got = {path: right for path, right in rules if Path(path).parent == beside.parent}
    here = beside.parent
    assert got == {
        str(here / "folder"): FS_READ,
        str(here / "to-folder"): FS_READ,  # a link is followed, as isdir does
        str(here / "file.txt"): FILE_READ,
        str(here / "to-file"): FILE_READ,
        str(here / "dangling"): FILE_READ,
        str(here / "loop"): FILE_READ,
    }
    assert str(beside) not in dict(rules)  # the workspace itself: never wholesale


def test_the_rights_are_those_isdir_gives_for_every_ancestor(beside: Path) -> None:
    rules = read_rules(beside, (str(beside / "a.py"),))
    assert rules is not None
    for path, right in rules:
        assert right == (FS_READ if os.path.isdir(path) else FILE_READ), path
    assert rules[-1] == (str(beside / "a.py"), FILE_READ)  # the declared read


def test_past_the_limit_reads_stay_wide(
    beside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolweave.tools.builtin.sandbox import _confine

    monkeypatch.setattr(_confine, "MAX_ANCESTOR_ENTRIES", 3)
    assert read_rules(beside, ()) is None


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock is not available")
def test_a_thousand_rules_build_and_a_bad_one_names_its_path(tmp_path: Path) -> None:
    for i in range(1_000):
        (tmp_path / f"f{i}").touch()
    rules = [(str(tmp_path / f"f{i}"), FILE_READ) for i in range(1_000)]
    rules.append((str(tmp_path / "missing"), FILE_READ))  # skipped, no error
    Ruleset(rules).close()
    with pytest.raises(OSError, match=r"landlock_add_rule\(.*f7\)"):
        Ruleset([(str(tmp_path / "f7"), FS_READ)])  # a folder's right on a file
