"""The frameworks run on asyncio only (they call asyncio's API themselves)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """asyncio: the frameworks under test do not run on trio."""
    return "asyncio"
