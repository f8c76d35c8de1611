"""Is an operation inside what the call declared? The declaration audit's rules.

How `Access` keys name what the audit sees:

* **Paths.** ``fs:<absolute path>`` (``file:<absolute path>`` is the same) names
  a file or a directory and everything below a ``/`` of it; ``fs:`` alone
  names every path; ``*`` names everything. A write (open for
  write/append/create/truncate, remove, rename or replace — both ends —, mkdir,
  rmdir, chmod, chown, utime, truncate, xattrs, links, shutil's copies, moves
  and tree removals, ``sqlite3.connect`` of a file, a Unix socket's bind) must
  lie inside a declared *write* key, judged by the path it changes (see
  `_audit_ops`: a write through a symlink is a write of its target). Reads are
  not audited.
* **Processes.** Starting one (subprocess, ``os.system``, ``os.exec*``,
  ``os.posix_spawn``, ``os.fork``) needs a ``proc:`` key (read or write, e.g.
  ``proc:rg``), or a write of ``*``. What the child then does is out of sight.
* **Network.** A connect, ``sendto``/``sendmsg`` or a port's bind needs a
  ``net:`` key (read or write, e.g. ``net:example.com``), or a write of ``*``.
  Hosts are not matched: a connect sees an address, not the name looked up.
* A mkdir of a path that already exists changes nothing (it fails), so it is
  no write: ``os.makedirs(path, exist_ok=True)`` on existing directories passes.
* Every other key (``todo:``, ``db:users``) is opaque: the audit cannot see it.

A call with no declared access is checked against what the scheduler assumed
for it: a SAFE call reads everything (so it may write, spawn and connect
nothing), a SEQUENTIAL call is a barrier (it may do anything).

Three writes are never violations: ``/dev/null`` (subprocess opens it for a
child's unused streams), a scratch file the call created exclusively (O_EXCL,
as `tempfile.mkstemp` does) directly in the temporary directory or beside a
file it declares it writes (later writes, renames and removal of it included,
since nobody else could have seen it before; see `exclusive_is_private`;
one still there when the call ends, outside the temporary directory, is a
violation then: it was no scratch file),
and byte-code caches Python
writes when a module is imported (``__pycache__``). Operations of finalizers
(``__del__``, ``weakref.finalize``) are not the call's either: the garbage
collector runs them at any allocation, in whatever context is current.
"""

from __future__ import annotations

import functools
import os
import tempfile

from ..tools import Access, Concurrency
from ._audit_ops import Operation, path_key

__all__ = [
    "effective_access",
    "exclusive_is_private",
    "in_temp_dir",
    "rule_broken",
    "temp_dir",
]

_SEPARATORS = ("/", ":")
_PYCACHE = "/__pycache__"
_DEVICES = frozenset({"/dev/null"})


_READ_ALL = Access.read_all()
_BARRIER = Access.barrier()


def effective_access(concurrency: Concurrency, declared: Access | None) -> Access:
    """What the scheduler assumed: undeclared SAFE reads all, SEQUENTIAL is a barrier."""
    if declared is not None:
        return declared
    return _READ_ALL if concurrency is Concurrency.SAFE else _BARRIER


def _normal(key: str) -> str:
    """``file:`` spelled ``fs:``; a directory's trailing ``/`` dropped (``fs:/d/`` is ``fs:/d``)."""
    key = "fs:" + key[5:] if key.startswith("file:") else key
    if key.startswith("fs:/") and len(key) > 4:
        key = key.rstrip("/")  # the scheduler already treats both as one
    return key


def covers(outer: str, inner: str) -> bool:
    """True if key `outer` names `inner` (itself, or something below it).

    Below an ``fs:`` key means below a ``/`` only: ``fs:/a/b`` covers neither
    ``fs:/a/bc`` nor the file ``fs:/a/b:c`` beside it.
    """
    outer = _normal(outer)
    if outer in ("*", inner):
        return True
    separators = ("/",) if outer.startswith("fs:/") else _SEPARATORS
    return inner.startswith(outer) and (
        outer.endswith(separators) or inner[len(outer)] in separators
    )


@functools.cache
def temp_dir() -> str:
    """The temporary directory when the audit started (resolved).

    Taken once (the hook's installation asks first): a tool that later points
    `tempfile.tempdir` or ``TMPDIR`` at the workspace does not move it.
    """
    return os.path.realpath(tempfile.gettempdir())


def in_temp_dir(path: str) -> bool:
    """True for a path directly in the temporary directory (where mkstemp() puts files)."""
    return os.path.dirname(path) == temp_dir()


def exclusive_is_private(path: str, access: Access) -> bool:
    """May a file created with O_EXCL at `path` be the call's own scratch file?

    Only where scratch files go: directly in the temporary directory (what
    `tempfile.mkstemp()` picks), or beside a file the call declares it writes
    (the temp file of an atomic write, renamed over the target). Anywhere else
    a new file is a write like any other: other calls can see it (``open(p,
    "x")`` in a declared-read-only directory is a violation).
    """
    if not path.startswith("/"):  # unresolved: it could be anywhere
        return False
    if in_temp_dir(path):
        return True
    parent = os.path.dirname(path)
    return any(
        k.startswith(("fs:/", "file:/")) and os.path.dirname(_normal(k)[3:]) == parent
        for k in access.writes
    )


def _declares(access: Access, namespace: str) -> bool:
    """A key in `namespace` is read or written, or everything is written (a barrier)."""
    return access.is_barrier or any(
        k.startswith(namespace) for k in access.reads + access.writes
    )


def is_private(path: str, private: set[str]) -> bool:
    """True for a byte-code cache, /dev/null, or a path the call created exclusively."""
    if _PYCACHE + "/" in path or path.endswith(_PYCACHE) or path in _DEVICES:
        return True
    return any(path == p or path.startswith(p + "/") for p in private)


def rule_broken(
    op: Operation, concurrency: Concurrency, access: Access, private: set[str]
) -> str | None:
    """Why `op` breaks the declaration, or None when it is inside it."""
    safe_no_writes = concurrency is Concurrency.SAFE and not access.writes
    if op.kind == "spawn":
        if _declares(access, "proc:"):
            return None
        what = "started a process"
    elif op.kind == "connect":
        if _declares(access, "net:"):
            return None
        what = "opened a network connection"
    else:
        if is_private(op.target, private):
            return None
        key = path_key(op.target)
        if any(covers(k, key) for k in access.writes):
            return None
        what = f"wrote {key}"
    if safe_no_writes:
        return f"a SAFE call that declares no writes {what}"
    return f"the call {what}, which its declared access {_shown(access)} does not cover"


def _shown(access: Access) -> str:
    return f"(reads={list(access.reads)}, writes={list(access.writes)})"
