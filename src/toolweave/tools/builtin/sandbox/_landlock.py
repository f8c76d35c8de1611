"""A minimal ctypes binding of Linux Landlock: build a ruleset, enforce it in a child.

Landlock (Linux >= 5.13) lets an unprivileged process give up file-system
(and, from ABI 4, TCP) rights for itself and every process it later starts.
The kernel checks each ``open``/``mkdir``/``unlink``/``rename``/… against the
rules, so what a sandboxed command may write no longer depends on what a
classifier believed about it.

Only three system calls and one ``prctl`` are needed, so this is a ctypes
binding over libc's ``syscall`` rather than a dependency:

- `Ruleset` is built in the **parent** (``landlock_create_ruleset`` +
  ``landlock_add_rule`` per allowed path); the kernel returns it as a
  close-on-exec file descriptor;
- `enforce_in_child` is the ``preexec_fn`` of `subprocess.Popen`: in the
  forked child, before ``exec``, it calls ``prctl(PR_SET_NO_NEW_PRIVS)`` and
  ``landlock_restrict_self(fd)`` -- two system calls through function pointers
  resolved in the parent (no import, no ``dlsym``, no allocation beyond
  ctypes' own argument boxing), which is why running it between fork and exec
  is safe enough here. If either call fails it raises, `Popen` reports
  "Exception occurred in preexec_fn" and nothing runs: fail closed.

Rights a kernel does not know are dropped from the handled set (ABI 1 has no
REFER, ABI 2 no TRUNCATE, ABI 4 adds TCP, ABI 5 IOCTL_DEV), as the kernel
documentation prescribes for best-effort compatibility. From ABI 6 a confined
process may also not signal processes outside its sandbox (the agent itself,
the user's other programs) nor connect to their abstract Unix sockets.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from collections.abc import Iterable
from functools import cache

__all__ = [
    "EXECUTE",
    "FS_READ",
    "READ_FILE",
    "SCOPES_ABI",
    "Ruleset",
    "enforce_in_child",
    "fs_all",
    "fs_create_beneath",
    "fs_file_write",
    "fs_tree",
    "landlock_abi",
]

_SYSCALLS = {  # the same numbers on every architecture with the unified table
    "x86_64": (444, 445, 446),
    "aarch64": (444, 445, 446),
    "arm64": (444, 445, 446),
    "riscv64": (444, 445, 446),
}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_ALL = sum(1 << bit for bit in range(6, 13))  # char dir reg sock fifo block sym
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1

SCOPES_ABI = 6
"""The first ABI with scopes (signals, abstract Unix sockets)."""

FS_READ = EXECUTE | READ_FILE | READ_DIR
"""Read, list and execute: what every sandboxed command keeps everywhere."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the uapi header
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_prctl = _libc.prctl
_prctl.restype = ctypes.c_int
_prctl.argtypes = (ctypes.c_int, *[ctypes.c_ulong] * 4)


def _numbers() -> tuple[int, int, int] | None:
    return _SYSCALLS.get(platform.machine())


@cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    numbers = _numbers()
    if numbers is None:
        return 0
    version = _syscall(
        ctypes.c_long(numbers[0]),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


def fs_all(abi: int) -> int:
    """Every file-system right the ABI `abi` can handle."""
    rights = FS_READ | WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_ALL
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8


def fs_create_beneath(abi: int) -> int:
    """Rights to create directories and regular files beneath a directory.

    And to write them. No removal, no rename or link (REFER), no special files.
    """
    rights = FS_READ | WRITE_FILE | _MAKE_DIR | _MAKE_REG
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


_MAKE_SYM = 1 << 12


def fs_tree(abi: int) -> int:
    """Every change beneath a directory but special files.

    Create, write, remove, rename and link within it (REFER), symlinks.
    """
    rights = FS_READ | WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE
    rights |= _MAKE_DIR | _MAKE_REG | _MAKE_SYM
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def fs_file_write(abi: int) -> int:
    """Rights that make one existing file (a device) readable and writable."""
    rights = READ_FILE | WRITE_FILE
    if abi >= 3:
        rights |= _TRUNCATE  # ``> /dev/null`` opens with O_TRUNC
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


class Ruleset:
    """A Landlock ruleset held as a file descriptor: allowed paths, optionally no TCP.

    Build it in the parent, pass `fd` to `enforce_in_child` through
    ``preexec_fn``, and `close` it once the child has started. Paths that do
    not exist are skipped (a device missing in a container is no error).

    ``files=False`` (ABI >= 6) handles no file-system right at all, only the
    scopes: the process may not signal, nor reach the abstract sockets of,
    any process outside its domain, and keeps every file right and the
    right to mount (bubblewrap, started this way, still builds its sandbox).

    Raises:
        OSError: Landlock is unavailable, or the kernel refused a rule.
    """

    def __init__(
        self,
        rules: Iterable[tuple[str, int]],
        *,
        block_tcp: bool = False,
        files: bool = True,
    ) -> None:
        abi = landlock_abi()
        numbers = _numbers()
        if abi < 1 or numbers is None:
            raise OSError(errno.ENOSYS, "Landlock is not available")
        if not files and abi < SCOPES_ABI:
            raise OSError(errno.ENOTSUP, "Landlock scopes need ABI 6")
        create, add, _ = numbers
        attr = _RulesetAttr(fs_all(abi) if files else 0, 0, 0)
        size = ctypes.sizeof(_RulesetAttr)
        if block_tcp and abi >= 4:
            attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        if abi >= SCOPES_ABI:  # no signals to, no abstract sockets of, outsiders
            attr.scoped = _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX_SOCKET
        elif abi >= 4:
            size = 16  # ABI 4 and 5 know two fields
        else:
            size = 8  # ABI < 4 only knows the first
        self.fd = _check(
            _syscall(
                ctypes.c_long(create),
                ctypes.byref(attr),
                ctypes.c_size_t(size),
                ctypes.c_uint32(0),
            ),
            "landlock_create_ruleset",
        )
        """The ruleset's file descriptor (close-on-exec)."""
        try:
            self._add_all(add, rules, fs_all(abi))
        except BaseException:
            self.close()
            raise

    def _add_all(self, add: int, rules: Iterable[tuple[str, int]], known: int) -> None:
        """One ``landlock_add_rule`` per rule; a path that does not exist is skipped.

        The syscall's arguments are wrapped once and one attribute record is
        reused: a spawn can carry a thousand read rules (the entries next to
        the workspace's ancestors), and per-rule ctypes wrapping was half of
        its cost.
        """
        beneath = _PathBeneathAttr(0, -1)
        args = (
            ctypes.c_long(add),
            ctypes.c_int(self.fd),
            ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(beneath),
            ctypes.c_uint32(0),
        )
        for path, rights in rules:
            try:
                path_fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                beneath.allowed_access = rights & known
                beneath.parent_fd = path_fd
                _check(_syscall(*args), f"landlock_add_rule({path})")
            finally:
                os.close(path_fd)

    def close(self) -> None:
        """Release the descriptor (a started child keeps its own restriction)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def enforce_in_child(ruleset_fd: int) -> None:
    """Restrict the calling process to the ruleset; run between fork and exec.

    Raises:
        OSError: ``no_new_privs`` or ``landlock_restrict_self`` failed.
    """
    numbers = _numbers()
    if numbers is None:  # pragma: no cover - Ruleset() refuses first
        raise OSError(errno.ENOSYS, "Landlock is not available")
    _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(
        _syscall(
            ctypes.c_long(numbers[2]), ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)
        ),
        "landlock_restrict_self",
    )
