"""The Ray options of ``toolweave batch``: JSON values, and which cluster a run uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .._exceptions import UsageError

__all__ = ["json_object", "ray_target", "session_resources"]


def json_object(value: str, option: str) -> dict[str, Any]:
    """A JSON object given inline (``{...}``) or as the path of a file holding one.

    Raises:
        UsageError: the file cannot be read, or the text is not a JSON object.
    """
    text = value
    if not value.lstrip().startswith(("{", "[")):  # else a path
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"{option}: {value!r} is neither a JSON object nor a readable"
                f" file ({exc.strerror or exc})"
            ) from exc
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option}: not valid JSON ({exc})") from exc
    if not isinstance(parsed, dict):
        raise UsageError(
            f"{option}: must be a JSON object, got {type(parsed).__name__}"
        )
    return parsed


def session_resources(cpus: float, value: str | None) -> dict[str, float]:
    """``--session-cpus`` with ``--session-resources`` merged over it (its keys win).

    Raises:
        UsageError: an amount is not a number >= 0.
    """
    resources: dict[str, float] = {"num_cpus": cpus}
    extra = {} if value is None else json_object(value, "--session-resources")
    for name, amount in extra.items():
        if (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or amount < 0
        ):
            raise UsageError(
                f"--session-resources: {name!r} must be a number >= 0, got {amount!r}"
            )
        resources[name] = float(amount)
    return resources


def ray_target(ray: bool, address: str | None) -> str | None:
    """What the run will use, for the user to read before it starts; None off Ray."""
    module = sys.modules.get("ray")  # never imported here for the question
    if (ray or address is not None) and module is not None and module.is_initialized():
        return "Ray: using this process's connection"
    if address is not None:
        return f"Ray: joining the cluster at {address}"
    if ray:
        return (
            "Ray: starting a private local cluster for this batch (stopped at its"
            " end; give --ray-address to join a running one)"
        )
    return None
