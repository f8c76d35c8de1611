"""Every recorded run in these tests must mirror the loop's transcript as it goes."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture
def allow_drift() -> None:
    """Request it in a test that feeds a recorder a run it cannot mirror on purpose."""


@pytest.fixture(autouse=True)
def _no_transcript_drift(
    request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> Iterator[None]:
    """Fail a test whose recorder had to repair the transcript at the end of a run."""
    caplog.set_level(logging.WARNING, logger="toolweave.sessions")
    yield
    if "allow_drift" in request.fixturenames:
        return
    drift = [r.getMessage() for r in caplog.records if r.name == "toolweave.sessions"]
    assert drift == [], "the recorded transcript drifted from the loop's"
