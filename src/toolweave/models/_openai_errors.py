"""The one seam where `openai` SDK exceptions become toolweave `ModelError`s.

Used by both OpenAI models (Chat Completions and Responses). Status errors are
classified by HTTP status and the body's ``code``/``type``; an error sent inside
a stream arrives as a bare `openai.APIError` carrying only those. Transport
errors are mapped too, in case one escapes the SDK's own wrapping.
`tests/models/test_error_seams.py` walks every SDK exception class and fails if
one has no entry in `_TABLE`.
"""

from __future__ import annotations

import json

import httpx2
import openai

from .._exceptions import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
)
from ._endpoint import no_api_at_path, openai_base_hint, request_url, unreachable
from ._errors import ErrorTable, classify_status, describe, parse_retry_after
from ._unexpected import non_api_body

__all__ = ["OPENAI_ROOTS", "error_from_payload", "map_openai_error", "table_entry"]

OPENAI_ROOTS: tuple[type[BaseException], ...] = (openai.OpenAIError, httpx2.HTTPError)
"""The exception families of the OpenAI path. A root's own table entry is a
catch-all: a subclass that reaches only a root's entry counts as unmapped."""

_TABLE: dict[type[BaseException], type[ModelError]] = {
    openai.OpenAIError: ModelServerError,
    openai.APIError: ModelServerError,  # code-classified below
    openai.APIStatusError: ModelServerError,  # status-classified below
    openai.APIResponseValidationError: ModelServerError,
    openai.APIConnectionError: ModelConnectionError,
    openai.APITimeoutError: ModelConnectionError,
    # Raised only by the SDK's parse helpers, which we do not use.
    openai.LengthFinishReasonError: BadRequestError,
    openai.ContentFilterFinishReasonError: BadRequestError,
    openai.WebSocketConnectionClosedError: ModelConnectionError,
    openai.WebSocketQueueFullError: ModelConnectionError,
    httpx2.HTTPError: ModelConnectionError,
    httpx2.RequestError: ModelConnectionError,
    httpx2.HTTPStatusError: ModelServerError,
    httpx2.StreamError: ModelConnectionError,
    httpx2.InvalidURL: BadRequestError,
}

# Exceptions defined in private SDK modules, matched by name: importing those
# modules (the beta agents helpers take ~0.7 s) only to map them is not worth it.
_BY_NAME: dict[str, type[ModelError]] = {
    "openai._exceptions.SubjectTokenProviderError": AuthenticationError,
    "openai.lib.azure.MutuallyExclusiveAuthError": AuthenticationError,
    "openai.lib._old_api.APIRemovedInV1": BadRequestError,
    "openai._AmbiguousModuleClientUsageError": BadRequestError,
    "openai._extras._common.MissingDependencyError": BadRequestError,
    # The beta hosted-agents helpers, which we do not use.
    "openai.lib.beta.agents._files.AgentFilePreparationError": BadRequestError,
    "openai.lib.beta.agents._files.AgentFileStagingError": BadRequestError,
    "openai.lib.beta.agents._result.AgentOutputParseError": ModelServerError,
    "openai.lib.beta.agents._result.AgentTurnResultError": ModelServerError,
    # A stream object read twice; a fresh attempt opens a fresh stream.
    "openai._response.StreamAlreadyConsumed": ModelConnectionError,
}


_API_PATHS = ("/chat/completions", "/responses")
"""What the SDK appends to base_url (Chat Completions, Responses)."""

_SEAM = ErrorTable(_TABLE, _BY_NAME)
table_entry = _SEAM.entry
"""The nearest ancestor of a class (itself included) that the seam maps, or None."""
_neutral_for = _SEAM.neutral_for


def map_openai_error(exc: BaseException) -> ModelError | None:
    """The neutral error for an `openai`/`httpx2` exception; None if it is neither.

    429 → `RateLimitedError` (``insufficient_quota`` → `AuthenticationError`,
    waiting does not help), 503/529 → `OverloadedError`, both with Retry-After
    parsed; ``context_length_exceeded`` and its phrasings → `PromptTooLongError`;
    401/403 → `AuthenticationError`; other 4xx → `BadRequestError`; 5xx and
    in-stream errors → `ModelServerError` unless their code says otherwise;
    transport failures → `ModelConnectionError`. A 404 that is not the API's
    own (no API at that URL) and a request that found no server say so, name
    the URL and the likely fix, and are marked as never reaching a model
    (`_endpoint`).
    """
    if isinstance(exc, openai.APIStatusError):
        wrong_url = no_api_at_path(
            exc.response, api_paths=_API_PATHS, hint=openai_base_hint
        )
        if wrong_url is not None:
            return wrong_url
        said = non_api_body(exc.response) or exc.message  # a proxy's page, named
        return classify_status(
            exc.status_code,
            f"openai {exc.status_code} {exc.code or exc.type or 'error'}: {said}",
            kind=exc.code or exc.type,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if type(exc) is openai.APIError:
        return error_from_payload(exc.code or exc.type, exc.message)
    if isinstance(exc, json.JSONDecodeError):
        return ModelServerError(f"the provider sent malformed stream data: {exc}")
    neutral = _neutral_for(type(exc))
    if neutral is None:
        return None
    url = request_url(exc) if neutral is ModelConnectionError else None
    found = None if url is None else unreachable(exc, url)
    return found or neutral(describe(exc))


def error_from_payload(code: str | None, message: str | None) -> ModelError:
    """The neutral error for an error object sent inside a stream (status 200)."""
    text = f"openai stream error {code or ''}: {message or 'no message'}"
    return classify_status(200, text, kind=code)
