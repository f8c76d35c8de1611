r"""Request payloads as UTF-8 can carry them: no lone surrogates on the wire.

A Python string may hold a lone surrogate: a prompt read from a non-UTF-8
terminal (``surrogateescape``), a model's own ``"\ud800"`` escape echoed back in
a tool call's input, text a hook or tool produced. The provider SDKs encode
the request body as UTF-8 and raise on one, which would fail every later
request of the run. Each is replaced by U+FFFD on the way out; the transcript
itself keeps what was said.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .._utf8 import utf8_text

__all__ = ["utf8_payload"]

T = TypeVar("T")


def utf8_payload(value: T) -> T:
    """`value` (JSON-like: dicts, lists, tuples, strings) with lone surrogates replaced.

    Returns the very objects given where nothing needed replacing, so the
    common request costs one walk and no copies.
    """
    return _clean(value)  # type: ignore[no-any-return]


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = utf8_text(key) if isinstance(key, str) else key
            new_item = _clean(item)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [_clean(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value
