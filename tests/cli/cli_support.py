"""Helpers for the CLI tests: model scripts as JSON files, JSON-line parsing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def script(path: Path, *steps: dict[str, Any]) -> Path:
    """Write a `--scripted` model script and return its path."""
    path.write_text(json.dumps({"name": "scripted-test", "steps": list(steps)}))
    return path


def tools(
    *calls: tuple[str, str, dict[str, Any]], text: str = "", **timing: Any
) -> dict[str, Any]:
    """A step calling tools: ``(id, name, input)`` triples."""
    return {
        "text": text,
        "tool_calls": [{"id": i, "name": n, "input": a} for i, n, a in calls],
        "usage": {"input_tokens": 100, "output_tokens": 10},
        **timing,
    }


def final(text: str) -> dict[str, Any]:
    """A final answer step."""
    return {"text": text, "usage": {"input_tokens": 120, "output_tokens": 5}}


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of `text` parsed as JSON."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]
