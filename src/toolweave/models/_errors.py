"""Shared pieces of the provider error seams: Retry-After parsing and status classification.

Each SDK has its own seam (`_anthropic_errors`, `_openai_errors`); both end here
so that a 429 means the same thing whichever SDK raised it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from .._exceptions import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    OverloadedError,
    PromptTooLongError,
    RateLimitedError,
)

__all__ = [
    "ErrorTable",
    "classify_status",
    "describe",
    "names_parameter",
    "parse_retry_after",
    "refuses_streaming",
]

_PROMPT_TOO_LONG = re.compile(
    r"prompt is too long|context[ _-]length|maximum context|context window"
    r"|too many (input )?tokens|input is too long|exceeds the context",
    re.IGNORECASE,
)
_RATE_LIMIT_KINDS = frozenset(
    {"rate_limit_error", "rate_limit_exceeded", "rate_limited"}
)
_QUOTA_KINDS = frozenset({"insufficient_quota", "billing_error"})
_OVERLOAD_KINDS = frozenset({"overloaded_error", "overloaded", "server_overloaded"})
_TOO_LONG_KINDS = frozenset({"request_too_large", "context_length_exceeded"})
_AUTH_KINDS = frozenset({"authentication_error", "permission_error", "invalid_api_key"})
_SERVER_KINDS = frozenset({"api_error", "server_error", "internal_error"})
_BAD_REQUEST_KINDS = frozenset({"invalid_request_error", "not_found_error"})


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: datetime | None = None
) -> float | None:
    """Seconds the server asked us to wait, or None if it did not say (or said nonsense).

    Reads ``retry-after-ms`` (milliseconds, sent by both Anthropic and OpenAI)
    first, then ``retry-after`` as delta-seconds or as an HTTP-date (RFC 9110
    §10.2.3, the RFC 1123 form and its obsolete variants). A date in the past
    means "now" (0.0). `now` is the wall clock to measure a date against;
    tests pass it, callers leave it None. Never raises; clamping is the
    retry policy's job, not the parser's.
    """
    if headers is None:
        return None
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    reference = now if now is not None else datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())


def _number(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if value != value or value < 0 or value == float("inf"):  # NaN, negative, inf
        return None
    return value


def classify_status(
    status: int,
    message: str,
    *,
    kind: str | None = None,
    retry_after: float | None = None,
) -> ModelError:
    """The neutral error for an HTTP status and the provider's error type string.

    `kind` is the provider's own error type or code (``overloaded_error``,
    ``rate_limit_exceeded`` …). Errors sent inside a stream arrive with the
    stream's status 200, so for them `kind` is all there is. A quota code beats
    everything (waiting does not help); 429, 503 and 529 beat a generic kind.
    Unknown errors with a 5xx (or 200) status are server errors, unknown 4xx
    are bad requests.
    """
    kind = (kind or "").lower() or None
    if kind in _QUOTA_KINDS:
        return AuthenticationError(message)
    if kind in _RATE_LIMIT_KINDS or status == 429:
        return RateLimitedError(message, retry_after=retry_after)
    if kind in _OVERLOAD_KINDS or status in (503, 529):
        return OverloadedError(message, retry_after=retry_after)
    return _classify_rest(status, message, kind)


def _classify_rest(status: int, message: str, kind: str | None) -> ModelError:
    request_fault = 400 <= status < 500 or kind in _BAD_REQUEST_KINDS
    too_long_text = request_fault and _PROMPT_TOO_LONG.search(message) is not None
    if kind in _TOO_LONG_KINDS or status == 413 or too_long_text:
        return PromptTooLongError(message)
    if kind in _AUTH_KINDS or status in (401, 403):
        return AuthenticationError(message)
    if status in (408, 499):
        return ModelConnectionError(message)
    if kind in _BAD_REQUEST_KINDS:
        return BadRequestError(message)
    if kind in _SERVER_KINDS:
        return ModelServerError(message)
    if 400 <= status < 500:
        return BadRequestError(message)
    return ModelServerError(message)


def names_parameter(error: BaseException, parameter: str) -> bool:
    """Whether a rejected request's error names `parameter` (``parallel_tool_calls`` …)."""
    return isinstance(error, BadRequestError) and parameter in str(error)


# "stream", "streaming", "stream_options", but not "upstream" (a proxy's
# "upstream connect error" is about its backend, not about streaming).
_STREAMING_WORD = re.compile(r"(?<![a-z])stream", re.IGNORECASE)


def refuses_streaming(exc: BaseException, mapped: ModelError) -> bool:
    """Whether the server refused a request *because* it was streamed.

    Servers say it in many ways (llama-cpp-python: HTTP 500 "Automatic
    streaming tool choice is not supported"; others a 400 about ``stream`` or
    ``stream_options``), so no one message is matched. It is a refusal when the
    SDK raised an HTTP status error (`exc` has a 4xx/5xx ``status_code``) that
    we classified as a plain bad request or server error (not a rate limit,
    overload, auth failure or too-long prompt, which have their own remedies),
    and the server's own words (``message`` / ``body``, never our prefix) name
    streaming. Errors sent inside an already-open stream (status 200) are not
    refusals: the stream was accepted. Nor is an HTML page (a proxy's error
    page is about the proxy). Still only a suspicion: the provider model learns
    it only once the same request sent whole is answered.
    """
    if type(mapped) not in (BadRequestError, ModelServerError):
        return False
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or not 400 <= status < 600:
        return False
    headers = getattr(getattr(exc, "response", None), "headers", None)
    media = headers.get("content-type", "") if headers is not None else ""
    if "html" in str(media).lower():
        return False
    said = f"{getattr(exc, 'message', '')} {getattr(exc, 'body', '')}"
    return _STREAMING_WORD.search(said) is not None


def describe(exc: BaseException) -> str:
    """``Type: message``, with the underlying cause when the SDK wrapped one."""
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text


def _dotted(cls: type[BaseException]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass(frozen=True, slots=True)
class ErrorTable:
    """One SDK's exception classes mapped to the neutral taxonomy.

    `by_class` holds classes the SDK exports; `by_name` holds classes from its
    private modules by dotted name, so mapping them costs no import.
    """

    by_class: Mapping[type[BaseException], type[ModelError]]
    """Exception class -> neutral class."""
    by_name: Mapping[str, type[ModelError]]
    """``module.QualName`` -> neutral class."""

    def entry(self, cls: type[BaseException]) -> type[BaseException] | None:
        """The nearest ancestor of `cls` (itself included) the table maps, or None."""
        for klass in cls.__mro__:
            if klass in self.by_class or _dotted(klass) in self.by_name:
                return klass
        return None

    def neutral_for(self, cls: type[BaseException]) -> type[ModelError] | None:
        """The neutral class for `cls`, through its nearest mapped ancestor."""
        entry = self.entry(cls)
        if entry is None:
            return None
        return self.by_class.get(entry) or self.by_name[_dotted(entry)]
