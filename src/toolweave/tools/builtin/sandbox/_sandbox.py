"""The OS sandbox of the bash tool: which backend confines a call, and how.

The classifier decides what *may* run in parallel; this module makes a wrong
answer harmless. Every bash call runs confined by its `SandboxMode`:

- ``read-only``: read and execute everywhere, write nowhere but ``/dev/null``,
  ``/dev/zero``, ``/dev/full`` and ``/dev/tty``. Every call the classifier
  proves read-only (the ones the gate runs in parallel) gets this mode,
  whatever the configured one.
- ``workspace-write``: as read-only, plus writes under the workspace and a
  private temp dir made for the call (``$TMPDIR``, removed afterwards);
  ``.git/config`` and ``.git/hooks`` stay read-only.
- ``off``: no confinement.

Backends, chosen once per process (`sandbox_backend`):

- **Landlock** (Linux >= 5.13, unprivileged): the child is confined from a
  restricted spawner thread (see `_sandbox_spawn`), ~0.5 ms per spawn. It
  cannot carve read-only holes into a writable tree, so for workspace-write it
  is second choice. Under either backend `GitGuard` undoes, after a
  workspace-write call, changes to the files that select programs git runs.
- **bubblewrap** (``bwrap``, Debian package ``bubblewrap``): a mount
  namespace with ``/`` bound read-only and the writable paths bound over it,
  ``.git`` bound onto itself (a mount point cannot be renamed or replaced) and
  its existing config and hooks bound read-only again on top. Preferred
  for workspace-write; for read-only it is the fallback (~10 ms per spawn).
  Each workspace-write call gets its own pid namespace where the kernel
  allows one, so no process the command started outlives it and none outside
  it is visible or can be signalled. With Landlock ABI >= 6 bwrap is also
  started under Landlock *scopes*, so even without the namespace a command
  cannot signal processes outside its call (``kill -9 -1`` would otherwise
  reach the agent and every process of the user).
- **none**: the bash tool says so once per session (a logged warning and a
  note in the first result) and `conservative_read_only` shrinks what counts
  as read-only to a small core.

Network: on by default; ``network=False`` blocks it (Landlock ABI >= 4 blocks
TCP bind and connect; bwrap unshares the network namespace, so UDP and every
other protocol too).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, final

import anyio

from ...._exceptions import ToolError
from ..._sandbox_mode import SandboxMode
from ._confine import bwrap_binds, grant_rules, read_rules
from ._git import GitGuard, protected_git_paths
from ._grants import Grant
from ._landlock import FS_READ, SCOPES_ABI, fs_all, fs_file_write, landlock_abi
from ._popen import ProcessLike, Spawner, spawn_popen
from ._spawn import spawn_landlocked, spawn_scoped

__all__ = [
    "Backend",
    "Confinement",
    "Sandbox",
    "sandbox_backend",
]

Backend = Literal["landlock", "bwrap"]
"""An OS mechanism that confines a command."""

logger = logging.getLogger("toolweave.sandbox")

_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
_BWRAP_BASE = ("--ro-bind", "/", "/", "--dev", "/dev")
"""Everything (with its submounts and /sys) read-only; a private /dev."""
_BWRAP_ISOLATE = ("--die-with-parent",)
_BWRAP_PID_NAMESPACE = ("--unshare-pid", "--proc", "/proc")
"""A pid namespace per workspace-write call, with its own /proc (where bwrap can).

bwrap is the namespace's init: when the command exits (or the bash tool kills
its process group), init exits and the kernel kills every process left in the
namespace. So nothing the command started outlives the call, not even a
process that left the call's group and session and closed its output, which
the group kill and the `/proc` reaper cannot find. Inside, process ids are the
namespace's own (``$!`` is a small number) and no process outside the call is
visible or can be signalled. Only for workspace-write: such a process keeps the
call's rights, so after the call it could still write (to ``.git`` after the
guard ran); under read-only it could not, and the namespace's ~0.7 ms per
spawn would put bwrap's read-only spawn at its 5 ms budget
(bench/bench_sandbox.py). Where the kernel refuses the namespace, calls run
without it (`_bwrap_pid_namespace`). Either way the group kill and the reaper
remain, and bwrap is started under Landlock scopes where the kernel has them
(`_bwrap_scopable`) so that the command cannot signal the agent."""


@cache
def _landlock_usable() -> bool:
    return landlock_abi() >= 1


@cache
def _bwrap_usable() -> str | None:
    """The bwrap binary if it can really build a sandbox here (probed once)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    return found if _runs([found, *_BWRAP_BASE, *_BWRAP_ISOLATE]) else None


@cache
def _bwrap_pid_namespace() -> bool:
    """True if bwrap can give each call its own pid namespace here (probed once)."""
    found = _bwrap_usable()
    return found is not None and _runs(
        [found, *_BWRAP_BASE, *_BWRAP_ISOLATE, *_BWRAP_PID_NAMESPACE]
    )


def _runs(bwrap: list[str]) -> bool:
    """True if `bwrap` (a command prefix) runs ``true`` successfully."""
    try:
        probe = subprocess.run(
            [*bwrap, "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


@cache
def _bwrap_scopable() -> bool:
    """True if bwrap can be started under Landlock scopes (see `spawn_scoped`).

    Without a pid namespace a command under bwrap could otherwise signal every
    process of its user, the agent included. Needs Landlock ABI >= 6, and a
    bwrap that is not set-uid (``no_new_privs`` would strip its privileges).
    """
    found = _bwrap_usable()
    if found is None or landlock_abi() < SCOPES_ABI:
        return False
    return not os.stat(found).st_mode & stat.S_ISUID


def backend_available(backend: Backend) -> bool:
    """True if `backend` works on this machine (probed once per process)."""
    if backend == "landlock":
        return _landlock_usable()
    return _bwrap_usable() is not None


def sandbox_backend(mode: SandboxMode = SandboxMode.READ_ONLY) -> Backend | None:
    """The backend that confines `mode` on this machine; None if nothing can.

    read-only prefers Landlock (cheapest), then bwrap; workspace-write prefers
    bwrap (it keeps ``.git/config`` and hooks read-only by itself), then
    Landlock. ``off`` needs none. The bash tool's classifier seam reads this:
    with no backend for read-only, only `conservative_read_only` commands may
    run in parallel.
    """
    order: tuple[Backend, ...] = ("landlock", "bwrap")
    if mode is SandboxMode.OFF:
        return None
    if mode is SandboxMode.WORKSPACE_WRITE:
        order = ("bwrap", "landlock")
    return next((b for b in order if backend_available(b)), None)


@dataclass(slots=True)
class Confinement:
    """How one call is confined: its spawner, extra environment, and what happened."""

    mode: SandboxMode
    """The mode the call runs under."""
    backend: Backend | None
    """The mechanism enforcing it; None when unconfined."""
    spawn: Spawner | None = None
    """How `run_shell` starts the command; None = a plain spawn."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables to add to the command's environment (``TMPDIR``)."""
    restored: list[str] = field(default_factory=list)
    """Protected git paths the call changed and the guard put back."""


@final
class Sandbox:
    """Confines bash calls under a workspace root.

    Args:
        root: The workspace root (writable under workspace-write).
        network: False blocks the network of every confined call.
        backend: Force a backend (tests, benchmarks); None = `sandbox_backend`.
            A forced backend that is not available means no confinement.
    """

    def __init__(
        self, root: Path, *, network: bool = True, backend: Backend | None = None
    ) -> None:
        self.root = root
        """The workspace root."""
        self.network = network
        """Whether confined calls may use the network."""
        self.forced = backend
        """The backend forced at construction, if any."""
        self._reads_confinable: bool | None = None

    def reads_confinable(self) -> bool:
        """True if a read-only call's reads inside the workspace can be confined.

        bwrap always can. Landlock needs a rule per entry next to each of the
        workspace's ancestors (`read_rules`); past `MAX_ANCESTOR_ENTRIES` the
        spawn would cost too much, and declared reads must then stay wide.
        Probed once per sandbox; should the ancestors grow past the limit
        later, the spawn refuses to start (fail closed), never reads wider.
        """
        if self._reads_confinable is None:
            backend = self.backend_for(SandboxMode.READ_ONLY)
            self._reads_confinable = backend == "bwrap" or (
                backend == "landlock" and read_rules(self.root, ()) is not None
            )
        return self._reads_confinable

    def backend_for(self, mode: SandboxMode) -> Backend | None:
        """The backend that would confine a call in `mode`."""
        if mode is SandboxMode.OFF:
            return None
        if self.forced is not None:
            return self.forced if backend_available(self.forced) else None
        return sandbox_backend(mode)

    @asynccontextmanager
    async def confine(
        self,
        mode: SandboxMode,
        cwd: Path,
        grants: Sequence[Grant] = (),
        reads: Sequence[str] | None = None,
    ) -> AsyncIterator[Confinement]:
        """Prepare one call in `mode`; clean up (temp dir, git guard) afterwards.

        `grants` (read-only mode only): the paths the command may still write,
        each as its `Grant.kind` says; the caller declared them as the call's
        write keys, and this makes them the only writes the kernel allows. A
        ``git`` grant brings the git guard along, as workspace-write does.
        `reads` (read-only mode only): when given, the only paths inside the
        workspace the command may read (besides its grants); everything outside
        the workspace stays readable (`read_rules`, `bwrap_binds`).

        Checkpoints: the git guard's snapshot and restore and the temp dir's
        removal run in worker threads (a command can make them large).
        """
        backend = self.backend_for(mode)
        if (grants or reads is not None) and mode is not SandboxMode.READ_ONLY:
            raise ToolError("declared access confines a read-only call only")
        confinement = Confinement(mode, backend)
        if backend is None:
            yield confinement
            return
        tmp = None
        if mode is SandboxMode.WORKSPACE_WRITE:
            tmp = _private_tmp()
            confinement.env["TMPDIR"] = str(tmp)
        guard = None  # files a mount cannot cover; walked off the loop
        if tmp is not None or any(g.kind == "git" for g in grants):
            guard = await anyio.to_thread.run_sync(GitGuard, self.root)
        confinement.spawn = self._spawner(backend, tmp, cwd, grants, reads)
        try:
            yield confinement
        finally:
            if guard is not None:
                with anyio.CancelScope(shield=True):  # a cancelled call is undone too
                    confinement.restored = await anyio.to_thread.run_sync(guard.restore)
            if tmp is not None:
                with anyio.CancelScope(shield=True):  # cancelled calls clean up too
                    await anyio.to_thread.run_sync(
                        lambda: shutil.rmtree(tmp, ignore_errors=True)
                    )

    def _spawner(
        self,
        backend: Backend,
        tmp: Path | None,
        cwd: Path,
        grants: Sequence[Grant],
        reads: Sequence[str] | None,
    ) -> Spawner:
        """Starts a command confined by `backend`; `tmp` given = workspace-write."""
        if backend == "landlock":

            async def landlocked(
                argv: Sequence[str], cwd: Path, env: Mapping[str, str]
            ) -> ProcessLike:
                rules = await anyio.to_thread.run_sync(  # lists the ancestors
                    _landlock_rules, self.root, tmp, grants, reads
                )
                return await spawn_landlocked(
                    argv, cwd=cwd, env=env, rules=rules, block_tcp=not self.network
                )

            return landlocked
        prefix = _bwrap_argv(
            self.root, tmp, cwd, network=self.network, grants=grants, reads=reads
        )
        scoped = _bwrap_scopable()

        async def bwrapped(
            argv: Sequence[str], cwd: Path, env: Mapping[str, str]
        ) -> ProcessLike:
            if scoped:
                return await spawn_scoped([*prefix, *argv], cwd=cwd, env=env)
            return await spawn_popen([*prefix, *argv], cwd, env)

        return bwrapped


def _private_tmp() -> Path:
    """A fresh directory only this call may write to (its ``$TMPDIR``)."""
    return Path(tempfile.mkdtemp(prefix="toolweave-sandbox-")).resolve()


def _landlock_rules(
    root: Path,
    tmp: Path | None,
    grants: Sequence[Grant] = (),
    reads: Sequence[str] | None = None,
) -> list[tuple[str, int]]:
    abi = landlock_abi()
    readable = None if reads is None else read_rules(root, reads)
    if reads is not None and readable is None:  # never wider than declared
        raise OSError("the workspace's ancestors grew too crowded to confine reads")
    rules = [("/", FS_READ)] if readable is None else readable
    rules += [(d, fs_file_write(abi)) for d in _DEVICES]
    rules += grant_rules(grants, abi)
    if tmp is not None:
        rules += [(str(root), fs_all(abi)), (str(tmp), fs_all(abi))]
    return rules


def _bwrap_argv(
    root: Path,
    tmp: Path | None,
    cwd: Path,
    *,
    network: bool,
    grants: Sequence[Grant] = (),
    reads: Sequence[str] | None = None,
) -> list[str]:
    """The bwrap command prefix confining one call.

    All of ``/`` read-only; with `tmp` (workspace-write) the workspace and
    `tmp` writable, then the git paths read-only again on top, in a pid
    namespace of the call's own. With `grants`/`reads` (a declared call):
    those paths writable/readable (see `bwrap_binds`).
    """
    bwrap = _bwrap_usable()
    assert bwrap is not None  # backend_for checked
    argv = [bwrap, *_BWRAP_BASE, *_BWRAP_ISOLATE]
    if tmp is not None and _bwrap_pid_namespace():
        argv += _BWRAP_PID_NAMESPACE
    if not network:
        argv.append("--unshare-net")
    if tmp is not None:
        argv += ["--bind", str(root), str(root), "--bind", str(tmp), str(tmp)]
        argv += _git_binds(root)
    elif reads is not None:  # a read-only call's declared access, and nothing else
        argv += bwrap_binds(root, reads, grants)
    else:
        for grant in grants:
            argv += ["--bind", grant.path, grant.path]
    if tmp is None and any(g.kind == "git" for g in grants):
        argv += _git_binds(root, itself=False)  # .git itself is the grant's bind
    return [*argv, "--chdir", str(cwd), "--"]


def _git_binds(root: Path, *, itself: bool = True) -> list[str]:
    """``.git`` bound onto itself (never renamed), its program files read-only."""
    argv: list[str] = []
    git = root / ".git"
    if itself and git.is_dir() and not git.is_symlink():  # a mount point: never renamed
        argv += ["--bind", str(git), str(git)]
    for path in protected_git_paths(root):
        real = os.path.realpath(path)
        if Path(real).is_relative_to(root):
            argv += ["--ro-bind", real, real]
    return argv
