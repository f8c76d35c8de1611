"""The one seam where `anthropic` SDK exceptions become toolweave `ModelError`s.

Status errors are classified by their HTTP status and the body's error type
(an error sent inside a stream arrives with status 200 and the type only).
The SDK does not wrap transport errors raised while a stream is read, so the
`httpx2` exceptions are mapped here too. `tests/models/test_error_seams.py`
walks every SDK exception class and fails if one has no entry in `_TABLE`.
"""

from __future__ import annotations

import json

import anthropic
import httpx2

from .._exceptions import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
)
from ._endpoint import anthropic_base_hint, no_api_at_path, request_url, unreachable
from ._errors import ErrorTable, classify_status, describe, parse_retry_after
from ._unexpected import non_api_body

__all__ = ["ANTHROPIC_ROOTS", "map_anthropic_error", "table_entry"]

ANTHROPIC_ROOTS: tuple[type[BaseException], ...] = (
    anthropic.AnthropicError,
    httpx2.HTTPError,
)
"""The exception families of the Anthropic path. A root's own table entry is a
catch-all: a subclass that reaches only a root's entry counts as unmapped."""

# 429s that are spend limits, not rate limits: waiting does not help.
_QUOTA_CODES = frozenset(
    {
        "contract_spend_limit_reached",
        "enforced_spend_limit_reached",
        "linked_organization_spend_limit_reached",
        "linked_organization_billing_unavailable",
    }
)

# SDK class -> neutral class, for the errors that are not status-classified.
# Looked up along the exception's MRO, most specific first.
_TABLE: dict[type[BaseException], type[ModelError]] = {
    anthropic.AnthropicError: ModelServerError,
    anthropic.APIError: ModelServerError,
    anthropic.APIStatusError: ModelServerError,  # status-classified below
    anthropic.APIResponseValidationError: ModelServerError,
    anthropic.APIConnectionError: ModelConnectionError,
    anthropic.APITimeoutError: ModelConnectionError,
    anthropic.RetryableError: ModelServerError,
    anthropic.APIWebhookValidationError: BadRequestError,
    anthropic.CredentialsError: AuthenticationError,
    anthropic.WorkloadIdentityError: AuthenticationError,
    httpx2.HTTPError: ModelConnectionError,
    httpx2.RequestError: ModelConnectionError,  # incl. a stream cut mid-way
    httpx2.HTTPStatusError: ModelServerError,
    httpx2.StreamError: ModelConnectionError,
    httpx2.InvalidURL: BadRequestError,
}

# Exceptions defined in private SDK modules, matched by name: importing those
# modules (the beta agents helpers take ~0.7 s) only to map them is not worth it.
_BY_NAME: dict[str, type[ModelError]] = {
    "anthropic.lib.foundry.MutuallyExclusiveAuthError": AuthenticationError,
    "anthropic.lib._extras._common.MissingDependencyError": BadRequestError,
    "anthropic.lib.tools._toolsets._errors.ToolsetUsageError": BadRequestError,
    # A stream object read twice; a fresh attempt opens a fresh stream.
    "anthropic._response.StreamAlreadyConsumed": ModelConnectionError,
}


_SEAM = ErrorTable(_TABLE, _BY_NAME)
table_entry = _SEAM.entry
"""The nearest ancestor of a class (itself included) that the seam maps, or None."""
_neutral_for = _SEAM.neutral_for


def map_anthropic_error(exc: BaseException) -> ModelError | None:
    """The neutral error for an `anthropic`/`httpx2` exception; None if it is neither.

    429 → `RateLimitedError` and 529/503 → `OverloadedError`, both with
    Retry-After parsed; prompt-too-long signals → `PromptTooLongError`; 401/403
    → `AuthenticationError`; other 4xx → `BadRequestError`; 5xx →
    `ModelServerError`; transport failures and cut streams →
    `ModelConnectionError`. A 404 that is not the API's own (no API at that
    URL) and a request that found no server say so, name the URL and the
    likely fix, and are marked as never reaching a model (`_endpoint`). The
    caller raises the result ``from exc``.
    """
    if isinstance(exc, anthropic.APIStatusError):
        wrong_url = no_api_at_path(
            exc.response, api_paths=("/v1/messages",), hint=anthropic_base_hint
        )
        return wrong_url or _from_status(exc)
    if isinstance(exc, json.JSONDecodeError):
        return ModelServerError(f"the provider sent malformed stream data: {exc}")
    neutral = _neutral_for(type(exc))
    if neutral is None:
        return None
    url = request_url(exc) if neutral is ModelConnectionError else None
    found = None if url is None else unreachable(exc, url)
    return found or neutral(describe(exc))


def _from_status(exc: anthropic.APIStatusError) -> ModelError:
    kind = exc.type if isinstance(exc.type, str) else None
    # An error event inside a stream arrives with the stream's status, 200.
    where = "stream error" if exc.status_code < 400 else str(exc.status_code)
    said = non_api_body(exc.response) if exc.status_code >= 400 else None
    message = f"anthropic {where} {kind or 'error'}: {said or exc.api_message or exc}"
    if exc.error_code in _QUOTA_CODES:
        return AuthenticationError(message)
    return classify_status(
        exc.status_code,
        message,
        kind=kind,
        retry_after=parse_retry_after(exc.response.headers),
    )
