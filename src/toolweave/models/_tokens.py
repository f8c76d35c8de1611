"""Token counts as a provider reports them, made safe to add up.

The SDKs do not validate what they parse, so a usage field may arrive
negative, as a float, a string, null or a bool from a buggy or hostile
gateway. Usage feeds budgets and cost: a negative count would hand a run
budget back, a string would crash the sum. A count is kept only if it is a
non-negative whole number (a finite float is truncated); anything else
counts as 0, the same as a field the provider left out. A count is capped
at `MAX_TOKENS` (2**63 - 1, what any real counter holds): past that, cost
math in floats overflows, and a budget stops the run at the cap anyway.
"""

from __future__ import annotations

import math

__all__ = ["MAX_TOKENS", "token_count"]

MAX_TOKENS = 2**63 - 1
"""The largest count kept; larger ones (a 400-digit "count") are capped to it."""


def token_count(value: object) -> int:
    """`value` as a non-negative token count; 0 if it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return min(value, MAX_TOKENS) if value > 0 else 0
    if isinstance(value, float) and math.isfinite(value) and value > 0:
        return min(int(value), MAX_TOKENS)
    return 0
