"""What a tool that returned an awaitable instead of a result is told."""

from __future__ import annotations

import inspect

__all__ = ["unawaited_error"]


def unawaited_error(output: object) -> str:
    """The error message for a tool that returned `output`, an awaitable, as its result.

    A coroutine is closed here, so it never runs and Python warns of nothing
    ("coroutine ... was never awaited").
    """
    if inspect.iscoroutine(output):
        name = getattr(output, "__qualname__", "a coroutine")
        output.close()
        return (
            f"The tool returned the coroutine {name}() instead of a result: it called"
            " an async function without awaiting it. Make the tool `async def` and"
            f" `await {name}(...)`. The coroutine was closed without running."
        )
    return (
        f"The tool returned an awaitable ({type(output).__qualname__}) instead of a"
        " result: make the tool `async def` and await it."
    )
