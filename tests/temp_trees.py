"""Deep directory trees in tests: make them, remove them, and find the ones left behind.

pytest's own clean-up of old temp roots (``rm_rf``: ``shutil.rmtree``, one
Python frame per directory level on the Pythons this suite runs on) ends in a
`RecursionError` on a chain near 1,000 levels deep, and then every later
pytest run on the machine fails at exit. So a test that makes (or makes a tool
make) a deep tree removes it itself, with `remove_tree`, which never recurses;
the session check in ``tests/conftest.py`` (`too_deep`) fails the suite when a
test left one behind.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "MAX_LEFT_DEPTH",
    "make_chain",
    "remove_stuck_garbage",
    "remove_tree",
    "too_deep",
]

MAX_LEFT_DEPTH = 100
"""Deepest a tree left under the temp root may be (levels below it): well under
the recursion limit `shutil.rmtree` runs into (a tree 200 levels deep already
broke pytest's removal of old temp roots). A full run leaves none deeper than
100 (checked on 2026-12-03 with `too_deep(basetemp, 100)`)."""


def make_chain(root: Path, name: str, depth: int) -> None:
    """`depth` nested directories `name` under `root`, an ``f.py`` at the bottom.

    Made through directory descriptors: the full path may exceed PATH_MAX.
    """
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f.py", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)


def remove_tree(top: Path) -> None:
    """Delete the tree at `top`, of any depth, without recursing.

    Each subdirectory is first moved up beside `top` (a short path again), so
    no path grows past PATH_MAX and no call nests. Missing `top`: nothing to do.
    """
    if not os.path.lexists(top):
        return
    if not top.is_dir() or top.is_symlink():
        top.unlink()
        return
    pending, moved = [top], 0
    while pending:
        directory = pending.pop()
        directory.chmod(0o700)  # a test may have locked it; we own it
        with os.scandir(directory) as entries:
            children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for child, is_dir in children:
            if is_dir:
                moved += 1
                shallow = top.parent / f"{top.name}.up{moved}"
                os.rename(directory / child, shallow)
                pending.append(shallow)
            else:
                os.unlink(directory / child)
        os.rmdir(directory)


def too_deep(base: Path, bound: int = MAX_LEFT_DEPTH) -> list[str]:
    """The directories under `base` with a tree deeper than `bound` levels below them.

    Each offender is named once, by its path relative to `base` cut at three
    levels (``test_dir/ws/name``: the test that left it and where). Walked with directory
    descriptors (`os.fwalk`), pruned at `bound`, symlinks not followed.
    """
    offenders: dict[str, None] = {}
    start = len(Path(base).parts)
    for dirpath, dirnames, _files, _fd in os.fwalk(base, follow_symlinks=False):
        parts = Path(dirpath).parts[start:]
        if len(parts) >= bound and dirnames:
            offenders[os.path.join(*parts[:3])] = None
            dirnames.clear()
    return list(offenders)


def remove_stuck_garbage(temp_root: Path) -> list[str]:
    """Remove the ``garbage-*`` trees under `temp_root` that pytest cannot.

    pytest deletes an old numbered temp dir by renaming it ``garbage-<uuid>``
    and then `shutil.rmtree`; a tree too deep for that stays, and every later
    run on the machine retries it at exit and fails. A tree left so by an
    earlier run (before the session check below existed, or by another
    checkout's suite) is removed here, without recursing. Only trees deeper
    than `MAX_LEFT_DEPTH` are touched: a shallow garbage dir may be one
    another pytest run is deleting right now, and a tree another run is
    removing (it vanishes under us, or its moved-up pieces appear) is left to
    that run. Returns the names removed.
    """
    removed: list[str] = []
    if not temp_root.is_dir():
        return removed
    for entry in sorted(temp_root.glob("garbage-*")):
        if ".up" in entry.name:
            continue  # a piece another run's remove_tree moved up: that run owns it
        try:
            if entry.is_dir() and not entry.is_symlink() and too_deep(entry):
                remove_tree(entry)
                removed.append(entry.name)
        except OSError:  # another run on the machine is removing it at this moment
            continue
    return removed
