"""What an audit event does: the write, spawn or connect behind one PEP 578 event.

`classify_event` maps an audit event name and its arguments to the operations
the declaration audit checks, or to nothing for the (many) events it ignores.
Paths are made absolute the way the kernel will see them: relative to the
working directory, or to the directory a ``dir_fd`` names (read back from
``/proc/self/fd``), with the parent resolved through symlinks. The last
component is resolved too for operations that follow it (an open for write,
chmod, chown, utime, truncate, xattrs: writing through a link writes its
target), and kept as given for those that do not (removing or renaming a
symlink changes the link, not its target).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["AUDITED_EVENTS", "Operation", "classify_event", "path_key"]

OpKind = Literal["write", "spawn", "connect"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EXCLUSIVE = os.O_CREAT | os.O_EXCL
_UNRESOLVED = "<unresolved path>"


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation an audit event performs."""

    kind: OpKind
    """``write`` (a file system change), ``spawn`` (a new process) or ``connect``."""
    action: str
    """The audit event, e.g. ``open``, ``os.remove``, ``subprocess.Popen``."""
    target: str
    """The absolute path, the command, or the address."""
    exclusive: bool = False
    """A file created with O_EXCL, or a new directory: nothing was there before."""


Classifier: TypeAlias = Callable[[tuple[object, ...]], tuple[Operation, ...]]


def path_key(path: str) -> str:
    """The resource key of an absolute path: ``fs:<path>``."""
    return "fs:" + path


def _fspath(path: object, dir_fd: object = None, *, follow: bool = False) -> str:
    """The absolute path `path` (relative to `dir_fd` if given) names.

    With `follow`, a symlink in the last component is resolved as well: the
    path the operation really changes when it follows links.
    """
    if isinstance(path, int) and not isinstance(path, bool):
        return _fd_path(path)
    try:
        raw = os.fsdecode(os.fspath(path))  # type: ignore[call-overload]
    except TypeError:
        return _UNRESOLVED
    if not os.path.isabs(raw):
        base = (
            _fd_path(dir_fd) if isinstance(dir_fd, int) and dir_fd >= 0 else os.getcwd()
        )
        if base == _UNRESOLVED:
            return base
        raw = os.path.join(base, raw)
    if follow:
        return os.path.realpath(raw)
    head, tail = os.path.split(os.path.normpath(raw))
    return os.path.join(os.path.realpath(head), tail) if tail else raw


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return _UNRESOLVED


def _write(
    action: str, path: object, dir_fd: object = None, *, follow: bool = False
) -> tuple[Operation, ...]:
    return (Operation("write", action, _fspath(path, dir_fd, follow=follow)),)


def _open(args: tuple[object, ...]) -> tuple[Operation, ...]:
    path, mode, flags = args[0], args[1], args[2]
    if isinstance(flags, int) and flags >= 0:
        writes = bool(flags & _WRITE_FLAGS)
        exclusive = flags & _EXCLUSIVE == _EXCLUSIVE
    else:  # no flags reported: judge by the mode string
        text = mode if isinstance(mode, str) else ""
        writes = any(c in text for c in "wax+")
        exclusive = "x" in text
    if not writes or (isinstance(path, int) and not isinstance(path, bool)):
        return ()  # a read, or an fd already opened (its open was audited then)
    if mode is None and isinstance(path, str | bytes) and not os.path.isabs(path):
        # os.open does not report its dir_fd: the directory is unknown (fail closed)
        shown = os.fsdecode(path)
        return (
            Operation("write", "open", f"<{shown} relative to an unknown directory>"),
        )
    # O_EXCL refuses a symlink in the last component, so following it is exact
    return (
        Operation("write", "open", _fspath(path, follow=True), exclusive=exclusive),
    )


def _mkdir(args: tuple[object, ...]) -> tuple[Operation, ...]:
    """A mkdir of a path that exists changes nothing (it fails): not a write."""
    dir_fd = args[2] if len(args) > 2 else None
    target = _fspath(args[0], dir_fd)
    if os.path.lexists(target):
        return ()
    # it only succeeds if nothing was there: as new as an O_EXCL file (mkdtemp)
    return (Operation("write", "os.mkdir", target, exclusive=True),)


def _pair(action: str) -> Classifier:
    """Both the source and the destination change (rename, replace, move)."""

    def classify(args: tuple[object, ...]) -> tuple[Operation, ...]:
        src_fd = args[2] if len(args) > 2 else None
        dst_fd = args[3] if len(args) > 3 else None
        return (
            Operation("write", action, _fspath(args[0], src_fd)),
            Operation("write", action, _fspath(args[1], dst_fd)),
        )

    return classify


def _dst(action: str, dir_fd_at: int | None = None) -> Classifier:
    """Only the destination (args[1]) changes: copies, links."""

    def classify(args: tuple[object, ...]) -> tuple[Operation, ...]:
        dir_fd = (
            args[dir_fd_at] if dir_fd_at is not None and len(args) > dir_fd_at else None
        )
        return _write(action, args[1], dir_fd)

    return classify


def _first(
    action: str, dir_fd_at: int | None = None, *, follow: bool = False
) -> Classifier:
    """args[0] is the path that changes (args[dir_fd_at] its dir_fd, if any).

    `follow`: the operation follows a symlink in the last component unless
    ``follow_symlinks=False`` was given, which the event does not say: both the
    link and what it points to are judged when they differ.
    """

    def classify(args: tuple[object, ...]) -> tuple[Operation, ...]:
        dir_fd = (
            args[dir_fd_at] if dir_fd_at is not None and len(args) > dir_fd_at else None
        )
        ops = _write(action, args[0], dir_fd)
        if follow:
            resolved = _write(action, args[0], dir_fd, follow=True)
            if resolved != ops:
                ops += resolved
        return ops

    return classify


def _command(args: object) -> str:
    if isinstance(args, str | bytes):
        return os.fsdecode(args)
    if isinstance(args, list | tuple):
        return " ".join(
            os.fsdecode(a) if isinstance(a, str | bytes) else str(a) for a in args
        )
    return repr(args)


def _spawn(action: str, at: int) -> Classifier:
    def classify(args: tuple[object, ...]) -> tuple[Operation, ...]:
        shown = _command(args[at]) if len(args) > at else ""
        return (Operation("spawn", action, shown),)

    return classify


def _popen(args: tuple[object, ...]) -> tuple[Operation, ...]:
    executable, argv = args[0], args[1]
    shown = _command(argv) if argv is not None else _command(executable)
    return (Operation("spawn", "subprocess.Popen", shown),)


def _address(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    if isinstance(address, bytes):
        return os.fsdecode(address)
    return str(address)


def _connect(action: str) -> Classifier:
    def classify(args: tuple[object, ...]) -> tuple[Operation, ...]:
        if args[1] is None:  # sendmsg on a connected socket: its connect was seen
            return ()
        return (Operation("connect", action, _address(args[1])),)

    return classify


def _bind(args: tuple[object, ...]) -> tuple[Operation, ...]:
    """A Unix socket's bind creates a file; any other bind takes a network port."""
    address = args[1]
    if isinstance(address, str | bytes) and address[:1] not in ("\0", b"\0", "", b""):
        return _write("socket.bind", address)
    return (Operation("connect", "socket.bind", _address(address)),)


_SQLITE_READ_ONLY = frozenset({"ro", "memory"})


def _sqlite(args: tuple[object, ...]) -> tuple[Operation, ...]:
    """sqlite3.connect: the database is opened read-write (created if missing).

    ``:memory:`` and ``""`` touch no file. A ``file:`` URI is judged by its
    path and ``mode`` (``ro`` and ``memory`` write nothing); whether
    ``uri=True`` was given the event does not say, so a read-only URI is also
    judged as the literal file name sqlite would create without it.
    """
    try:
        name = os.fsdecode(os.fspath(args[0]))  # type: ignore[call-overload]
    except TypeError:
        return (Operation("write", "sqlite3.connect", _UNRESOLVED),)
    if name in ("", ":memory:"):
        return ()
    if not name.startswith("file:"):
        return _write("sqlite3.connect", name, follow=True)
    uri = urllib.parse.urlsplit(name)
    modes = urllib.parse.parse_qs(uri.query).get("mode", ["rwc"])
    if all(m in _SQLITE_READ_ONLY for m in modes):
        literal = _fspath(name, follow=True)
        parent = os.path.dirname(literal)
        if os.path.isdir(parent):  # only then could uri=False create it
            return (Operation("write", "sqlite3.connect", literal),)
        return ()
    path = urllib.parse.unquote(uri.path)
    if not path:
        return (Operation("write", "sqlite3.connect", _UNRESOLVED),)
    return _write("sqlite3.connect", path, follow=True)


_CTYPES_SPAWN = frozenset(
    [
        "system",
        "popen",
        "fork",
        "vfork",
        "clone",
        "clone3",
        "syscall",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execlp",
        "execle",
        "fexecve",
        "posix_spawn",
        "posix_spawnp",
    ]
)
_CTYPES_CONNECT = frozenset(["connect", "sendto", "sendmsg", "sendmmsg", "bind"])
_CTYPES_WRITE = frozenset(
    [
        "open",
        "open64",
        "openat",
        "openat64",
        "openat2",
        "creat",
        "creat64",
        "fopen",
        "fopen64",
        "freopen",
        "unlink",
        "unlinkat",
        "remove",
        "rename",
        "renameat",
        "renameat2",
        "mkdir",
        "mkdirat",
        "rmdir",
        "chmod",
        "fchmod",
        "fchmodat",
        "chown",
        "lchown",
        "fchown",
        "fchownat",
        "truncate",
        "truncate64",
        "ftruncate",
        "ftruncate64",
        "link",
        "linkat",
        "symlink",
        "symlinkat",
        "mknod",
        "mknodat",
        "mkfifo",
        "mkfifoat",
        "utime",
        "utimes",
        "utimensat",
        "futimens",
        "futimes",
        "setxattr",
        "lsetxattr",
        "fsetxattr",
        "removexattr",
        "lremovexattr",
        "fremovexattr",
    ]
)


def _ctypes(args: tuple[object, ...]) -> tuple[Operation, ...]:
    """A C function looked up by name (``libc.system``): judged by what it does.

    The audit cannot see a foreign call's arguments, so a file function names
    no path (only ``fs:`` or ``*`` covers it), and it is judged when the
    function is looked up, which is when ctypes raises its event.
    """
    name = args[1] if len(args) > 1 else None
    if not isinstance(name, str):
        return ()
    shown = f"{name} (a C function called through ctypes)"
    if name in _CTYPES_SPAWN:
        return (Operation("spawn", "ctypes.dlsym", shown),)
    if name in _CTYPES_CONNECT:
        return (Operation("connect", "ctypes.dlsym", shown),)
    if name in _CTYPES_WRITE:
        return (Operation("write", "ctypes.dlsym", f"<{shown}: path unknown>"),)
    return ()


_CLASSIFIERS: dict[str, Classifier] = {
    "open": _open,
    "os.remove": _first("os.remove", 1),
    "os.rmdir": _first("os.rmdir", 1),
    "os.mkdir": _mkdir,
    "os.chmod": _first("os.chmod", 2, follow=True),
    "os.chown": _first("os.chown", 3, follow=True),
    "os.truncate": _first("os.truncate", follow=True),
    "os.utime": _first("os.utime", 3, follow=True),
    "os.setxattr": _first("os.setxattr", follow=True),
    "os.removexattr": _first("os.removexattr", follow=True),
    "os.rename": _pair("os.rename"),
    "os.link": _dst("os.link", 3),
    "os.symlink": _dst("os.symlink", 2),
    "shutil.rmtree": _first("shutil.rmtree", 1),
    "shutil.move": _pair("shutil.move"),
    "shutil.copyfile": _dst("shutil.copyfile"),
    "shutil.copymode": _dst("shutil.copymode"),
    "shutil.copystat": _dst("shutil.copystat"),
    "shutil.copytree": _dst("shutil.copytree"),
    "shutil.chown": _first("shutil.chown", follow=True),
    "shutil.unpack_archive": _dst("shutil.unpack_archive"),
    "subprocess.Popen": _popen,
    "os.system": _spawn("os.system", 0),
    "os.exec": _spawn("os.exec", 1),
    "os.posix_spawn": _spawn("os.posix_spawn", 1),
    "os.spawn": _spawn("os.spawn", 2),
    "os.fork": _spawn("os.fork", 99),
    "os.forkpty": _spawn("os.forkpty", 99),
    "pty.spawn": _spawn("pty.spawn", 0),
    "socket.connect": _connect("socket.connect"),
    "socket.sendto": _connect("socket.sendto"),
    "socket.sendmsg": _connect("socket.sendmsg"),
    "socket.bind": _bind,
    "sqlite3.connect": _sqlite,
    "ctypes.dlsym": _ctypes,
}
"""Audit event name → its classifier. Every other event is ignored."""

_SPAWN_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
    }
)


def classify_event(event: str, args: tuple[object, ...]) -> tuple[Operation, ...]:
    """The operations behind audit event `event`; () when it changes nothing we check.

    Fails closed: arguments a classifier cannot read (or a lookup that fails
    while reading them) give an operation of the event's kind on an unknown
    target, which only ``fs:``, ``proc:``/``net:`` or ``*`` covers.
    """
    classify = _CLASSIFIERS.get(event)
    if classify is None:
        return ()
    try:
        return classify(args)
    except Exception:
        kind: OpKind = (
            "spawn"
            if event in _SPAWN_EVENTS
            else "connect"
            if event.startswith("socket.")
            else "write"
        )
        return (Operation(kind, event, _UNRESOLVED),)


AUDITED_EVENTS = frozenset(_CLASSIFIERS)
"""The audit events the declaration audit looks at."""
