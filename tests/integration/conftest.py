"""The real llama-cpp-python server, started once per test session for the `llama` tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llama_server import missing, running_server


@pytest.fixture(scope="session")
def llama_url() -> Iterator[str]:
    """The base URL (``…/v1``) of a running server; the server stops with the session.

    Skipped when the server or the model is not installed, except in CI
    (``CI=true``), where that is a failure: CI installs both (.ci/setup-extras)
    and its real-server tests must never be skipped silently.
    """
    reason = missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the real-server tests: {reason}", pytrace=False)
        pytest.skip(reason)
    with running_server() as url:
        yield url
