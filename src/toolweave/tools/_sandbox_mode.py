"""SandboxMode: how far the OS confines a shell command (Codex's three modes)."""

from __future__ import annotations

from enum import StrEnum

from .._exceptions import ConfigError

__all__ = ["SandboxMode", "sandbox_mode"]


class SandboxMode(StrEnum):
    """What a command the bash tool runs may write.

    Whatever the mode, a call the classifier proves read-only (one the gate
    may run in parallel) runs under READ_ONLY: the sandbox makes a wrong
    "read-only" verdict harmless.
    """

    READ_ONLY = "read-only"
    """Read and execute everywhere; write nowhere but ``/dev/null``-like devices."""
    WORKSPACE_WRITE = "workspace-write"
    """Write only under the workspace and a private temp dir (``$TMPDIR``);
    ``.git/config`` and ``.git/hooks`` stay read-only."""
    OFF = "off"
    """No confinement for calls that are not read-only."""


def sandbox_mode(value: SandboxMode | str) -> SandboxMode:
    """`value` as a SandboxMode.

    Raises:
        ConfigError: `value` names no mode.
    """
    try:
        return SandboxMode(value)
    except ValueError:
        names = ", ".join(m.value for m in SandboxMode)
        raise ConfigError(
            f"sandbox mode must be one of {names}, not {value!r}"
        ) from None
