"""How the CLI words a batch's figures (`toolweave.scheduling.BatchStats`)."""

from __future__ import annotations

from ..scheduling import BatchStats

__all__ = ["fmt_seconds", "stats_notes"]


def fmt_seconds(seconds: float) -> str:
    """``0.85 s``, or ``12.3 ms`` below a tenth of a second."""
    if seconds < 0.1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


def stats_notes(stats: BatchStats) -> str:
    """What the figures leave out, said after them ('' when nothing was)."""
    notes = ""
    if stats.permission_wait > 0:
        notes += (
            f" · waited {fmt_seconds(stats.permission_wait)} for permission"
            " (not in the batch time)"
        )
    if stats.unknown_access:
        calls = "call" if stats.unknown_access == 1 else "calls"
        notes += (
            f" · access of {stats.unknown_access} {calls} not recorded (counted as"
            " independent in the lower bound)"
        )
    return notes
