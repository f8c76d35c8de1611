"""HTML to readable plain text for `web_fetch` (standard library only)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside",
     "ul", "ol", "table", "tr", "blockquote", "pre", "form", "h1", "h2", "h3", "h4",
     "h5", "h6", "br", "hr", "li", "dt", "dd", "title"}
)  # fmt: skip


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skipping = 0
        self.pre = 0
        self.title = ""
        self._in_title = False
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP:
            self.skipping += 1
            return
        if tag == "pre":
            self.pre += 1
        if tag in _BLOCK:
            self.out.append("\n")
        if tag == "li":
            self.out.append("- ")
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.out.append("#" * int(tag[1]) + " ")
        if tag == "a":
            href = dict(attrs).get("href")
            if href and href.startswith(("http://", "https://")):
                self._href = href  # written after the link text, at the end tag

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
            return
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag == "a" and self._href:
            self.out.append(f" ({self._href})")
            self._href = None
        if tag in ("td", "th"):
            self.out.append(" ")
        elif tag in _BLOCK and tag != "li":  # an item ends where the next starts
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self.skipping:
            return
        self.out.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """The visible text of an HTML page, with block structure kept as lines.

    Scripts, styles and the head are dropped; headings get ``#`` marks, list
    items ``-``, absolute links their URL in parentheses. The title, if any,
    comes first. Never raises on malformed HTML.
    """
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.out).splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = parser.title.strip()
    return f"{title}\n\n{text}" if title and not text.startswith(title) else text
