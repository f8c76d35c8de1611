"""Fault rows run real components: real clocks on both backends, a loopback server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import LoopbackServer


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio on its real clock.

    The official SDKs and MCP servers wait on real sockets and pipes: under
    trio's autojumping MockClock every such wait would let virtual time jump to
    the next deadline. Nothing here asserts a duration.
    """
    return request.param


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A scripted provider endpoint; fails the test on an unscripted request."""
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, f"unscripted requests: {loopback.unexpected}"
    assert not loopback.errors, f"the loopback server failed: {loopback.errors}"
