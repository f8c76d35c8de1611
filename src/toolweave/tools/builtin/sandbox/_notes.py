"""What the model is told when the sandbox refused a write, restored git files, or is missing.

A refused write shows up as the command's own error: ``Permission denied``
(EACCES, Landlock), ``Read-only file system`` (EROFS, bubblewrap's read-only
mounts) or ``Operation not permitted`` (EPERM). The kernel tells the process,
not us, so the note is added when a confined call's output carries one of
these; it names the mode, the backend and what to do next, so the model can
ask again for the command on its own instead of retrying it blindly.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from ..._context import SessionState
from ..._sandbox_mode import SandboxMode
from ._sandbox import Confinement

__all__ = ["refusal_note", "restored_note", "unconfined_notice"]

logger = logging.getLogger("toolweave.sandbox")

_REFUSED = re.compile(
    r"permission denied|read-only file system|operation not permitted", re.IGNORECASE
)
_MISSING = re.compile(r"no such file or directory", re.IGNORECASE)
"""How bwrap's confined reads look: an undeclared path is absent from the mount."""
_NOTICE_KEY = "sandbox.unconfined_noticed"
_WRITES_HINT = (
    "If that error comes from a write the command needs, call bash again with this"
    ' command alone and "writes": true; it then runs on its own, under the'
    " session's sandbox mode ({mode})."
)
_USER_HINT = (
    "If that error comes from a write the command needs, only the user can allow it,"
    " by changing the sandbox mode (--sandbox, or [sandbox] mode in toolweave.toml)."
)


def refusal_note(
    confinement: Confinement,
    output: str,
    *,
    forced: bool,
    configured: SandboxMode,
    root: Path,
    writable: tuple[str, ...] = (),
    readable: tuple[str, ...] | None = None,
) -> str | None:
    """The note for a confined call whose output shows a refused write, or None.

    `forced`: the call ran read-only because the classifier judged it
    read-only (it may have run in parallel); `configured`: the mode the call
    would get on its own; `writable`: the paths its parse declared and the
    sandbox left writable (a declared writer), if any; `readable`: the
    workspace paths it was confined to read (None: the whole workspace).
    """
    found = _REFUSED.search(output)
    if found is None and readable is not None:
        found = _MISSING.search(output)
    if confinement.backend is None or found is None:
        return None
    how = f"({confinement.backend})"
    error = found.group(0)
    if confinement.mode is SandboxMode.WORKSPACE_WRITE:
        return (
            f"[sandbox: this command ran confined to the workspace {how}: it may write"
            f" only under {root} and $TMPDIR; .git itself and the git files that"
            f" choose programs (config, hooks, commondir, info/attributes) stay"
            f" read-only; any other write is refused. The {error!r} above may be"
            f" such a refusal. {_USER_HINT}]"
        )
    if forced and (writable or readable is not None):
        return _declared_note(how, error, configured, writable, readable)
    if forced and configured is not SandboxMode.READ_ONLY:
        why = f"this command was judged read-only, so it ran in the read-only sandbox {how}"
        hint = _WRITES_HINT.format(mode=configured.value)
    else:
        why = (
            f"this command ran in the read-only sandbox {how} because the sandbox"
            " mode is 'read-only'"
        )
        hint = _USER_HINT
    return (
        f"[sandbox: {why}; every write is refused there, so nothing was written. The"
        f" {error!r} above may be such a refusal. {hint}]"
    )


def _declared_note(
    how: str,
    error: str,
    configured: SandboxMode,
    writable: tuple[str, ...],
    readable: tuple[str, ...] | None,
) -> str:
    said = []
    if writable:
        said.append(f"its writes were declared from its parse ({', '.join(writable)})")
    if readable is not None:
        names = ", ".join(readable) or "nothing"
        said.append(f"inside the workspace it may read only {names} (its parse)")
    return (
        f"[sandbox: {'; '.join(said)}, so it ran in the read-only sandbox {how} with"
        " only those writable and readable; every other write is refused there, and"
        " every other path in the workspace is unreadable (or absent), so nothing"
        f" else was written. The {error!r} above may be such a refusal."
        f" {_WRITES_HINT.format(mode=configured.value)}]"
    )


def restored_note(paths: list[str]) -> str | None:
    """The note for git paths a workspace-write call changed and the guard restored."""
    if not paths:
        return None
    return (
        f"[sandbox: the command changed {', '.join(paths)}, which stay read-only"
        " under workspace-write; they were restored to what they were before.]"
    )


def unconfined_notice(state: SessionState) -> str | None:
    """Once per session: no OS sandbox exists here (also logged as a warning)."""
    with state.lock:
        if state.values.get(_NOTICE_KEY):
            return None
        state.values[_NOTICE_KEY] = True
    message = (
        "no OS sandbox is available (neither Landlock nor bubblewrap): bash commands"
        " run unconfined, and only a small core of plain commands counts as read-only"
    )
    logger.warning("toolweave: %s", message)
    return f"[sandbox: {message}.]"
