"""Guards against death spirals: stalled iterations, repeated failures (as in OpenClaw)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

from ..messages import ToolCall, ToolResult

__all__ = ["RepeatFailureWatcher", "StalledIterationGuard"]


@final
class StalledIterationGuard:
    """Counts consecutive iterations in which every tool result was an error.

    An iteration that ran at least one call and got only error results is
    *stalled*. `limit` stalled iterations in a row end the run (as ERROR). A
    success or a final answer resets the count; a cancelled (interrupted)
    iteration is not counted at all. Used from the loop's task only.
    """

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        """Consecutive stalled iterations that end the run."""
        self._streak = 0
        self._truncated = 0

    @property
    def streak(self) -> int:
        """Stalled iterations in a row so far."""
        return self._streak

    def reset(self) -> None:
        """Forget the streak (a final answer arrived)."""
        self._streak = 0
        self._truncated = 0

    def record(
        self, results: Sequence[ToolResult], *, truncated: bool, cancelled: bool = False
    ) -> str | None:
        """Count one iteration's results; return why the run must end, or None.

        Args:
            results: The batch's results.
            truncated: The response was cut at max_tokens and its calls refused.
            cancelled: The batch was interrupted; such iterations are not counted.
        """
        if cancelled or not results:
            return None
        if not all(r.is_error for r in results):
            self.reset()
            return None
        self._streak += 1
        self._truncated = self._truncated + 1 if truncated else 0
        if self._streak < self.limit:
            return None
        detail = (
            f"stopped after {self._streak} consecutive iterations in which every tool"
            " call failed"
        )
        if self._truncated >= self._streak:
            detail += (
                "; every one was a response truncated at max_tokens, so its calls were"
                " refused: make one response produce less output (e.g. write a large"
                " file in pieces) or raise max_output_tokens"
            )
        else:
            detail += "; the model keeps calling tools that fail"
        return detail


@dataclass(slots=True)
class _Failures:
    error: str
    count: int


def _key(call: ToolCall) -> tuple[str, str]:
    if call.raw_arguments is not None:
        return call.name, call.raw_arguments
    try:
        args = json.dumps(call.input, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        args = repr(sorted(call.input.items(), key=lambda kv: str(kv[0])))
    return call.name, args


@final
class RepeatFailureWatcher:
    """Refuses a call that already failed the same way `limit` times (as in OpenClaw).

    "The same way" means the same tool name, the same arguments (compared as
    canonical JSON) and the same error text. A success for those arguments, or
    a different error, restarts the count. Synthetic results (calls that never
    ran) are not failures of the tool and are ignored. Used from the loop's
    event-loop thread only; `refusal` and `observe` never await.
    """

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        """Identical failures after which the call is refused."""
        self._failures: dict[tuple[str, str], _Failures] = {}

    def refusal(self, call: ToolCall) -> ToolResult | None:
        """The error result that refuses `call`, or None if it may run."""
        if not self._failures:
            return None
        seen = self._failures.get(_key(call))
        if seen is None or seen.count < self.limit:
            return None
        return ToolResult(
            call.id,
            f"Refused: {call.name!r} already failed {seen.count} times with these exact"
            f" arguments and the same error, so it was not run again. The error was:\n"
            f"{seen.error}\nChange the arguments or try a different approach.",
            is_error=True,
        )

    def observe(self, call: ToolCall, result: ToolResult) -> None:
        """Record the outcome of a call that ran."""
        if result.synthetic or (not result.is_error and not self._failures):
            return
        key = _key(call)
        if not result.is_error:
            self._failures.pop(key, None)
            return
        error = result.text
        seen = self._failures.get(key)
        if seen is not None and seen.error == error:
            seen.count += 1
        else:
            self._failures[key] = _Failures(error, 1)
