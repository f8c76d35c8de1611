"""The file tools (read, edit, write, glob) against the inputs a hostile model picks.

The promise under test: every bad input gets a clear error naming the problem
and the run goes on; no call hangs (a FIFO with no writer, a device) or loads an
unbounded amount (a 200 MB file, a 10 MB line); no path leaves the workspace.
The table is `CASES`: one row per (setup, call, expected outcome, what must hold
on disk afterwards). Hang cases carry a pytest-timeout guard, so a regression
fails instead of freezing the suite; the guarantee itself is by construction
(`open_regular` opens non-blocking and checks the open descriptor).
"""

from __future__ import annotations

import os
import re
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from builtin_support import run

import toolweave as tw
from temp_trees import make_chain, remove_tree, too_deep
from toolweave._exceptions import ToolError, ToolInputError, WorkspaceEscapeError
from toolweave.events import ToolResultReady
from toolweave.execution import PermissionMode
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall
from toolweave.models import ScriptedModel
from toolweave.tools import SessionState, Tool
from toolweave.tools.builtin import EditTool, GlobTool, ReadTool, WriteTool
from toolweave.tools.builtin._edit import MAX_EDIT_BYTES
from toolweave.tools.builtin._textfile import (
    MAX_SCAN_LINE_BYTES,
    SNIFF_BYTES,
    open_regular,
    reporting_os_errors,
)
from toolweave.tools.builtin._workspace import MAX_PATH_BYTES

pytestmark = pytest.mark.anyio

Setup = Callable[[Path, Path], None]


def _tools(root: Path) -> dict[str, Tool]:
    return {
        "read": ReadTool(root),
        "edit": EditTool(root),
        "write": WriteTool(root),
        "glob": GlobTool(root),
    }


@dataclass(frozen=True)
class Case:
    """One adversarial call: the tree it meets, the call, and what must come of it."""

    id: str
    setup: Setup
    tool: str
    args: dict[str, Any]
    error: type[Exception] | None
    """The error type expected, or None for a result."""
    match: str
    """A regex the error message (or the result) must contain."""
    reads: tuple[str, ...] = ()
    """Paths read first (the read-before-edit guard)."""
    after: Callable[[Path, Path], bool] = field(default=lambda root, outside: True)
    """What must hold on disk after the call (e.g. the file is unchanged)."""


def _nothing(root: Path, outside: Path) -> None:
    del root, outside


def _fifo(root: Path, outside: Path) -> None:
    os.mkfifo(root / "pipe")


def _link(target: str) -> Setup:
    def setup(root: Path, outside: Path) -> None:
        os.symlink(target.format(outside=outside), root / "link")

    return setup


def _file(name: str, data: bytes) -> Setup:
    def setup(root: Path, outside: Path) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return setup


def _both(*setups: Setup) -> Setup:
    def setup(root: Path, outside: Path) -> None:
        for one in setups:
            one(root, outside)

    return setup


def _dir(root: Path, outside: Path) -> None:
    (root / "d").mkdir()


def _loop(root: Path, outside: Path) -> None:
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")


def _unchanged(name: str, data: bytes) -> Callable[[Path, Path], bool]:
    return lambda root, outside: (root / name).read_bytes() == data


def _secret_intact(root: Path, outside: Path) -> bool:
    return (outside / "secret.txt").read_text() == "TOP SECRET\n" and not (
        outside / "new.txt"
    ).exists()


NOT_REGULAR = r"pipe is a named pipe \(FIFO\), not a regular file"
ESCAPE = "outside the workspace"
LONG = "a/" * 50_000

CASES = [
    # special files: refused at once, never opened in a blocking way
    Case("read-fifo", _fifo, "read", {"path": "pipe"}, ToolError, NOT_REGULAR),
    Case(
        "edit-fifo",
        _fifo,
        "edit",
        {"path": "pipe", "old_string": "a", "new_string": "b"},
        ToolError,
        "not a regular file|not been read",
    ),
    Case(
        "write-fifo",
        _fifo,
        "write",
        {"path": "pipe", "content": "x"},
        ToolError,
        "not a regular file",
        after=lambda r, o: (r / "pipe").is_fifo(),
    ),
    # links out of the workspace, to devices, /proc, a secret: refused before opening
    Case(
        "read-link-dev-zero",
        _link("/dev/zero"),
        "read",
        {"path": "link"},
        WorkspaceEscapeError,
        ESCAPE,
    ),
    Case(
        "read-link-dev-urandom",
        _link("/dev/urandom"),
        "read",
        {"path": "link"},
        WorkspaceEscapeError,
        ESCAPE,
    ),
    Case(
        "read-link-proc",
        _link("/proc/self/status"),
        "read",
        {"path": "link"},
        WorkspaceEscapeError,
        ESCAPE,
    ),
    Case(
        "read-link-out",
        _link("{outside}/secret.txt"),
        "read",
        {"path": "link"},
        WorkspaceEscapeError,
        ESCAPE,
    ),
    Case(
        "write-link-out",
        _link("{outside}/secret.txt"),
        "write",
        {"path": "link", "content": "x"},
        WorkspaceEscapeError,
        ESCAPE,
        after=_secret_intact,
    ),
    Case(
        "edit-link-out",
        _link("{outside}/secret.txt"),
        "edit",
        {"path": "link", "old_string": "TOP", "new_string": "x"},
        WorkspaceEscapeError,
        ESCAPE,
        after=_secret_intact,
    ),
    Case(
        "write-dangling-link-out",
        _link("{outside}/new.txt"),
        "write",
        {"path": "link", "content": "x"},
        WorkspaceEscapeError,
        ESCAPE,
        after=_secret_intact,
    ),
    Case(
        "glob-link-dir-out",
        _link("{outside}"),
        "glob",
        {"pattern": "*", "path": "link"},
        WorkspaceEscapeError,
        ESCAPE,
    ),
    Case(
        "glob-does-not-list-a-link-out",
        _link("{outside}/secret.txt"),
        "glob",
        {"pattern": "*"},
        None,
        "^No files match",
    ),
    Case(
        "read-dotdot",
        _dir,
        "read",
        {"path": "d/../../outside/secret.txt"},
        WorkspaceEscapeError,
        ESCAPE,
    ),
    Case("read-tilde", _nothing, "read", {"path": "~/x"}, WorkspaceEscapeError, ESCAPE),
    Case(
        "read-tilde-unknown-user",
        _nothing,
        "read",
        {"path": "~no_such_user_zz/x"},
        ToolInputError,
        "cannot expand '~'",
    ),
    Case(
        "read-dangling",
        _link("nowhere.txt"),
        "read",
        {"path": "link"},
        ToolError,
        "File not found: nowhere.txt",
    ),
    Case("read-loop", _loop, "read", {"path": "loop1"}, ToolInputError, "Symlink loop"),
    Case(
        "write-loop",
        _loop,
        "write",
        {"path": "loop1", "content": "x"},
        ToolInputError,
        "Symlink loop",
    ),
    # directories where a file is expected
    Case("read-dir", _dir, "read", {"path": "d"}, ToolInputError, "d is a directory"),
    Case(
        "edit-dir",
        _dir,
        "edit",
        {"path": "d", "old_string": "a", "new_string": "b"},
        ToolInputError,
        "d is a directory",
    ),
    Case(
        "write-dir",
        _dir,
        "write",
        {"path": "d", "content": "x"},
        ToolInputError,
        "d is a directory",
    ),
    Case(
        "write-root",
        _nothing,
        "write",
        {"path": ".", "content": "x"},
        ToolInputError,
        r"\. is a directory",
    ),
    Case(
        "write-under-a-file",
        _file("f.txt", b"x"),
        "write",
        {"path": "f.txt/g/h.txt", "content": "x"},
        ToolError,
        "f.txt is a file, not a directory",
    ),
    # paths no filesystem call can take: a short, clear message, no OS traceback text
    Case(
        "read-nul", _nothing, "read", {"path": "a\x00b"}, ToolInputError, "invalid path"
    ),
    Case(
        "read-100kb-path",
        _nothing,
        "read",
        {"path": LONG},
        ToolInputError,
        r"too long \(100,000 bytes",
    ),
    Case(
        "write-100kb-path",
        _nothing,
        "write",
        {"path": LONG + "x", "content": "x"},
        ToolInputError,
        "too long",
    ),
    Case(
        "glob-100kb-path",
        _nothing,
        "glob",
        {"pattern": "*", "path": LONG},
        ToolInputError,
        "too long",
    ),
    Case(
        "read-long-name",
        _nothing,
        "read",
        {"path": "n" * 300},
        ToolInputError,
        "a name over 255 bytes",
    ),
    Case(
        "read-lone-surrogate",
        _nothing,
        "read",
        {"path": "a\ud800b"},
        ToolInputError,
        "no file name can contain",
    ),
    Case(
        "read-non-utf8-name",
        _file(os.fsdecode(b"caf\xe9.txt"), b"hi\n"),
        "read",
        {"path": os.fsdecode(b"caf\xe9.txt")},
        None,
        "1\thi",
    ),
    # contents that are not UTF-8 text
    Case(
        "read-latin1-says-it-is-not-utf8",
        _file("l.txt", b"ok\ncaf\xe9\n"),
        "read",
        {"path": "l.txt"},
        None,
        r"^\[note: l.txt is not valid UTF-8 text.*\n.*1\tok\n.*2\tcaf\ufffd$",
    ),
    Case(
        "read-window-without-the-bad-line-has-no-note",
        _file("l.txt", b"caf\xe9\nok\n"),
        "read",
        {"path": "l.txt", "offset": 2},
        None,
        r"\A     2\tok\Z",
    ),
    Case(
        "read-long-utf8-line-cut-mid-character-is-valid",
        _file("u.txt", "é".encode() * 20_000 + b"\n"),
        "read",
        {"path": "u.txt"},
        None,
        r"\A     1\té+… \[line cut",
    ),
    Case(
        "read-a-real-replacement-character-is-no-note",
        _file("r.txt", "a\ufffdb\n".encode()),
        "read",
        {"path": "r.txt"},
        None,
        r"\A     1\ta\ufffdb\Z",
    ),
    Case(
        "read-latin1",
        _file("l.txt", b"caf\xe9\n"),
        "read",
        {"path": "l.txt"},
        None,
        "caf\ufffd",
    ),
    Case(
        "edit-latin1",
        _file("l.txt", b"caf\xe9\n"),
        "edit",
        {"path": "l.txt", "old_string": "caf", "new_string": "x"},
        ToolError,
        "not valid UTF-8",
        reads=("l.txt",),
        after=_unchanged("l.txt", b"caf\xe9\n"),
    ),
    Case(
        "read-utf16-bom",
        _file("u.txt", "hi\n".encode("utf-16")),
        "read",
        {"path": "u.txt"},
        ToolError,
        "UTF-16 text.*iconv",
    ),
    Case(
        "read-utf8-bom",
        _file("b.txt", b"\xef\xbb\xbfhi\n"),
        "read",
        {"path": "b.txt"},
        None,
        "1\t\ufeffhi",
    ),
    Case(
        "edit-utf8-bom-keeps-it",
        _file("b.txt", b"\xef\xbb\xbfhi\n"),
        "edit",
        {"path": "b.txt", "old_string": "hi", "new_string": "yo"},
        None,
        "replaced 1",
        reads=("b.txt",),
        after=_unchanged("b.txt", b"\xef\xbb\xbfyo\n"),
    ),
    Case(
        "read-binary",
        _file("x.bin", bytes(range(256))),
        "read",
        {"path": "x.bin"},
        ToolError,
        "binary file",
    ),
    Case(
        "read-empty",
        _file("e.txt", b""),
        "read",
        {"path": "e.txt"},
        None,
        r"\(empty file\)",
    ),
    Case(
        "edit-empty",
        _file("e.txt", b""),
        "edit",
        {"path": "e.txt", "old_string": "x", "new_string": "y"},
        ToolError,
        "was not found",
        reads=("e.txt",),
    ),
    # line endings: read hides the CR, so an LF old_string must still match
    Case(
        "edit-crlf-with-lf-old-string",
        _file("c.txt", b"a\r\nb\r\nc\r\n"),
        "edit",
        {"path": "c.txt", "old_string": "a\nb", "new_string": "A\nB\nB2"},
        None,
        "replaced 1",
        reads=("c.txt",),
        after=_unchanged("c.txt", b"A\r\nB\r\nB2\r\nc\r\n"),
    ),
    Case(
        "edit-lf-file-untouched-by-crlf-logic",
        _file("l.txt", b"a\nb\n"),
        "edit",
        {"path": "l.txt", "old_string": "a\nb", "new_string": "x\ny"},
        None,
        "replaced 1",
        reads=("l.txt",),
        after=_unchanged("l.txt", b"x\ny\n"),
    ),
    Case(
        "edit-lf-file-with-crlf-old-string",
        _file("l.txt", b"a\nb\n"),
        "edit",
        {"path": "l.txt", "old_string": "a\r\nb", "new_string": "x\r\ny"},
        None,
        "replaced 1",
        reads=("l.txt",),
        after=_unchanged("l.txt", b"x\ny\n"),
    ),
    # edit arguments
    Case(
        "edit-lone-surrogate-new-string",
        _file("s.txt", b"abc\n"),
        "edit",
        {"path": "s.txt", "old_string": "abc", "new_string": "a\ud800"},
        ToolInputError,
        "new_string holds '.ud800' at position 1, a lone surrogate",
        reads=("s.txt",),
        after=_unchanged("s.txt", b"abc\n"),
    ),
    Case(
        "write-lone-surrogate-content",
        _nothing,
        "write",
        {"path": "n.txt", "content": "\udcff"},
        ToolInputError,
        "content holds .* a lone surrogate",
        after=lambda root, outside: not (root / "n.txt").exists(),
    ),
    Case(
        "read-link-to-fifo-inside",
        _both(_fifo, _link("pipe")),
        "read",
        {"path": "link"},
        ToolError,
        NOT_REGULAR,
    ),
    Case(
        "read-link-to-dir-inside",
        _both(_dir, _link("d")),
        "read",
        {"path": "link"},
        ToolInputError,
        "d is a directory",
    ),
    Case(
        "edit-same-strings",
        _file("s.txt", b"abc\n"),
        "edit",
        {"path": "s.txt", "old_string": "abc", "new_string": "abc"},
        ToolInputError,
        "the same",
        reads=("s.txt",),
    ),
    Case(
        "edit-empty-old-string",
        _file("s.txt", b"abc\n"),
        "edit",
        {"path": "s.txt", "old_string": "", "new_string": "x"},
        ToolInputError,
        "at least 1 character",
        reads=("s.txt",),
    ),
    Case(
        "edit-not-unique",
        _file("s.txt", b"ab\nab\n"),
        "edit",
        {"path": "s.txt", "old_string": "ab", "new_string": "x"},
        ToolError,
        "matches 2 places",
        reads=("s.txt",),
        after=_unchanged("s.txt", b"ab\nab\n"),
    ),
    Case(
        "edit-replace-all-100k",
        _file("m.txt", b"ab\n" * 100_000),
        "edit",
        {"path": "m.txt", "old_string": "ab", "new_string": "cd", "replace_all": True},
        None,
        "replaced 100000 occurrences",
        reads=("m.txt",),
        after=_unchanged("m.txt", b"cd\n" * 100_000),
    ),
    Case(
        "edit-unread",
        _file("s.txt", b"abc\n"),
        "edit",
        {"path": "s.txt", "old_string": "abc", "new_string": "x"},
        ToolError,
        "has not been read",
        after=_unchanged("s.txt", b"abc\n"),
    ),
    # writes that create
    Case(
        "write-deep-new-dirs",
        _nothing,
        "write",
        {"path": "d/" * 200 + "f.txt", "content": "x"},
        None,
        "Created",
        after=lambda r, o: (r / ("d/" * 200 + "f.txt")).read_text() == "x",
    ),
    # glob: patterns for the root itself, absolute and climbing patterns
    Case(
        "glob-dot",
        _file("a.py", b""),
        "glob",
        {"pattern": "."},
        None,
        "^No files match",
    ),
    Case(
        "glob-doublestar-slash",
        _file("a.py", b""),
        "glob",
        {"pattern": "**/"},
        None,
        "^No files match",
    ),
    Case(
        "glob-doublestar", _file("a.py", b""), "glob", {"pattern": "**"}, None, "^a.py$"
    ),
    Case(
        "glob-absolute",
        _nothing,
        "glob",
        {"pattern": "/etc/*"},
        ToolInputError,
        "must be relative",
    ),
    Case(
        "glob-climbing",
        _nothing,
        "glob",
        {"pattern": "../*"},
        ToolInputError,
        "must be relative",
    ),
    Case(
        "glob-100kb-pattern-echo-is-cut",
        _nothing,
        "glob",
        {"pattern": "a" * 100_000},
        None,
        r"^No files match 'a{200}'…",
    ),
    Case(
        "glob-newline-in-name",
        _file("a\nb.py", b""),
        "glob",
        {"pattern": "*.py"},
        None,
        r'^"a\\nb.py"$',
    ),
]


DEEP_ENOUGH_TO_REMOVE = 100
"""Levels below the workspace from which a case's tree is removed after it."""


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_adversarial_table(
    case: Case, root: Path, outside: Path, state: SessionState
) -> None:
    case.setup(root, outside)
    tools = _tools(root)
    try:
        for path in case.reads:
            await run(tools["read"], {"path": path}, state)
        with anyio.fail_after(20):
            if case.error is None:
                out = await run(tools[case.tool], case.args, state)
                assert isinstance(out, str)
                assert len(out) < 20_000  # nothing huge echoed back
                assert re.search(case.match, out, flags=re.MULTILINE), out
            else:
                with pytest.raises(case.error, match=case.match) as info:
                    await run(tools[case.tool], case.args, state)
                assert len(str(info.value)) < 1_000  # a long path is not repeated whole
        assert case.after(root, outside)
    finally:
        # a deep tree a case made (write-deep-new-dirs: 200 levels) breaks pytest's
        # own removal of old temp roots in a later run: remove it here
        for deep in too_deep(root, DEEP_ENOUGH_TO_REMOVE):
            remove_tree(root / Path(deep).parts[0])


@pytest.mark.timeout(30)
async def test_open_regular_refuses_a_fifo_without_blocking(root: Path) -> None:
    """The mechanism itself, with no pre-check in front: no writer ever opens the pipe.

    A plain ``open()`` would block here forever; `open_regular` must return at
    once with an error (the timeout marker turns a regression into a failure).
    """
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="named pipe"):
        await anyio.to_thread.run_sync(open_regular, root / "pipe", "pipe")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=pytest.mark.skipif(
                not Path(f"/dev/{name}").exists(), reason=f"no /dev/{name} here"
            ),
        )
        for name in ("zero", "urandom", "null")
    ],
)
async def test_devices_are_refused_when_the_workspace_holds_them(
    name: str, state: SessionState
) -> None:
    """A workspace that *contains* devices (here /dev itself): not readable either."""
    with pytest.raises(ToolError, match="is a device, not a regular file"):
        await run(ReadTool("/dev"), {"path": name}, state)


@pytest.mark.timeout(30)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux-only")
async def test_a_proc_file_that_fails_to_read_is_an_error_result(
    state: SessionState,
) -> None:
    """/proc/self/mem passes as a regular file but fails on read: a ToolError."""
    with pytest.raises(ToolError, match=r"cannot read \d+/mem: Input/output error"):
        await run(ReadTool("/proc"), {"path": "self/mem"}, state)


@pytest.mark.timeout(60)
async def test_a_200mb_sparse_file_is_paged_by_read_and_refused_by_edit(
    root: Path, state: SessionState
) -> None:
    """Memory stays bounded: read pages, edit refuses on size before reading."""
    path = root / "huge.txt"
    with path.open("wb") as out:
        out.write(b"line\n" * 3000)  # text past the sniffed head, then a hole
        out.truncate(200 * 1024 * 1024)
    tracemalloc.start()
    try:
        page = await run(ReadTool(root), {"path": "huge.txt"}, state)
        with pytest.raises(ToolError, match="over the 16,777,216-byte limit of edit"):
            await run(
                EditTool(root),
                {"path": "huge.txt", "old_string": "line", "new_string": "x"},
                state,
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "  2000\tline" in page and "offset=2001" in page
    assert peak < 20 * 1024 * 1024, peak
    assert MAX_EDIT_BYTES < 200 * 1024 * 1024


async def test_a_10mb_line_is_cut_in_read_and_in_edits_snippet(
    root: Path, state: SessionState
) -> None:
    (root / "one.txt").write_bytes(b"x" * (10 * 1024 * 1024) + b"\n")
    page = await run(ReadTool(root), {"path": "one.txt"}, state)
    assert len(page) < 3_000 and "line cut" in page
    out = await run(
        EditTool(root),
        {"path": "one.txt", "old_string": "xx\n", "new_string": "y\n"},
        state,
    )
    assert out.startswith("Edited one.txt") and len(out) < 3_000
    assert (root / "one.txt").read_bytes().endswith(b"xy\n")


async def test_an_edits_snippet_of_a_huge_new_string_is_bounded(
    root: Path, state: SessionState
) -> None:
    (root / "s.txt").write_text("MARK\n")
    await run(ReadTool(root), {"path": "s.txt"}, state)
    new = "".join(f"line {i}\n" for i in range(50_000))
    out = await run(
        EditTool(root),
        {"path": "s.txt", "old_string": "MARK\n", "new_string": new},
        state,
    )
    assert len(out.splitlines()) <= 41
    assert (root / "s.txt").read_text() == new


async def test_edit_after_the_file_changed_or_vanished_since_the_read(
    root: Path, state: SessionState
) -> None:
    path = root / "a.txt"
    path.write_text("one\n")
    await run(ReadTool(root), {"path": "a.txt"}, state)
    path.write_text("one two\n")  # a different size: the fingerprint differs
    raw = {"path": "a.txt", "old_string": "one", "new_string": "1"}
    with pytest.raises(ToolError, match="changed on disk since you last read"):
        await run(EditTool(root), raw, state)
    assert path.read_text() == "one two\n"
    path.unlink()
    with pytest.raises(ToolError, match=r"File not found: a\.txt"):
        await run(EditTool(root), raw, state)
    assert not path.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_permission_denied_is_an_error_result(
    root: Path, state: SessionState
) -> None:
    (root / "locked.txt").write_text("x\n")
    (root / "locked.txt").chmod(0)
    (root / "closed").mkdir()
    (root / "closed" / "a.py").write_text("")
    (root / "closed").chmod(0)
    try:
        with pytest.raises(ToolError, match=r"cannot open locked\.txt: Permission"):
            await run(ReadTool(root), {"path": "locked.txt"}, state)
        out = await run(GlobTool(root), {"pattern": "*.py"}, state)
        assert "1 directory could not be listed" in out and "closed" in out
    finally:
        (root / "closed").chmod(0o755)


@pytest.mark.timeout(60)
async def test_glob_walks_a_1500_level_chain_without_recursing(
    root: Path, state: SessionState
) -> None:
    """An iterative walk: the old os.walk hit the recursion limit near 1000 levels."""
    try:
        make_chain(root, "d", 1500)
        out = await run(GlobTool(root), {"pattern": "*.py"}, state)
    finally:
        if (root / "d").exists():
            remove_tree(root / "d")
    assert out == "d/" * 1500 + "f.py"


@pytest.mark.timeout(60)
async def test_glob_names_directories_too_deep_to_list(
    root: Path, state: SessionState
) -> None:
    """A tree deeper than PATH_MAX: the part beyond is reported, not silently missing."""
    name = "n" * 200
    (root / "top.py").write_text("")
    try:
        make_chain(root, name, MAX_PATH_BYTES // 200 + 2)
        out = await run(GlobTool(root), {"pattern": "*.py"}, state)
    finally:
        if (root / name).exists():
            remove_tree(root / name)
    assert out.startswith("top.py\n[1 directory could not be listed")
    assert "File name too long" in out


@pytest.mark.timeout(120)
async def test_glob_over_50k_files_counts_and_caps(
    root: Path, state: SessionState
) -> None:
    wide = root / "wide"
    wide.mkdir()
    for i in range(50_000):
        (wide / f"f{i:05}.txt").touch()
    out = await run(GlobTool(root), {"pattern": "*.txt"}, state)
    lines = out.splitlines()
    assert lines[0] == "wide/f00000.txt" and lines[199] == "wide/f00199.txt"
    assert (
        lines[200] == "[49800 more matches not shown; narrow the pattern or the path]"
    )


def test_reporting_os_errors_gives_the_reason_and_a_cut_path() -> None:
    """The net under every file tool: an unexpected OSError is a short ToolError."""

    def fails() -> None:
        raise PermissionError(13, "Permission denied", "/very/long/" + "x" * 5000)

    with pytest.raises(ToolError) as info:
        reporting_os_errors(fails, "read", "y" * 5000)
    message = str(info.value)
    assert message.startswith("read 'yyy") and message.endswith(
        "failed: Permission denied"
    )
    assert len(message) < 300


def _call(i: int, name: str, **args: Any) -> ToolCall:
    return ToolCall(f"t{i}", name, args)


@pytest.mark.timeout(60)
async def test_a_whole_agent_run_survives_the_hostile_calls(
    root: Path, outside: Path
) -> None:
    """Through the real lifecycle: each bad call is an error result, the run completes.

    One turn holds the hostile calls (a FIFO nobody writes to, a link to
    /dev/zero, a write through a link out, a 100 KB path, a NUL, a directory);
    the next turn reads and edits a CRLF file with an LF old_string. The run
    must finish (no hang: `fail_after` and the timeout marker fail it otherwise)
    and leave the outside untouched.
    """
    os.mkfifo(root / "pipe")
    os.symlink("/dev/zero", root / "zero")
    os.symlink(outside / "secret.txt", root / "out")
    (root / "d").mkdir()
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    bad = [
        _call(1, "read", path="pipe"),
        _call(2, "read", path="zero"),
        _call(3, "write", path="out", content="pwned"),
        _call(4, "read", path="a/" * 50_000),
        _call(5, "glob", pattern="*", path="x\x00y"),
        _call(6, "edit", path="pipe", old_string="a", new_string="b"),
        _call(7, "read", path="d"),
        _call(8, "read", path="crlf.txt"),
    ]
    script = [
        ModelResponse(bad, stop_reason=StopReason.TOOL_USE),
        ModelResponse(
            [
                _call(
                    9, "edit", path="crlf.txt", old_string="one\ntwo", new_string="1\n2"
                )
            ],
            stop_reason=StopReason.TOOL_USE,
        ),
        ModelResponse([Text("done")]),
    ]
    agent = tw.Agent(
        ScriptedModel(script),
        tw.tools.coding_tools(root),
        config=tw.AgentConfig(workspace=root, permission_mode=PermissionMode.BYPASS),
    )
    events: list[object] = []
    with anyio.fail_after(45):
        async for event in agent.run_stream("go"):
            events.append(event)
    finished = events[-1]
    assert isinstance(finished, tw.events.RunFinished)
    assert finished.reason is tw.CompletionReason.COMPLETED
    results = {
        e.result.call_id: e.result for e in events if isinstance(e, ToolResultReady)
    }
    expected_errors = {
        "t1": "named pipe",
        "t2": "outside the workspace",
        "t3": "outside the workspace",
        "t4": "too long",
        "t5": "invalid path",
        "t6": "not a regular file|not been read",
        "t7": "is a directory",
    }
    for call_id, pattern in expected_errors.items():
        assert results[call_id].is_error, results[call_id]
        assert re.search(pattern, results[call_id].text), results[call_id].text
        assert len(results[call_id].text) < 1_000
    assert not results["t8"].is_error and not results["t9"].is_error, results
    assert (root / "crlf.txt").read_bytes() == b"1\r\n2\r\n"
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


@pytest.mark.timeout(30)
async def test_a_64gib_sparse_line_is_not_scanned_to_its_end(
    root: Path, state: SessionState
) -> None:
    """A sparse file costs no disk: one 'line' of 64 GiB of NULs after a text head.

    Scanning it to its end took minutes; `iter_lines` stops after
    `MAX_SCAN_LINE_BYTES` and says the file is not read past it.
    """
    path = root / "sparse.txt"
    with path.open("wb") as out:
        out.write(b"head\n" + b"t" * SNIFF_BYTES)  # text past the sniffed head
        try:
            out.truncate(64 * 1024**3)
        except OSError as exc:  # a filesystem without large sparse files
            pytest.skip(f"cannot make a 64 GiB sparse file here: {exc}")
    out_text = await run(ReadTool(root), {"path": "sparse.txt"}, state)
    assert out_text.startswith("     1\thead\n     2\ttttt")
    assert f"over {MAX_SCAN_LINE_BYTES:,} bytes; the file is not read past it" in (
        out_text
    )
    assert len(out_text) < 5_000


class _Stop(Exception):
    """Stands in for the backend's cancellation in the check below."""


def test_a_deep_page_stops_at_the_cancellation_check_and_records_nothing(
    root: Path, state: SessionState
) -> None:
    """The scan calls its check while it goes: at a deadline it ends, ledger untouched.

    Without the check an abandoned thread would scan on to the requested
    offset (through 100 GB, if the file has them) after its call was answered.
    """
    (root / "many.txt").write_bytes(b"x\n" * 200_000)
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise _Stop

    with pytest.raises(_Stop):
        ReadTool(root).read_sync(
            {"path": "many.txt", "offset": 199_999, "limit": None, "force": False},
            state,
            check=check,
        )
    assert calls == 3
    assert state.read_files.get(root / "many.txt") is None
