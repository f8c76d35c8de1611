"""Where a provider model sends its requests: the base URL, and failures to reach it.

Three mistakes with a base URL are common and each used to end as a bare
"Connection error." retried three times, or an SDK message that does not say
which URL: a URL that cannot be one (no ``http://``, a typo in the scheme, a
port past 65535: checked when the model is built, `checked_base_url`, so no
request is ever tried), a server that is not there (connection refused, a
host that does not resolve: `unreachable`), and a server that is there but has
no API at that path (a missing ``/v1``: `no_api_at_path`). Each message names
the URL and the likely fix, and each error says the request never reached a
model (``reached_model`` False): the loop tells the run's end that way and the
CLI stores no session for a run that reached none.

Only the first two classes of the connection failure are retried (a server
may be starting); a URL that cannot be right, or a 404 for the API's own path,
is not: the same request would meet it again.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx2

from .._exceptions import (
    BadRequestError,
    ConfigError,
    ModelConnectionError,
    ModelError,
)
from ._unexpected import non_api_body

__all__ = [
    "anthropic_base_hint",
    "checked_base_url",
    "no_api_at_path",
    "openai_base_hint",
    "request_url",
    "unreachable",
]

_SCHEME_TYPO = re.compile(r"^(https?)(?::/?|/{1,2}|:{2,}/*)(?=[^:/])", re.IGNORECASE)
"""``http//host``, ``http:/host``, ``http::host``: a scheme with a broken separator."""
_SHOWN = 120


def checked_base_url(base_url: str | None, *, variable: str) -> str | None:
    """`base_url` as given, once it is known to be usable as a URL; None stays None.

    None means the SDK reads `variable` (``OPENAI_BASE_URL`` …) or uses the
    provider's own URL: the variable is checked the same way, and named.

    Raises:
        ConfigError: an empty URL, one without ``http://`` or ``https://``,
            one naming no host, or a port that is not one; the message names
            the value and the fix.
    """
    if base_url is not None:
        _check(base_url, "base_url")
        return base_url
    from_environment = os.environ.get(variable)
    if from_environment is not None:
        _check(from_environment, f"${variable}")
    return None


def _check(value: str, source: str) -> None:
    text = value.strip()
    if not text:
        raise ConfigError(
            f"{source} is empty: give the server's URL, such as"
            " 'http://127.0.0.1:8000/v1'"
            + (" (or unset the variable)" if source.startswith("$") else "")
        )
    if "://" not in text:
        typo = _SCHEME_TYPO.match(text)
        fixed = (
            f"{typo.group(1).lower()}://{text[typo.end() :]}"
            if typo
            else f"http://{text}"
        )
        raise ConfigError(
            f"{source} {value!r} has no 'http://' or 'https://' in front:"
            f" write it as {fixed!r}"
        )
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        rest = text.split("://", 1)[1]
        raise ConfigError(
            f"{source} {value!r} starts with {parts.scheme}://; a model server is"
            f" reached over http:// or https://, as in {'http://' + rest!r}"
        )
    if not parts.hostname:
        raise ConfigError(f"{source} {value!r} names no host")
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
        raise ConfigError(
            f"{source} {value!r}: {port!r} is not a port number (1-65535)"
        ) from None


def unreachable(exc: BaseException, url: str) -> ModelError | None:
    """The error for a request that found no server at `url`; None if `exc` is not that.

    Looks through the exception's causes (the SDKs wrap the transport's error,
    which wraps the socket's) for a refused connection, a host name that does
    not resolve, a connect timeout, or a URL the transport cannot send to.
    The first three are `ModelConnectionError` (retryable: a server may be
    starting); the last is a `BadRequestError`. All say no model was reached.
    """
    causes = _causes(exc)
    error: ModelError
    unsendable = _first(causes, (httpx2.UnsupportedProtocol, httpx2.InvalidURL))
    other = _first(causes, (httpx2.ConnectError,))
    if unsendable is not None:
        error = BadRequestError(f"cannot send a request to {url}: {unsendable}")
    elif _first(causes, (ConnectionRefusedError,)) is not None:
        error = ModelConnectionError(
            f"cannot connect to {_server(url)} ({url}): connection refused. Is the"
            " server running, and is the port in base_url right?"
        )
    elif _first(causes, (socket.gaierror,)) is not None:
        host = urlsplit(url).hostname or url
        error = ModelConnectionError(
            f"cannot connect to {url}: the host name {host!r} does not resolve."
            " Is the host in base_url spelled right?"
        )
    elif _first(causes, (httpx2.ConnectTimeout,)) is not None:
        error = ModelConnectionError(
            f"cannot connect to {_server(url)} ({url}): no answer to the connection"
            " within the timeout. Is the host in base_url right, and reachable?"
        )
    elif other is not None:
        error = ModelConnectionError(f"cannot connect to {url}: {other}")
    else:
        return None
    error.reached_model = False
    return error


def no_api_at_path(
    response: httpx2.Response,
    *,
    api_paths: tuple[str, ...],
    hint: Callable[[str], str],
) -> BadRequestError | None:
    """The error for a 404 that says the URL has no API at all; None for the API's own 404.

    An API answers a request it cannot serve (an unknown model, say) with its
    own error object; a web server with no route there answers FastAPI's
    ``{"detail": "Not Found"}``, a page, plain text or nothing. Only the
    latter is a base URL that cannot be right: the message names the URL and,
    from `hint`, what base URL the provider's SDK expects.

    Args:
        response: The 404 response.
        api_paths: The API paths the SDK appends to the base URL
            (``"/chat/completions"``); the rest of the URL is the base.
        hint: The likely fix, in words, given the base URL that was used.
    """
    if response.status_code != 404 or _is_api_error(response):
        return None
    url = str(response.url)
    path = urlsplit(url).path
    suffix = next((p for p in api_paths if path.endswith(p)), "")
    base = url[: url.rfind(suffix)] if suffix else url
    page = non_api_body(response)  # a page or plain text, named as elsewhere
    said = f" ({page.rstrip('.')})" if page else _body_text(response)
    error = BadRequestError(
        f"{url} answered 404 Not Found{said}: no model API is at that URL, so"
        f" base_url {base!r} cannot be right. {hint(base)}"
    )
    error.reached_model = False
    return error


def _is_api_error(response: httpx2.Response) -> bool:
    """Whether a 404's body is an API's own error (an object with ``error``/``message``)."""
    try:
        data = json.loads(response.content)
    except (ValueError, UnicodeDecodeError, httpx2.ResponseNotRead):
        return False
    if not isinstance(data, dict):
        return False
    if "error" in data or "message" in data:
        return True
    detail = data.get("detail")
    return detail is not None and str(detail).strip().lower() != "not found"


def _body_text(response: httpx2.Response) -> str:
    try:
        text = " ".join(
            response.content[: _SHOWN * 4].decode("utf-8", "replace").split()
        )
    except httpx2.ResponseNotRead:
        return ""
    if not text:
        return " with an empty body"
    return f" ({text[:_SHOWN]}{'…' if len(text) > _SHOWN else ''})"


def _first(
    causes: list[BaseException], kinds: tuple[type[BaseException], ...]
) -> BaseException | None:
    return next((c for c in causes if isinstance(c, kinds)), None)


def _server(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and every exception behind it: causes, contexts, and group members."""
    seen: set[int] = set()
    found: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
    return found


def openai_base_hint(base: str) -> str:
    """The likely fix of an OpenAI-style base URL that answered 404."""
    trimmed = base.rstrip("/")
    if not trimmed.endswith("/v1"):
        return (
            "OpenAI-compatible servers serve the API under /v1:"
            f" try base_url={trimmed + '/v1'!r}."
        )
    return "Check the server's address, and the path it serves its API under."


def anthropic_base_hint(base: str) -> str:
    """The likely fix of an Anthropic base URL that answered 404."""
    trimmed = base.rstrip("/")
    if trimmed.endswith("/v1"):
        return (
            "The anthropic SDK adds /v1/messages to base_url itself:"
            f" try base_url={trimmed[:-3]!r}."
        )
    return "The anthropic SDK sends to base_url + /v1/messages: check the address."


def request_url(exc: BaseException) -> str | None:
    """The URL of the request `exc` (an SDK or httpx2 error) was about, if it says."""
    try:
        request = getattr(exc, "request", None)
    except RuntimeError:  # httpx2: an error raised without its request
        return None
    url = getattr(request, "url", None)
    return None if url is None else str(url)
