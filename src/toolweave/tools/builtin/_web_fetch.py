"""The `web_fetch` tool: GET a URL with size and time limits, HTML as text."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError, ToolInputError, ToolTimeoutError
from .._access import Access, Concurrency, Interrupt, Warrant
from .._context import ToolContext
from .._tool import PermissionCheck, Tool
from ._html import html_to_text

if TYPE_CHECKING:  # imported on the first fetch: `import toolweave` stays light
    import httpx

__all__ = ["WebFetchTool"]

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
"""Response bytes read at most; the rest is not downloaded."""

DEFAULT_TIMEOUT = 30.0
"""Seconds for the whole fetch, redirects included."""

DEFAULT_MAX_CHARS = 100_000
"""Characters of text returned at most."""

_TEXTUAL = ("text/", "application/json", "application/xml", "application/xhtml+xml",
            "application/javascript", "application/x-javascript")  # fmt: skip


class WebFetchInput(BaseModel):
    """Input of `web_fetch`."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, description="The http(s) URL to fetch.")
    max_chars: int = Field(
        DEFAULT_MAX_CHARS, ge=100, le=1_000_000, description="Most characters returned."
    )


def _access(args: dict[str, Any]) -> Access:
    """A read of ``net:<host>``: it connects out, and changes nothing shared."""
    return Access(reads=("net:" + (urlsplit(str(args["url"])).hostname or ""),))


class WebFetchTool(Tool):
    """Fetch a web page or text document and return it as text.

    SAFE; access: reads ``net:<host>`` (an idempotent external GET
    that touches nothing shared in the session; the read key tells the
    declaration audit it connects out, and never conflicts with another read). Interrupt: CANCEL.

    Limits: at most `max_bytes` are downloaded (the rest is not read), the
    whole fetch including redirects must finish within `timeout` seconds (else
    `ToolTimeoutError`). HTML is turned into plain text; other textual types
    are returned as they are; binary types, HTTP errors and non-http(s) URLs
    are errors.
    """

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        """Response bytes read at most."""
        self.fetch_timeout = timeout
        """Seconds for the whole fetch."""
        self._transport = transport
        super().__init__(
            name="web_fetch",
            description=(
                "Fetch an http(s) URL with GET and return its content as text "
                "(HTML converted to plain text; JSON and other text as is). "
                f"Downloads at most {max_bytes} bytes and gives up after "
                f"{timeout:g} seconds."
            ),
            input_model=WebFetchInput,
            concurrency=Concurrency.SAFE,
            access=_access,
            access_bound=Access(reads=("net:",)),
            interrupt=Interrupt.CANCEL,
            timeout=timeout + 5,
            # A GET changes nothing only on the web server's word (RFC 9110's
            # "safe" methods): it overlaps, but never starts before its
            # response is final.
            warrant=Warrant.UNVOUCHED,
        )

    def permission_subject(self, args: dict[str, Any]) -> str:
        """The URL, for permission rules such as ``web_fetch(https://docs.*)``."""
        return str(args["url"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        """Ask before fetching from a host not yet allowed.

        A host is allowed by a ``web_fetch(domain:HOST)`` allow rule, or for the
        rest of the run by an "always" answer. A URL with no host is left to
        `call`, which refuses it.
        """
        del ctx
        try:
            host = urlsplit(str(args["url"])).hostname
        except ValueError:
            host = None
        if not host:
            return PermissionCheck()
        return PermissionCheck(
            "ask",
            f"web_fetch from {host}, a host not yet allowed",
            rules=(f"web_fetch(domain:{host})",),
        )

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Fetch; returns a short header and the text."""
        del ctx
        url = args["url"]
        if not url.startswith(("http://", "https://")):
            raise ToolInputError(
                f"only http and https URLs can be fetched, not {url!r}"
            )
        import httpx

        try:
            with anyio.fail_after(self.fetch_timeout):
                response, body, cut = await self._get(url)
        except TimeoutError as exc:
            raise ToolTimeoutError(
                f"fetching {url} took longer than {self.fetch_timeout:g}s"
            ) from exc
        except httpx.HTTPError as exc:
            raise ToolError(
                f"fetching {url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return _render(url, response, body, cut, args["max_chars"])

    async def _get(self, url: str) -> tuple[httpx.Response, bytes, bool]:
        import httpx

        async with (
            httpx.AsyncClient(
                follow_redirects=True,
                timeout=httpx.Timeout(self.fetch_timeout),
                transport=self._transport,
                headers={"User-Agent": "toolweave-web-fetch/0.1"},
            ) as client,
            client.stream("GET", url) as response,
        ):
            body = bytearray()
            cut = False
            with contextlib.suppress(httpx.StreamError, httpx.ReadError):
                async for chunk in response.aiter_bytes():
                    if cut:
                        continue
                    body.extend(chunk)
                    if len(body) > self.max_bytes:
                        # Stop the download by closing the stream and let the
                        # iteration end on its own: breaking out would leave
                        # httpx's nested async generators to the GC (trio warns;
                        # encode/httpx#3686).
                        del body[self.max_bytes :]
                        cut = True
                        await response.aclose()
            return response, bytes(body), cut


def _render(
    url: str, response: httpx.Response, body: bytes, cut: bool, max_chars: int
) -> str:
    content_type = (
        response.headers.get("content-type", "").split(";")[0].strip().lower()
    )
    if response.status_code >= 400:
        excerpt = body[:500].decode("utf-8", errors="replace")
        raise ToolError(
            f"GET {url} returned HTTP {response.status_code}\n{excerpt}".rstrip()
        )
    if content_type and not content_type.startswith(_TEXTUAL):
        raise ToolError(
            f"GET {url} returned {content_type!r} ({len(body)} bytes), which is not text"
        )
    text = body.decode(response.encoding or "utf-8", errors="replace")
    if content_type in ("text/html", "application/xhtml+xml") or (
        not content_type
        and text.lstrip()[:15].lower().startswith(("<!doctype", "<html"))
    ):
        text = html_to_text(text)
    notes = []
    if cut:
        notes.append(f"[download stopped at {len(body)} bytes]")
    if len(text) > max_chars:
        notes.append(f"[text cut at {max_chars} of {len(text)} characters]")
        text = text[:max_chars]
    header = f"URL: {response.url}\nStatus: {response.status_code}\n"
    header += f"Content-Type: {content_type or 'unknown'}\n\n"
    return header + text + ("\n\n" + "\n".join(notes) if notes else "")
