"""Tool results always encode as UTF-8 (`utf8_safe`): lone surrogates become U+FFFD.

Text decoded with ``surrogateescape`` (file names, subprocess output) otherwise
breaks the session store and every later provider request of the session.
"""

from __future__ import annotations

import pytest

from toolweave.execution._output import utf8_safe
from toolweave.messages import Image, Text, ToolResult

LONE = b"a\xffb".decode("utf-8", "surrogateescape")

CASES: dict[str, tuple[object, object, bool]] = {
    # name: (content, expected content, same object back)
    "ascii": ("plain", "plain", True),
    "valid non-ascii": ("héllo ✓ 😀", "héllo ✓ 😀", True),
    "escaped byte": (LONE, "a\ufffdb", False),
    "lone high surrogate": ("x\ud800", "x\ufffd", False),
    "surrogate pair as two code points": ("\ud83d\ude00", "\ufffd\ufffd", False),
    "blocks, clean": ((Text("a"), Image("AAAA", "image/png")), None, True),
    "blocks, one dirty": (
        (Text(LONE), Image("AAAA", "image/png"), Text("ok")),
        (Text("a\ufffdb"), Image("AAAA", "image/png"), Text("ok")),
        False,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_utf8_safe(name: str) -> None:
    content, expected, same = CASES[name]
    result = ToolResult("c", content, is_error=True)  # type: ignore[arg-type]
    fixed = utf8_safe(result)
    assert (fixed is result) is same
    if same:
        return
    assert fixed.content == expected
    assert fixed.is_error and fixed.call_id == "c"
    text = fixed.text if isinstance(fixed.content, str) else str(fixed.content)
    text.encode("utf-8")
