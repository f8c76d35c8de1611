"""Imported by `toolweave.integrations.langgraph` before LangGraph itself.

Without the extra, the import fails with a `MissingExtraError` naming
``toolweave[langgraph]``, not with a bare ``No module named 'langgraph'``.
"""

from __future__ import annotations

from .._extras import missing_extra

try:
    import langchain_core
    import langgraph
except ImportError as exc:
    raise missing_extra(
        exc,
        extra="langgraph",
        needs="toolweave.integrations.langgraph needs LangGraph and langchain-core",
    ) from exc

__all__ = ["langchain_core", "langgraph"]
