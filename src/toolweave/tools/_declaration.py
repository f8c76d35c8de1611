"""Declaration: what a tool says about how its calls may be run, as one frozen record.

Every way of making a tool ends in this record: a `Tool` subclass passes one
(or the same fields as keywords), ``@tool`` builds one from its keywords, a
manifest from its entry, and the framework integrations take one per tool
name. So what a declaration may say, and what a mistake in it is told, is
decided here once, for every path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, TypedDict, Unpack

from .._exceptions import ToolDefinitionError
from ._access import Access, Concurrency, Interrupt

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "READ_ONLY",
    "UNDECLARED",
    "AccessSpec",
    "ConcurrencySpec",
    "Declaration",
    "DeclarationFields",
    "Placement",
    "declared",
]

DEFAULT_MAX_RESULT_CHARS = 50_000
"""Global default threshold above which a result is persisted (as in Claude Code)."""

ConcurrencySpec: TypeAlias = (
    Concurrency | Callable[[dict[str, Any]], Concurrency | bool]
)
AccessSpec: TypeAlias = Access | Callable[[dict[str, Any]], Access]
Placement: TypeAlias = Literal["local", "ray"]


def _no_resources() -> Mapping[str, float]:
    return MappingProxyType({})


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive_seconds(value: object) -> bool:
    return value is None or (_is_number(value) and value > 0)  # type: ignore[operator]


def _result_budget(value: object) -> bool:
    return value is None or (
        isinstance(value, int) and not isinstance(value, bool) and value >= 0
    )


def _amounts(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(name, str)
        and name
        and _is_number(amount)
        and math.isfinite(amount)
        and amount >= 0
        for name, amount in value.items()
    )


def _flag(value: object) -> bool:
    return isinstance(value, bool)


_CHECKS: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    (
        "concurrency",
        lambda v: isinstance(v, Concurrency) or callable(v),
        "a Concurrency or a callable",
    ),
    (
        "access",
        lambda v: v is None or isinstance(v, Access) or callable(v),
        "an Access, a callable or None",
    ),
    ("access_bound", lambda v: v is None or isinstance(v, Access), "an Access or None"),
    ("interrupt", lambda v: isinstance(v, Interrupt), "an Interrupt"),
    ("timeout", _positive_seconds, "a positive number of seconds or None"),
    ("max_result_chars", _result_budget, "an int >= 0 or None"),
    ("hidden", _flag, "a bool"),
    ("abort_siblings_on_error", _flag, "a bool"),
    ("replaceable_output", _flag, "a bool"),
    ("placement", lambda v: v in ("local", "ray"), '"local" or "ray"'),
    (
        "resources",
        _amounts,
        "a mapping of resource names to finite numbers >= 0",
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Declaration:
    """The facts a tool declares about its calls; the scheduler and lifecycle decide.

    Every field has the fail-closed default: SEQUENTIAL, undeclared access (a
    barrier under the ``conflict`` policy), BLOCK on interrupt, the config's
    timeout, results over 50 000 characters persisted, run locally. Built
    with keywords only; checked when built (see `__post_init__`), so a
    declaration that exists is a valid one. Derive one from another with
    `dataclasses.replace`, which checks again.

    Equal declarations compare equal (callables by identity). Not hashable:
    `resources` is a mapping.
    """

    concurrency: ConcurrencySpec = Concurrency.SEQUENTIAL
    """A Concurrency, or a callable of the validated input returning one or a bool."""
    access: AccessSpec | None = None
    """An Access, or a callable of the validated input returning one; None = undeclared."""
    access_bound: Access | None = None
    """The most any call touches, whatever its input; None = unknown.

    Read by `Tool.bound_access` (what a sub-agent holding this tool claims)."""
    interrupt: Interrupt = Interrupt.BLOCK
    """On user interrupt: CANCEL stops a running call now, BLOCK lets it finish."""
    timeout: float | None = None
    """Seconds before the call is ended with a timeout error; None = the default
    (the run's config; no limit under the framework integrations)."""
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    """Results longer than this are persisted and previewed; None = never."""
    hidden: bool = False
    """Not offered to the model, and never run in parallel (as in Codex)."""
    abort_siblings_on_error: bool = False
    """If this call fails, cancel running siblings that also declare it (as in Claude Code)."""
    replaceable_output: bool = False
    """PostToolUse hooks may replace this tool's output."""
    placement: Placement = "local"
    """Where the work runs: ``"local"``, or ``"ray"`` (a declaration only:
    `toolweave.cluster.ray_tools` wraps such tools so each call is a Ray task)."""
    resources: Mapping[str, float] = field(default_factory=_no_resources)
    """What one call needs where it runs, e.g. ``{"num_cpus": 4, "num_gpus": 1}``
    (Ray resource names; custom ones allowed). Kept as a read-only copy."""

    __hash__ = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        """Check every field; the first wrong one is named.

        Raises:
            ToolDefinitionError: ``"<field>= must be …, got …"``.
        """
        for name, fits, expected in _CHECKS:
            value = getattr(self, name)
            if not fits(value):
                raise ToolDefinitionError(f"{name}= must be {expected}, got {value!r}")
        object.__setattr__(self, "resources", MappingProxyType(dict(self.resources)))


UNDECLARED = Declaration()
"""The fail-closed default: SEQUENTIAL, undeclared access (a barrier), BLOCK."""

READ_ONLY = Declaration(concurrency=Concurrency.SAFE, access=Access())
"""A tool that touches nothing shared: it overlaps with everything."""


def declared(
    tool: str, base: Declaration, **fields: Unpack[DeclarationFields]
) -> Declaration:
    """`base` with `fields` replaced (checked again); an error names `tool` and the field.

    Raises:
        ToolDefinitionError: ``"tool '<tool>': <field>= must be …"``.
    """
    if not fields:
        return base
    try:
        return replace(base, **fields)
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(f"tool {tool!r}: {exc}") from None


class DeclarationFields(TypedDict, total=False):
    """`Declaration`'s fields as keywords (``Tool(..., timeout=5)``, ``@tool(timeout=5)``)."""

    concurrency: ConcurrencySpec
    access: AccessSpec | None
    access_bound: Access | None
    interrupt: Interrupt
    timeout: float | None
    max_result_chars: int | None
    hidden: bool
    abort_siblings_on_error: bool
    replaceable_output: bool
    placement: Placement
    resources: Mapping[str, float]
