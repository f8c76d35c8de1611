"""Model scripts as data: the one format of ``--scripted FILE`` and ``scripted:<json>`` specs.

A script is a JSON list of steps, or ``{"name": ..., "steps": [...]}``. Each
step is one model response::

    {"text": "Let me look.",
     "tool_calls": [{"id": "c1", "name": "read", "input": {"path": "a.txt"}}],
     "usage": {"input_tokens": 100, "output_tokens": 20},   # or [100, 20]
     "stop": "tool_use",                                     # or "stop_reason"
     "delay": 0.0, "chunk_delay": 0.0, "text_chunk_chars": null}

or a failure ``{"error": "message", "kind": "bad_request" | "server"}``.
``stop`` defaults to ``tool_use`` when the step has tool calls, else
``end_turn``; a call without an id gets ``call_<n>``. ``first_chunk_delay`` is
another spelling of ``delay``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._exceptions import BadRequestError, ConfigError, ModelError, ModelServerError
from ..messages import ModelResponse, StopReason, Text, ToolCall, Usage
from ..models import Model, ScriptedModel, ScriptStep, resolve_model

__all__ = ["SCRIPTED_PREFIX", "model_from_spec", "scripted_model", "scripted_spec"]

SCRIPTED_PREFIX = "scripted:"
"""Model specs starting with this hold a JSON script (tests, benchmarks, demos)."""

_ERRORS: Mapping[str, type[ModelError]] = {
    "bad_request": BadRequestError,
    "server": ModelServerError,
}
_STEP_KEYS = frozenset(
    {"text", "tool_calls", "usage", "stop", "delay", "error", "kind"}
    | {"stop_reason", "first_chunk_delay", "chunk_delay", "text_chunk_chars"}
)
_ALIASES = {"stop_reason": "stop", "first_chunk_delay": "delay"}


def _count(raw: object) -> bool:
    return isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0


def _usage(raw: object) -> Usage:
    if raw is None:
        return Usage()
    if isinstance(raw, dict) and set(raw) <= {"input_tokens", "output_tokens"}:
        counts = [raw.get("input_tokens", 0), raw.get("output_tokens", 0)]
        if all(_count(n) for n in counts):
            return Usage(counts[0], counts[1], requests=1)
    if isinstance(raw, list) and len(raw) == 2 and all(_count(n) for n in raw):
        return Usage(raw[0], raw[1], requests=1)
    raise ConfigError(
        "'usage' must be [input_tokens, output_tokens] or"
        f' {{"input_tokens": n, "output_tokens": n}}, got {raw!r}'
    )


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


def _seconds(raw: Mapping[str, Any], key: str) -> float:
    value = raw.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"'{key}' must be seconds >= 0, got {value!r}")
    return float(value)


def _canonical(raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(f"a script step must be an object, got {raw!r}")
    unknown = sorted(set(raw) - _STEP_KEYS)
    if unknown:
        raise ConfigError(f"unknown script step key(s) {unknown}")
    step: dict[str, Any] = {}
    for key, value in raw.items():
        step[_ALIASES.get(str(key), str(key))] = value
    if len(step) < len(raw):
        raise ConfigError(f"a script step spells one key two ways: {sorted(raw)}")
    return step


def _step(raw: object) -> ScriptStep:
    step = _canonical(raw)
    delay = _seconds(step, "delay")
    chunk_delay = _seconds(step, "chunk_delay")
    chars = step.get("text_chunk_chars")
    if chars is not None and not (_count(chars) and chars >= 1):
        raise ConfigError(f"'text_chunk_chars' must be a count >= 1, got {chars!r}")
    if "error" in step:
        kind = step.get("kind", "bad_request")
        if kind not in _ERRORS:
            raise ConfigError(f"unknown error kind {kind!r}; known: {sorted(_ERRORS)}")
        error = _ERRORS[kind](str(step["error"]))
        return ScriptStep(ModelResponse(()), first_chunk_delay=delay, error=error)
    return ScriptStep(
        _response(step),
        first_chunk_delay=delay,
        chunk_delay=chunk_delay,
        text_chunk_chars=chars,
    )


def _scripted(text: str, turns_done: int) -> ScriptedModel:
    try:
        data: object = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"scripted model: invalid JSON: {exc}") from exc
    return scripted_model(data, turns_done=turns_done)


def scripted_model(data: object, *, turns_done: int = 0) -> ScriptedModel:
    """The ScriptedModel a parsed script describes (format in the module doc).

    `turns_done` model responses of the script are already in the session's
    history (a resumed batch session): the model starts with the step after
    them, as a real model would carry on from the transcript.

    Raises:
        ConfigError: for anything that is not a script, or one with no step
            left after `turns_done`.
    """
    name = "scripted"
    if isinstance(data, dict):
        name = str(data.get("name", name))
        data = data.get("steps")
    if not isinstance(data, list) or not data:
        raise ConfigError("scripted model: expected a non-empty list of steps")
    steps = [_step(s) for s in data]
    if turns_done >= len(steps):
        raise ConfigError(
            f"scripted model: {turns_done} of its {len(steps)} steps are already in"
            " the session's history; none is left for the resumed run"
        )
    return ScriptedModel(steps[turns_done:], name=name)


def model_from_spec(spec: str, *, turns_done: int = 0) -> Model:
    """The model a batch spec names: ``scripted:<json>`` here, anything else `resolve_model`.

    The script is the same format ``toolweave run --scripted FILE`` reads (see
    the module doc). `turns_done`: model responses already in a resumed
    session's history (a script skips that many steps; a real model reads the
    history instead).

    Raises:
        ConfigError: for a spec or script it cannot use.
    """
    if spec.startswith(SCRIPTED_PREFIX):
        return _scripted(spec[len(SCRIPTED_PREFIX) :], turns_done)
    return resolve_model(spec)


def scripted_spec(steps: list[dict[str, Any]], *, name: str | None = None) -> str:
    """A ``scripted:<json>`` spec for `steps` (the inverse of `model_from_spec`)."""
    body: object = steps if name is None else {"name": name, "steps": steps}
    return SCRIPTED_PREFIX + json.dumps(body, separators=(",", ":"))
