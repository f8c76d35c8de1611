"""Fail closed on a hook's input rewrite that would need a different schedule."""

from __future__ import annotations

from ..tools import Access, Concurrency, Tool

__all__ = ["rewrite_scope_error"]

_SEPARATORS = ("/", ":")


def _effective(tool: Tool, args: dict[str, object]) -> tuple[Concurrency, Access]:
    """What the scheduler assumed: undeclared SAFE reads all, SEQUENTIAL is a barrier."""
    concurrency = tool.concurrency_for(args)
    access = tool.access_for(args)
    if access is None:
        safe = concurrency is Concurrency.SAFE
        access = Access.read_all() if safe else Access.barrier()
    return concurrency, access


def _covers(outer: str, inner: str) -> bool:
    """True if resource key `outer` contains `inner` (itself or a key below it)."""
    if outer in ("*", inner):
        return True
    return inner.startswith(outer) and (
        outer.endswith(_SEPARATORS) or inner[len(outer)] in _SEPARATORS
    )


def _all_covered(inner: tuple[str, ...], outer: tuple[str, ...]) -> bool:
    return all(any(_covers(o, i) for o in outer) for i in inner)


def rewrite_scope_error(
    tool: Tool, before: dict[str, object], after: dict[str, object]
) -> str | None:
    """Why a rewrite from `before` to `after` escapes the call's schedule, or None.

    The Dispatcher admitted the call by the concurrency and access of the
    model's input. A hook's rewrite may narrow them but not widen them: a call
    scheduled as SAFE must stay SAFE, and every key it reads or writes after
    the rewrite must lie inside what it claimed before (a write inside a write,
    a read inside a read or a write). Otherwise the batch would no longer be
    serial-equivalent.
    """
    old_concurrency, old = _effective(tool, before)
    new_concurrency, new = _effective(tool, after)
    if old_concurrency is Concurrency.SAFE and new_concurrency is not Concurrency.SAFE:
        return (
            "the rewritten call is not concurrency-safe, but it was scheduled as safe"
        )
    if not _all_covered(new.writes, old.writes):
        return (
            f"the rewritten call writes {list(new.writes)}, beyond {list(old.writes)}"
        )
    if not _all_covered(new.reads, old.reads + old.writes):
        return (
            f"the rewritten call reads {list(new.reads)},"
            f" beyond {list(old.reads + old.writes)}"
        )
    return None
