"""Batch tasks: one agent session per JSONL line, each with a stable id."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BatchTask", "Budget", "load_tasks", "parse_tasks"]

_BUDGET_KEYS = ("max_iterations", "max_cost_usd", "max_total_tokens", "max_wall_clock")
_TASK_KEYS = frozenset(
    {"id", "prompt", "model", "workspace", "system", "budget", "metadata"}
)


@dataclass(frozen=True, slots=True)
class Budget:
    """A session's limits; None = the batch's default (unlimited unless configured)."""

    _: KW_ONLY
    max_iterations: int | None = None
    """Model calls the session may make."""
    max_cost_usd: float | None = None
    """USD the session may spend."""
    max_total_tokens: int | None = None
    """Tokens the session may use."""
    max_wall_clock: float | None = None
    """Seconds the session may last."""

    def overrides(self) -> dict[str, Any]:
        """The limits that are set, as `AgentConfig` field values."""
        return {
            k: getattr(self, k) for k in _BUDGET_KEYS if getattr(self, k) is not None
        }


@dataclass(frozen=True, slots=True)
class BatchTask:
    """One session of a batch, as read from one JSONL line.

    A line that cannot be used still becomes a task, with `error` set: it is
    recorded as invalid and never run, so every line has a result line.
    """

    task_id: str
    """Stable across re-runs: the line's ``id``, else a hash of its content."""
    prompt: str
    """The user's prompt."""
    _: KW_ONLY
    line: int = 0
    """1-based line number in the tasks file (0 when built in code)."""
    model: str | None = None
    """Model spec (``anthropic:…``, ``openai:…``, ``scripted:<json>``); None = the batch's."""
    workspace: str | None = None
    """The session's workspace directory; None = the batch's (or none)."""
    system: str | None = None
    """System prompt; None = the batch's."""
    budget: Budget = field(default_factory=Budget)
    """The session's limits."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form data copied to the result line."""
    error: str | None = None
    """Why the line cannot run; None = it can."""


def _limit(raw: Mapping[str, object], key: str, *, integer: bool) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    ok_type = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"budget.{key} must be {kind}, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"budget.{key} must be positive, got {value!r}")
    return value


def _budget(raw: object) -> Budget:
    if raw is None:
        return Budget()
    if not isinstance(raw, dict):
        raise ValueError(f"budget must be an object, got {raw!r}")
    unknown = sorted(set(raw) - set(_BUDGET_KEYS))
    if unknown:
        raise ValueError(
            f"unknown budget key(s) {unknown}; known: {list(_BUDGET_KEYS)}"
        )
    return Budget(
        max_iterations=_limit(raw, "max_iterations", integer=True),
        max_cost_usd=_limit(raw, "max_cost_usd", integer=False),
        max_total_tokens=_limit(raw, "max_total_tokens", integer=True),
        max_wall_clock=_limit(raw, "max_wall_clock", integer=False),
    )


def _text(data: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"{key!r} must be a non-empty string, got {value!r}")
    return value


def _task_from(data: object, task_id: str, line: int) -> BatchTask:
    if not isinstance(data, dict):
        raise ValueError(f"a task must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - _TASK_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown}; known: {sorted(_TASK_KEYS)}")
    metadata = data.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise ValueError("'metadata' must be an object")
    return BatchTask(
        task_id,
        _text(data, "prompt", required=True) or "",
        line=line,
        model=_text(data, "model"),
        workspace=_text(data, "workspace"),
        system=_text(data, "system"),
        budget=_budget(data.get("budget")),
        metadata=metadata,
    )


def _declared_id(data: object) -> str | None:
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, str | int) and not isinstance(value, bool):
        return str(value)
    return None


def _content_id(text: str) -> str:
    try:
        canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = text.strip()
    return "sha-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _parse_line(text: str, line: int, seen: dict[str, int]) -> BatchTask:
    data: object = None
    problem: str | None = None
    try:
        data = json.loads(text)
    except ValueError as exc:
        problem = f"line {line} is not valid JSON: {exc}"
    declared = _declared_id(data)
    base = declared or _content_id(text)
    seen[base] = seen.get(base, 0) + 1
    task_id = base if seen[base] == 1 else f"{base}#{seen[base]}"
    if problem is None and declared is not None and seen[base] > 1:
        problem = f"line {line}: duplicate id {declared!r}"
    if problem is None:
        try:
            return _task_from(data, task_id, line)
        except ValueError as exc:
            problem = f"line {line}: {exc}"
    return BatchTask(task_id, "", line=line, error=problem)


def parse_tasks(lines: Iterable[str]) -> list[BatchTask]:
    """Parse JSONL text lines into tasks, one per non-blank line, in order.

    A line is an object with ``prompt`` (required) and optional ``id``,
    ``model``, ``workspace``, ``system``, ``budget`` (``max_iterations``,
    ``max_cost_usd``, ``max_total_tokens``, ``max_wall_clock``) and
    ``metadata``. Never raises for bad content: such a line becomes a task
    with `error` set. Ids: the declared ``id`` (a repeat is an error), else a
    hash of the content (a repeated line gets ``#2``, ``#3``, ...).
    """
    seen: dict[str, int] = {}
    tasks: list[BatchTask] = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            tasks.append(_parse_line(text, number, seen))
    return tasks


def load_tasks(path: str | Path) -> list[BatchTask]:
    """Read a JSONL tasks file (UTF-8). Raises OSError if it cannot be read."""
    with Path(path).open(encoding="utf-8") as handle:
        return parse_tasks(handle)
