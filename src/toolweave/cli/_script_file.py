"""A ScriptedModel from a JSON file: the hidden ``--scripted PATH`` testing aid.

Not a way to run real tasks: it replays fixed responses, so tests (and anyone
reproducing a bug) can drive the real CLI end to end with no API key. The file
holds the one script format `toolweave.cluster.scripted_model` reads, the same
that a batch task's ``"model": "scripted:<json>"`` holds::

    {"name": "scripted",
     "steps": [
       {"text": "Let me look.",
        "tool_calls": [{"id": "c1", "name": "read", "input": {"path": "a.txt"}}],
        "usage": {"input_tokens": 100, "output_tokens": 20}},
       {"text": "Done."}
     ]}
"""

from __future__ import annotations

import json
from pathlib import Path

from .._exceptions import ConfigError
from ..cluster import scripted_model
from ..models import ScriptedModel

__all__ = ["load_script"]


def load_script(path: Path) -> ScriptedModel:
    """The ScriptedModel a JSON script file describes.

    Raises:
        ConfigError: if the file is unreadable, not JSON, or not a script.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the script: {exc}") from exc
    try:
        return scripted_model(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: not a model script: {exc}") from exc
