"""The SDK error seams are exhaustive, and Retry-After parsing handles every form.

Every exception class each SDK (and httpx2, whose errors leak out of a stream
being read) defines is walked: a class that reaches only its family's catch-all
is unmapped and fails the test, so a new SDK release cannot slip one in.
"""

from __future__ import annotations

import importlib
import pkgutil
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anthropic
import httpx2
import openai
import pytest

from toolweave import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    OverloadedError,
    PromptTooLongError,
    RateLimitedError,
)
from toolweave.models import parse_retry_after
from toolweave.models._anthropic_errors import ANTHROPIC_ROOTS, map_anthropic_error
from toolweave.models._anthropic_errors import table_entry as anthropic_entry
from toolweave.models._errors import classify_status
from toolweave.models._openai_errors import OPENAI_ROOTS, map_openai_error
from toolweave.models._openai_errors import table_entry as openai_entry


def _import_all(package: str, skip: tuple[str, ...]) -> None:
    """Import the SDK's modules that may define exceptions (not its data types)."""
    try:
        module = importlib.import_module(package)
    except Exception:  # an optional extra that is not installed (numpy, boto3 …)
        return
    for info in pkgutil.iter_modules(
        getattr(module, "__path__", []), prefix=package + "."
    ):
        if not info.name.startswith(skip):
            _import_all(info.name, skip)


def _subclasses(root: type[BaseException]) -> set[type[BaseException]]:
    found = {root}
    for sub in root.__subclasses__():
        found |= _subclasses(sub)
    return found


def _walk(roots: tuple[type[BaseException], ...]) -> list[type[BaseException]]:
    return sorted(
        {cls for root in roots for cls in _subclasses(root)},
        key=lambda c: c.__qualname__,
    )


_import_all(
    "anthropic",
    (
        "anthropic.types",
        "anthropic.resources",
        "anthropic.lib.vertex",
        "anthropic.lib.bedrock",
    ),
)
_import_all(
    "openai", ("openai.types", "openai.resources", "openai.cli", "openai.helpers")
)

ANTHROPIC_CLASSES = _walk(ANTHROPIC_ROOTS)
OPENAI_CLASSES = _walk(OPENAI_ROOTS)
STATUS_ERRORS = (anthropic.APIStatusError, openai.APIStatusError)


@pytest.mark.parametrize(
    "cls", ANTHROPIC_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}"
)
def test_every_anthropic_exception_class_is_mapped(cls: type[BaseException]) -> None:
    _assert_mapped(cls, anthropic_entry(cls), ANTHROPIC_ROOTS)


@pytest.mark.parametrize(
    "cls", OPENAI_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}"
)
def test_every_openai_exception_class_is_mapped(cls: type[BaseException]) -> None:
    _assert_mapped(cls, openai_entry(cls), OPENAI_ROOTS)


def _assert_mapped(
    cls: type[BaseException],
    entry: type[BaseException] | None,
    roots: tuple[type[BaseException], ...],
) -> None:
    assert entry is not None, f"{cls} has no mapping"
    if issubclass(cls, STATUS_ERRORS):
        return  # classified by status code, checked below
    assert cls in roots or entry not in roots, (
        f"{cls.__module__}.{cls.__qualname__} reaches only the catch-all {entry.__qualname__}: "
        "add it to the seam's table"
    )


def _response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/x")
    return httpx2.Response(status, headers=headers or {}, request=request)


def _expected_for(status: int) -> type[ModelError]:
    if status == 429:
        return RateLimitedError
    if status in (503, 529):
        return OverloadedError
    if status == 413:
        return PromptTooLongError
    if status in (401, 403):
        return AuthenticationError
    if status in (408, 499):
        return ModelConnectionError
    if status >= 500:
        return ModelServerError
    return BadRequestError


def _status_classes(
    classes: list[type[BaseException]],
) -> list[tuple[type[BaseException], int]]:
    out: list[tuple[type[BaseException], int]] = []
    for cls in classes:
        status = (
            cls.__dict__.get("status_code") if issubclass(cls, STATUS_ERRORS) else None
        )
        for klass in cls.__mro__:
            status = status or klass.__dict__.get("status_code")
        if issubclass(cls, STATUS_ERRORS) and isinstance(status, int):
            out.append((cls, status))
    return out


@pytest.mark.parametrize(
    ("cls", "status"),
    _status_classes(ANTHROPIC_CLASSES) + _status_classes(OPENAI_CLASSES),
    ids=lambda v: v.__qualname__ if isinstance(v, type) else str(v),
)
def test_every_status_error_class_maps_by_its_status(
    cls: type[BaseException], status: int
) -> None:
    try:
        error = cls("boom", response=_response(status), body=None)  # type: ignore[call-arg]
    except TypeError:  # openai.OAuthError takes keywords only
        error = cls(response=_response(status), body=None)  # type: ignore[call-arg]
    mapped = (
        map_anthropic_error(error)
        if issubclass(cls, anthropic.APIError)
        else map_openai_error(error)
    )
    assert type(mapped) is _expected_for(status)


def test_non_sdk_exceptions_are_left_alone() -> None:
    assert map_anthropic_error(ValueError("x")) is None
    assert map_openai_error(KeyError("x")) is None
    assert map_anthropic_error(ModelServerError("already neutral")) is None


def test_a_spend_limit_429_is_not_a_rate_limit() -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "spend",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    error = anthropic.RateLimitError("spend", response=_response(429), body=body)
    assert type(map_anthropic_error(error)) is AuthenticationError
    quota = openai.RateLimitError(
        "quota",
        response=_response(429),
        body={"code": "insufficient_quota", "type": "insufficient_quota"},
    )
    assert type(map_openai_error(quota)) is AuthenticationError


def test_an_in_stream_openai_error_is_classified_by_its_code() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/x")
    for code, expected in [
        ("rate_limit_exceeded", RateLimitedError),
        ("context_length_exceeded", PromptTooLongError),
        ("server_error", ModelServerError),
        (None, ModelServerError),
    ]:
        error = openai.APIError("boom", request, body={"code": code, "type": None})
        assert type(map_openai_error(error)) is expected


@pytest.mark.parametrize(
    ("status", "kind", "message", "expected"),
    [
        (200, "overloaded_error", "Overloaded", OverloadedError),
        (200, "rate_limit_error", "slow", RateLimitedError),
        (
            200,
            "invalid_request_error",
            "prompt is too long: 300000 tokens",
            PromptTooLongError,
        ),
        (200, "invalid_request_error", "bad", BadRequestError),
        (200, "api_error", "oops", ModelServerError),
        (200, None, "unknown", ModelServerError),
        (503, "server_error", "unavailable", OverloadedError),
        (401, "invalid_request_error", "no key", AuthenticationError),
        (400, "unsupported_parameter", "parallel_tool_calls", BadRequestError),
        (
            400,
            None,
            "This model's maximum context length is 128000 tokens",
            PromptTooLongError,
        ),
        (500, None, "context length in logs", ModelServerError),
        (418, None, "teapot", BadRequestError),
    ],
)
def test_classification(
    status: int, kind: str | None, message: str, expected: type[ModelError]
) -> None:
    assert type(classify_status(status, message, kind=kind)) is expected


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": " 12 "}, 12.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "0"}, 0.0),
        (
            {"retry-after": format_datetime(NOW + timedelta(seconds=30), usegmt=True)},
            30.0,
        ),
        ({"retry-after": "Thu, 01 Jan 2026 12:01:00 GMT"}, 60.0),  # RFC 1123
        ({"retry-after": "Thursday, 01-Jan-26 12:00:45 GMT"}, 45.0),  # RFC 850
        ({"retry-after": "Thu Jan  1 12:00:10 2026"}, 10.0),  # asctime
        (
            {"retry-after": format_datetime(NOW - timedelta(seconds=30), usegmt=True)},
            0.0,
        ),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "nonsense", "retry-after": "9"}, 9.0),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_retry_after_without_headers() -> None:
    assert parse_retry_after(None) is None
