"""Imported by `toolweave.integrations.pydantic_ai` before PydanticAI itself.

Without the extra, the import fails with a `MissingExtraError` naming
``toolweave[pydantic-ai]``, not with a bare ``No module named 'pydantic_ai'``.
"""

from __future__ import annotations

from .._extras import missing_extra

try:
    import pydantic_ai
except ImportError as exc:
    raise missing_extra(
        exc,
        extra="pydantic-ai",
        needs="toolweave.integrations.pydantic_ai needs PydanticAI",
    ) from exc

__all__ = ["pydantic_ai"]
