"""Imported by `toolweave.integrations.openai_agents` before the Agents SDK itself.

Without the extra, the import fails with a `MissingExtraError` naming
``toolweave[openai-agents]``, not with a bare ``No module named 'agents'``.
"""

from __future__ import annotations

from .._extras import missing_extra

try:
    import agents
except ImportError as exc:
    raise missing_extra(
        exc,
        extra="openai-agents",
        needs="toolweave.integrations.openai_agents needs the OpenAI Agents SDK",
    ) from exc

__all__ = ["agents"]
