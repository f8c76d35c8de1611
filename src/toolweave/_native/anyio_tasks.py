"""anyio's task → cancel-scope table on asyncio, read once and only to see shields.

Why: `DeadlineScope` on asyncio is not an anyio scope (see `deadline`), yet it
must never cancel a task standing inside a *shielded* anyio scope. anyio keeps
no public way to ask "is this task shielded?", so this module reads anyio's
own table (``anyio._backends._asyncio._task_states``: task → ``TaskState``,
whose ``cancel_scope`` is the task's innermost scope, linked outwards by
``_parent_scope``). If any of that is missing (another anyio), `probe` leaves
`task_states` None and `DeadlineScope` uses an anyio scope instead: correct,
only slower. So it does on an anyio minor the native path was not proved on
(`NATIVE_ANYIO_MINORS`). The shapes are asserted in tests/native/test_native_shapes.py.

Read on the first asyncio loop (`alarm.alarm_here` calls `probe`), not at
import: anyio's asyncio backend is a costly import ``import toolweave`` need
not pay. Rebound once; read as module attributes (``anyio_tasks.refs``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "NATIVE_ANYIO_MINORS",
    "anyio_minor",
    "probe",
    "probed",
    "refs",
    "task_states",
]

NATIVE_ANYIO_MINORS = frozenset({(4, 16)})
"""The anyio minor versions the native scope was proved on (tests/native on each).

On any other anyio `probe` leaves `task_states` None and `DeadlineScope` is
anyio's own scope. Not a formality: on anyio 4.11-4.15 the native scope's cut
of a block holding a task group was swallowed by the group (the block ran on
as if in time; tests/native found it), which anyio 4.16 no longer does.
"""

task_states: Any = None
"""anyio's table (a ``WeakKeyDictionary``), or None if this anyio keeps none we can read."""

refs: dict[Any, Any] = {}
"""The table's own dict (``WeakKeyDictionary.data``: a ``weakref.ref(task)`` → its
``TaskState``), read without the Python-level ``get()`` on the hot path."""

probed = False
"""True once `probe` ran (in this process)."""


def anyio_minor() -> tuple[int, int] | None:
    """The installed anyio's (major, minor), or None if its metadata cannot be read."""
    from importlib.metadata import PackageNotFoundError, version  # once, when probed

    try:
        major, minor = version("anyio").split(".")[:2]
        return int(major), int(minor)
    except (PackageNotFoundError, ValueError):  # pragma: no cover - a broken install
        return None


def _read_task_states() -> Any:
    """The task table of anyio if it has the shape this package reads, else None."""
    if anyio_minor() not in NATIVE_ANYIO_MINORS:
        return None
    try:
        from anyio._backends import _asyncio as backend

        states = backend._task_states
        scope = backend.CancelScope()
        if not hasattr(scope, "_parent_scope") or not isinstance(
            getattr(states, "data", None), dict
        ):
            return None
        return states
    except (ImportError, AttributeError):  # pragma: no cover - another anyio
        return None


def probe() -> None:
    """Read anyio's table (once; later calls do nothing)."""
    global task_states, refs, probed
    if probed:
        return
    task_states = _read_task_states()
    refs = getattr(task_states, "data", {})
    probed = True
