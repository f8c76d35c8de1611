"""Fixtures of the execution tests."""

from __future__ import annotations

import pytest
from lifecycle_helpers import Approvals


@pytest.fixture
def virtual_time(anyio_backend: object) -> bool:
    """True on trio, whose MockClock makes durations exact (assert them only then)."""
    name = anyio_backend[0] if isinstance(anyio_backend, tuple) else anyio_backend
    return name == "trio"


@pytest.fixture
def approvals() -> Approvals:
    """The `guarded` tool, always asked about, what of it ran, and runners over it."""
    return Approvals()
