"""What a tool that returned an awaitable (or an async generator) instead of a result is told."""

from __future__ import annotations

import inspect

__all__ = ["not_a_result", "unawaited_error"]


def not_a_result(output: object) -> str | None:
    """The error for a tool whose result is `output`, if it is no result; else None.

    An awaitable (a coroutine, a Task, a Future) or an async generator is what
    a tool returns when it forgot an ``await`` or an ``async for``: reported as
    the mistake it is, never as a success holding the object's repr.
    """
    if inspect.isawaitable(output):
        return unawaited_error(output)
    if inspect.isasyncgen(output):
        return (
            "The tool returned an async generator"
            f" ({getattr(output, '__qualname__', 'async_generator')}) instead of a"
            " result: a tool returns one result. Collect what it yields (for"
            " example `[x async for x in gen]`) and return that."
        )
    return None


def unawaited_error(output: object) -> str:
    """The error message for a tool that returned `output`, an awaitable, as its result.

    A coroutine is closed here, so it never runs and Python warns of nothing
    ("coroutine ... was never awaited"). Any other awaitable (a Task, a Future)
    may already be running: what it did is unknown, and the message says so.
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
        " result: await it inside the tool (an `async def`) and return what it"
        " gives. It was not awaited here; it may already have started, so what it"
        " did is unknown."
    )
