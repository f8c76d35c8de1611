"""`spec`'s compact notation: a ``?`` after a long option with a value makes the value optional.

An optional value is only ever glued (``--color=auto``): ``--color auto`` is
the bare option and an operand, as GNU getopt_long parses it.
"""

from __future__ import annotations

import pytest

from toolweave.tools.builtin.bash._options import (
    OptionSpec,
    operands,
    optional_values,
    spec,
)


def test_a_question_mark_marks_an_optional_value() -> None:
    made = spec("n", "c", "quiet", "lines color? time?")
    assert made == OptionSpec(
        short=frozenset("n"),
        short_value=frozenset("c"),
        long=frozenset({"quiet"}),
        long_value=frozenset({"lines"}),
        long_optional=frozenset({"color", "time"}),
    )
    assert optional_values("color  time") == "color? time?"
    assert spec(long_value=optional_values("a b")).long_optional == {"a", "b"}
    assert spec(long_value=" ").long_value == frozenset()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--color"], []),
        (["--color=auto"], []),
        (["--color", "auto"], ["auto"]),  # the next word is an operand, not the value
        (["--lines", "5", "f"], ["f"]),
        (["--lines=5"], []),
        (["--lines"], None),  # a required value is missing
        (["--colo=auto"], None),  # a prefix is never accepted
        (["--color?"], None),  # the marker is notation, not a name
    ],
)
def test_optional_and_required_values_parse_as_before(
    args: list[str | None], expected: list[str | None] | None
) -> None:
    assert operands(args, spec(long_value="lines color?")) == expected
