"""What we know about models: context windows, the `parallel_tool_calls` flag, streaming.

The request-side flag only says whether the model may put several tool calls in
one response (as in Codex); it never changes how calls run. Some families reject it
with a 400, and sending it anyway caused 400-error loops in the wild (as in OpenClaw),
so the flag is sent only to families known to accept it.

What the tables cannot know, a model learns from its server and keeps in a
`LearnedCapabilities`: that the server rejected the flag by name, that it
refuses to stream a response when tools are offered (llama-cpp-python's server
answers such a request with HTTP 500 "Automatic streaming tool choice is not
supported", or an empty event stream), or that it rejects an assistant turn
sent with ``content: null`` (llama-cpp-python again: HTTP 500 "Input should be
a valid string"). Each is learned once, only from the refusal it is about (a
refusal to stream only once the same request sent whole was answered, a
refusal of null content only once the same request with "" was), and holds
for the life of the model object. Any other failure,
an HTML page from a proxy included, teaches nothing (`_provider`, `_unexpected`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "Capabilities",
    "LearnedCapabilities",
    "Provider",
    "context_window_for",
    "is_reasoning_family",
    "parallel_flag_supported",
]

Provider: TypeAlias = Literal["anthropic", "openai", "openai-compatible"]
"""Who serves the model: the wire format plus whose capability table applies."""

# Longest matching prefix wins. Numbers are the providers' published input windows.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-", 200_000),
)

# Families that must never get `parallel_tool_calls` (checked first): the
# reasoning-only o1 / o3-mini families and "lite" endpoints reject it (seed 001:
# Codex ANDs the flag with a Lite marker; seed 004: unsupported models 400).
_OPENAI_FLAG_DENY = re.compile(r"^(o1($|-)|o3-mini)|(^|[-_.])lite($|[-_.])")
# Families that accept it. Anything else gets no flag: the provider default
# (parallel allowed) applies, which is always safe because execution is gated.
_OPENAI_FLAG_ALLOW = re.compile(r"^(gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-5|o3($|-)|o4-mini)")
_REASONING_FAMILY = re.compile(r"^(o\d|gpt-5|codex-)")


def _bare(name: str) -> str:
    """The model name without an organisation prefix (``openai/gpt-4o`` -> ``gpt-4o``)."""
    return name.rsplit("/", 1)[-1].lower()


def context_window_for(name: str) -> int | None:
    """The context window of model `name` in tokens, or None if unknown.

    Matching is by the longest known prefix, so dated snapshots
    (``gpt-4o-2024-08-06``) inherit their family's window.
    """
    bare = _bare(name)
    best: tuple[int, int] | None = None
    for prefix, window in _CONTEXT_WINDOWS:
        if bare.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), window)
    return None if best is None else best[1]


def parallel_flag_supported(provider: Provider, name: str) -> bool:
    """Whether a request to `name` may carry the parallel-tool-calls flag.

    Anthropic models all accept ``tool_choice.disable_parallel_tool_use``.
    OpenAI models accept ``parallel_tool_calls`` only in the families listed in
    the allow table, never in the deny table (which wins). An unknown
    OpenAI-compatible server gets no flag: configure the model explicitly
    (``supports_parallel_tool_calls=True``) when the server is known to take it.
    """
    if provider == "anthropic":
        return True
    if provider == "openai-compatible":
        return False
    bare = _bare(name)
    if _OPENAI_FLAG_DENY.search(bare):
        return False
    return _OPENAI_FLAG_ALLOW.search(bare) is not None


def is_reasoning_family(name: str) -> bool:
    """Whether `name` is an OpenAI reasoning model (its reasoning items can be passed back)."""
    return _REASONING_FAMILY.search(_bare(name)) is not None


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a provider model does on the wire now (a snapshot; see `LearnedCapabilities`)."""

    parallel_flag: bool
    """Requests with tools carry the parallel-tool-calls flag."""
    streams_with_tools: bool
    """Requests with tools are streamed (False: sent whole, streaming overlap off)."""
    streams_without_tools: bool
    """Requests without tools are streamed."""
    streaming_with_tools_confirmed: bool
    """A streamed request with tools succeeded, so a later error is never read as a refusal."""


@dataclass(slots=True)
class LearnedCapabilities:
    """What one model learned from its server's refusals. One per model object.

    Every field starts optimistic and only ever moves one way, so each refusal
    costs at most one failed request for the whole session: that is what keeps
    a quirky server from causing a retry loop (as in OpenClaw).
    """

    parallel_flag_rejected: bool = False
    """The server rejected the parallel-tool-calls flag by name."""
    streaming_with_tools: bool | None = None
    """None until known; False once the server refused to stream with tools,
    True once a streamed request with tools was accepted."""
    null_content_rejected: bool = False
    """The server rejected an assistant turn with ``content: null`` and took
    the same request with content "" (Chat Completions only)."""
