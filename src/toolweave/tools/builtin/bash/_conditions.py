"""When a ``test`` / ``[ ]`` / ``[[ ]]`` may evaluate text as code (subscripts, arithmetic).

Split out of the parse walk: the walker and the permission rules both ask it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["condition_evaluates", "test_tokens"]

_SUBSCRIPT_TESTS = frozenset({"-v", "-R"})
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_TEST_OPERATORS = frozenset({"=", "==", "!=", "<", ">", "!", "(", ")"})
_TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S+")


def test_tokens(text: str) -> list[str]:
    """The words of a ``[ ]`` / ``[[ ]]`` as written (quotes kept), brackets dropped."""
    tokens = _TOKEN.findall(text)
    return [t for t in tokens if t not in ("[", "]", "[[", "]]")]


def condition_evaluates(raws: Sequence[str], *, double: bool) -> bool:
    """Could `test` / ``[ ]`` (or ``[[ ]]``, `double`) with these words evaluate code?

    ``-v``/``-R`` evaluate a subscript, and ``[[``'s ``-eq`` family evaluates
    arithmetic on its operands' values: either runs the ``$(...)`` of a string
    such as ``a[$(rm y)]``. In ``[[ ]]`` operators are fixed before expansion,
    so only those operators (and a ``[`` that may be a subscript) count. In
    ``test``/``[ ]`` an expansion may itself become ``-v``: it is safe only
    double-quoted (one word) and next to a literal operator.
    """
    for i, raw in enumerate(raws):
        if raw in _SUBSCRIPT_TESTS:
            return True
        if double:
            if raw in _ARITHMETIC_TESTS or "[" in raw:
                return True
            continue
        if "$" in raw or "`" in raw:
            quoted = len(raw) > 1 and raw[0] == raw[-1] == '"'
            near = [*raws[i - 1 : i], *raws[i + 1 : i + 2]]
            if not quoted or not any(_literal_operator(n) for n in near):
                return True
    return False


def _literal_operator(raw: str) -> bool:
    return raw in _TEST_OPERATORS or (
        raw.startswith("-") and not any(c in raw for c in "$`\"'")
    )
