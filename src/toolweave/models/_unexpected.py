"""Answers that are not the provider's API response: told apart, and named with their URL.

The SDKs hand on whatever came back with a 2xx status: an HTML page from a
proxy or a captive portal becomes a Python string, a JSON list stays a list,
and a streamed request answered with a page yields no event at all (an SSE
decoder skips lines it cannot read). Read as a response, each ended as an
``AttributeError`` deep in a mapper, or, streamed with tools, as "this server
refuses to stream with tools", learned for the life of the model. Here each
becomes an `UnexpectedResponseError` saying what came back (an HTML page, plain
text, a JSON list, JSON without the field every response has, an empty body)
and from which URL, before any mapper sees it.

The line drawn: a body that is not a JSON object carrying the API's
identifying field (`WireShape.key`) is not the API's answer; one that is, but
is broken inside, is a malformed response (`ModelServerError`, as before). A
streamed request's answer must be ``text/event-stream`` (the SSE
specification's type, which every provider and compatible server sends); one
that is a whole response instead (JSON with the identifying field) is told
apart as `answered_whole`, the one kind a provider model may learn from.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._exceptions import UnexpectedResponseError

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "EVENT_STREAM",
    "WireShape",
    "non_api_body",
    "require_event_stream",
    "whole_response",
]

EVENT_STREAM = "text/event-stream"

_READ_LIMIT = 64 * 1024
"""Bytes of an unexpected streamed body read to describe it (a page is small)."""
_SHOWN = 160
"""Characters of the body quoted in the message."""
_HTML_START = re.compile(rb"^\s*(<!doctype\s+html|<html|<head|<body)", re.IGNORECASE)
_JSON_NAMES: dict[type, str] = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class WireShape:
    """What one API's answer is: its name in messages and the field every one carries."""

    name: str
    """As a message says it: ``"an OpenAI chat completion"``."""
    key: str
    """The top-level list every response has (``choices``, ``output``, ``content``)."""


class RawResponse(Protocol):
    """What we need of an SDK's raw (``with_raw_response``) answer, its body read."""

    @property
    def http_response(self) -> httpx2.Response: ...

    def parse(self) -> Any:
        """The SDK's reading of the body, not validated (awaitable in some SDKs)."""


async def whole_response(raw: RawResponse, shape: WireShape) -> Any:
    """The SDK's parse of a whole response, if it is the API's answer.

    A checkpoint only if the SDK's ``parse`` is a coroutine (the body is
    already read either way).

    Raises:
        UnexpectedResponseError: the body is not a JSON object with
            ``shape.key`` as a list (HTML, text, a list, an empty body …).
    """
    try:
        parsed = raw.parse()
        if inspect.isawaitable(parsed):
            parsed = await parsed
    except ValueError:  # JSON declared, not sent (an empty or cut body)
        parsed = None
    if isinstance(getattr(parsed, shape.key, None), list):
        return parsed
    response = raw.http_response
    raise _unexpected(response, response.content, shape, streamed=False)


async def require_event_stream(response: httpx2.Response, shape: WireShape) -> None:
    """Check that a streamed request was answered with an event stream.

    A checkpoint only when it was not: then up to 64 KiB of the body are read
    to describe it, the response is closed, and `UnexpectedResponseError` is
    raised (``answered_whole`` if the body is the API's whole response).
    """
    if _media_type(response) == EVENT_STREAM:
        return
    body = await _read_some(response)
    await response.aclose()
    raise _unexpected(response, body, shape, streamed=True)


def non_api_body(response: httpx2.Response) -> str | None:
    """For an error status: what came back, if it is not a JSON error (a proxy's page).

    None when the body is JSON (the provider's own error object: the SDK's
    message says it better).
    """
    media = _media_type(response)
    if media is not None and media.endswith("json"):
        return None
    try:
        body = response.content
    except Exception:  # a streamed error body not read: nothing to show
        return None
    what = _what(media, body, None)
    return f"the server at {response.url} answered with {what}.{_began(body)}"


def _media_type(response: httpx2.Response) -> str | None:
    raw = response.headers.get("content-type")
    if raw is None:
        return None
    return raw.split(";", 1)[0].strip().lower() or None


async def _read_some(response: httpx2.Response) -> bytes:
    body = b""
    chunks: AsyncIterator[bytes] = response.aiter_bytes()
    async with aclosing(chunks):  # type: ignore[type-var]
        async for chunk in chunks:
            body += chunk
            if len(body) >= _READ_LIMIT:
                break
    return body


def _unexpected(
    response: httpx2.Response, body: bytes, shape: WireShape, *, streamed: bool
) -> UnexpectedResponseError:
    media = _media_type(response)
    whole = streamed and _is_whole(body, shape)
    what = f"a whole response ({media})" if whole else _what(media, body, shape.key)
    where = f"the server at {response.url}"
    if whole:
        message = (
            f"{where} answered a streamed request with {what}, not an event stream:"
            " it does not stream; build the model with stream=False"
        )
    else:
        expected = (
            f"an event stream ({EVENT_STREAM}) of {shape.name}"
            if streamed
            else shape.name
        )
        asked = "a streamed request" if streamed else "the request"
        message = (
            f"{where} answered {asked} with {what} (HTTP {response.status_code}),"
            f" not {expected}: is base_url right, or is a proxy in the way?"
            f"{_began(body)}"
        )
    return UnexpectedResponseError(
        message,
        url=str(response.url),
        status=response.status_code,
        content_type=media,
        answered_whole=whole,
    )


def _is_whole(body: bytes, shape: WireShape) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get(shape.key), list)


def _what(media: str | None, body: bytes, key: str | None) -> str:
    """The body in words, such as ``an HTML page (text/html)`` or ``a JSON list``."""
    typed = f" ({media})" if media else " (no content type)"
    if not body.strip():
        return f"an empty body{typed}"
    if media in ("text/html", "application/xhtml+xml") or _HTML_START.match(body):
        title = _TITLE.search(body[:_READ_LIMIT].decode("utf-8", "replace"))
        named = f" titled {' '.join(title.group(1).split())[:80]!r}" if title else ""
        return f"an HTML page{named}{typed}"
    if media == EVENT_STREAM:
        return f"an event stream{typed}"
    try:
        data = json.loads(body)
    except ValueError:
        kind = "plain text" if media in (None, "text/plain") else "a body"
        return f"{kind}{typed}"
    return _json_kind(data, key) + typed


def _json_kind(data: object, key: str | None) -> str:
    if isinstance(data, list):
        return "a JSON list"
    if not isinstance(data, dict):
        return f"a JSON {_JSON_NAMES.get(type(data), 'value')}"
    error = data.get("error")
    if error is not None:
        return "a JSON error object"
    if key is None:
        return "a JSON object"
    return f"a JSON object without a {key!r} list"


def _began(body: bytes) -> str:
    text = " ".join(body[: _SHOWN * 4].decode("utf-8", "replace").split())
    if not text:
        return ""
    shown = text[:_SHOWN] + ("…" if len(text) > _SHOWN else "")
    return f" It began: {shown!r}"
