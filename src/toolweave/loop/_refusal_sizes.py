"""stated_sizes: the request's size and the window, as a prompt-too-long refusal words them.

Prompt-too-long recovery aims at what the provider said (the refused request's
size, its window) rather than at the estimate that let the request go.
"""

from __future__ import annotations

import re

__all__ = ["stated_sizes"]

_NUMBER = r"(\d[\d,]*)"
_ANTHROPIC = re.compile(rf"{_NUMBER}\s*tokens?\s*>\s*{_NUMBER}", re.IGNORECASE)
_WINDOW = re.compile(
    rf"(?:maximum context length|context (?:window|size|length)|n_ctx)\D{{0,40}}{_NUMBER}",
    re.IGNORECASE,
)
_REQUESTED = re.compile(
    rf"(?:resulted in|requested|n_prompt_tokens\W{{0,4}}|prompt (?:has|of|is))\s*{_NUMBER}"
    r"(?:\s*tokens?\s*\((\d[\d,]*)\s*in the messages)?",
    re.IGNORECASE,
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def stated_sizes(message: str) -> tuple[int | None, int | None]:
    """(the request's tokens, the window) as a prompt-too-long message states them.

    Anthropic: ``prompt is too long: 215000 tokens > 200000 maximum``; OpenAI:
    ``maximum context length is 128000 tokens. However, your messages resulted
    in 150000 tokens`` (or ``you requested 150000 tokens (140000 in the
    messages, …)``); llama.cpp: ``n_prompt_tokens``/``n_ctx``. None for what
    the message does not say.
    """
    found = _ANTHROPIC.search(message)
    if found:
        return _int(found.group(1)), _int(found.group(2))
    window_match = _WINDOW.search(message)
    window = _int(window_match.group(1)) if window_match else None
    requested: int | None = None
    for match in _REQUESTED.finditer(message):
        value = _int(match.group(2) or match.group(1))
        if value != window:
            requested = value
            break
    return requested, window
