"""A ScriptedModel from a JSON file: the hidden ``--scripted PATH`` testing aid.

Not a way to run real tasks: it replays fixed responses, so tests (and anyone
reproducing a bug) can drive the real CLI end to end with no API key. Format::

    {"name": "scripted",
     "steps": [
       {"text": "Let me look.",
        "tool_calls": [{"id": "c1", "name": "read", "input": {"path": "a.txt"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 100, "output_tokens": 20},
        "first_chunk_delay": 0.0, "chunk_delay": 0.0, "text_chunk_chars": null},
       {"text": "Done."}
     ]}

A bare list of steps is accepted too. `stop_reason` defaults to ``tool_use``
when the step has tool calls and ``end_turn`` otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._exceptions import ConfigError
from ..messages import ModelResponse, StopReason, Text, ToolCall, Usage
from ..models import ScriptedModel, ScriptStep

__all__ = ["load_script"]


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    input: dict[str, Any] = {}


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[_Call] = []
    stop_reason: StopReason | None = None
    usage: dict[str, int] = {}
    first_chunk_delay: float = Field(0.0, ge=0)
    chunk_delay: float = Field(0.0, ge=0)
    text_chunk_chars: int | None = Field(None, ge=1)

    def to_step(self) -> ScriptStep:
        blocks: list[Text | ToolCall] = [Text(self.text)] if self.text else []
        blocks.extend(ToolCall(c.id, c.name, c.input) for c in self.tool_calls)
        stop = self.stop_reason or (
            StopReason.TOOL_USE if self.tool_calls else StopReason.END_TURN
        )
        usage = Usage(
            self.usage.get("input_tokens", 0), self.usage.get("output_tokens", 0)
        )
        return ScriptStep(
            ModelResponse(blocks, stop, usage),
            first_chunk_delay=self.first_chunk_delay,
            chunk_delay=self.chunk_delay,
            text_chunk_chars=self.text_chunk_chars,
        )


class _Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "scripted"
    steps: list[_Step]


def load_script(path: Path) -> ScriptedModel:
    """The ScriptedModel a JSON script file describes.

    Raises:
        ConfigError: if the file is unreadable, not JSON, or not a script.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the script: {exc}") from exc
    if isinstance(raw, list):
        raw = {"steps": raw}
    try:
        script = _Script.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a model script: {exc}") from exc
    return ScriptedModel([s.to_step() for s in script.steps], name=script.name)
