"""``scripted:<json>`` model specs: a ScriptedModel described as data, built where it runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._exceptions import BadRequestError, ConfigError, ModelError, ModelServerError
from ..messages import ModelResponse, StopReason, Text, ToolCall, Usage
from ..models import Model, ScriptedModel, ScriptStep, resolve_model

__all__ = ["SCRIPTED_PREFIX", "model_from_spec", "scripted_spec"]

SCRIPTED_PREFIX = "scripted:"
"""Model specs starting with this hold a JSON script (tests, benchmarks, demos)."""

_ERRORS: Mapping[str, type[ModelError]] = {
    "bad_request": BadRequestError,
    "server": ModelServerError,
}
_STEP_KEYS = frozenset(
    {"text", "tool_calls", "usage", "stop", "delay", "error", "kind"}
)


def _usage(raw: object) -> Usage:
    if raw is None:
        return Usage()
    if (
        isinstance(raw, list)
        and len(raw) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in raw)
    ):
        return Usage(raw[0], raw[1], requests=1)
    raise ConfigError(f"'usage' must be [input_tokens, output_tokens], got {raw!r}")


def _call(raw: object, index: int) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"tool call #{index} needs a 'name' string: {raw!r}")
    arguments = raw.get("input", {})
    if not isinstance(arguments, dict):
        raise ConfigError(f"tool call #{index}: 'input' must be an object")
    return ToolCall(str(raw.get("id") or f"call_{index}"), raw["name"], arguments)


def _response(raw: Mapping[str, Any]) -> ModelResponse:
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ConfigError("'tool_calls' must be a list")
    blocks: list[Text | ToolCall] = [Text(raw["text"])] if raw.get("text") else []
    blocks.extend(_call(c, i) for i, c in enumerate(calls, start=1))
    default_stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
    try:
        stop = StopReason(raw["stop"]) if "stop" in raw else default_stop
    except ValueError as exc:
        raise ConfigError(f"unknown stop reason {raw['stop']!r}") from exc
    return ModelResponse(blocks, stop, _usage(raw.get("usage")))


def _step(raw: object) -> ScriptStep:
    if not isinstance(raw, dict):
        raise ConfigError(f"a script step must be an object, got {raw!r}")
    unknown = sorted(set(raw) - _STEP_KEYS)
    if unknown:
        raise ConfigError(f"unknown script step key(s) {unknown}")
    delay = raw.get("delay", 0.0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise ConfigError(f"'delay' must be seconds >= 0, got {delay!r}")
    if "error" in raw:
        kind = raw.get("kind", "bad_request")
        if kind not in _ERRORS:
            raise ConfigError(f"unknown error kind {kind!r}; known: {sorted(_ERRORS)}")
        error = _ERRORS[kind](str(raw["error"]))
        return ScriptStep(ModelResponse(()), first_chunk_delay=delay, error=error)
    return ScriptStep(_response(raw), first_chunk_delay=delay)


def _scripted(text: str) -> ScriptedModel:
    try:
        data: object = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"scripted model: invalid JSON: {exc}") from exc
    name = "scripted"
    if isinstance(data, dict):
        name = str(data.get("name", name))
        data = data.get("steps")
    if not isinstance(data, list) or not data:
        raise ConfigError("scripted model: expected a non-empty list of steps")
    return ScriptedModel([_step(s) for s in data], name=name)


def model_from_spec(spec: str) -> Model:
    """The model a batch spec names: ``scripted:<json>`` here, anything else `resolve_model`.

    A script is a JSON list of steps (or ``{"name": ..., "steps": [...]}``);
    each step is one model response: ``{"text": ..., "tool_calls": [{"id",
    "name", "input"}], "usage": [in, out], "stop": "end_turn", "delay": s}``,
    or a failure ``{"error": "message", "kind": "bad_request" | "server"}``.

    Raises:
        ConfigError: for a spec or script it cannot use.
    """
    if spec.startswith(SCRIPTED_PREFIX):
        return _scripted(spec[len(SCRIPTED_PREFIX) :])
    return resolve_model(spec)


def scripted_spec(steps: list[dict[str, Any]], *, name: str | None = None) -> str:
    """A ``scripted:<json>`` spec for `steps` (the inverse of `model_from_spec`)."""
    body: object = steps if name is None else {"name": name, "steps": steps}
    return SCRIPTED_PREFIX + json.dumps(body, separators=(",", ":"))
