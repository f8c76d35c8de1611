"""SDK conformance fixtures: real clocks, and a loopback server per test.

The official SDKs make real socket calls with real timeouts. trio's autojumping
MockClock would fire those timeouts the moment the test waits on the loopback
socket, so these tests run on asyncio and on trio with its real clock. The
gateway's schedule is asserted to the second under MockClock in
tests/models/test_models_retry.py, with errors produced here from the wire.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from models_loopback import LoopbackServer


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio and trio, both on the real clock (see the module docstring)."""
    return request.param


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, (
        f"requests with no scripted reply: {loopback.unexpected}"
    )
    assert not loopback.errors, f"the loopback server failed: {loopback.errors}"
