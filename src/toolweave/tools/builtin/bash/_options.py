"""Option allow-lists: does an argv use only options known to be read-only?

An `OptionSpec` lists every option of one command that we know only reads;
`options_ok` accepts an argument list only if each option is listed *exactly*.
That one rule closes whole families of tricks: GNU getopt_long and git accept any
unique prefix of a long option (``sort --out=f`` is ``--output=f``), so a
prefix is never listed and therefore never accepted; an unknown option of a new
tool version is rejected; a short cluster (``-nri``) is accepted only if every
letter is listed. Positionals after ``--`` count like any other positional, so a
command whose extra positional is an output (``uniq in out``) is capped by
`max_positionals` whatever precedes it.

Words whose value depends on an expansion (None) are accepted only by specs
marked `any_word`: commands with no option that writes or runs anything, so
whatever the word expands to is harmless.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "OptionSpec",
    "first_operand",
    "operands",
    "option_width",
    "optional_values",
    "options_ok",
    "spec",
]


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """The read-only options of one command."""

    short: frozenset[str] = frozenset()
    """Short options without a value (one letter each)."""
    short_value: frozenset[str] = frozenset()
    """Short options that take a value (glued, ``-n5``, or the next word)."""
    long: frozenset[str] = frozenset()
    """Long options without a value (names without ``--``)."""
    long_value: frozenset[str] = frozenset()
    """Long options that take a value (``--x=v`` or ``--x v``)."""
    long_optional: frozenset[str] = frozenset()
    """Long options with an optional value (only ``--x`` or ``--x=v``)."""
    max_positionals: int | None = None
    """The most operands allowed (a further one would be an output file)."""
    digits: bool = False
    """``-5`` style numeric options (head, tail) are allowed."""
    any_word: bool = False
    """No option of the command writes or runs anything: unknown words pass."""
    check: Callable[[list[str]], bool] | None = field(default=None)
    """A further check on the operands (a sed script, an awk program)."""


def spec(
    short: str = "",
    short_value: str = "",
    long: str = "",
    long_value: str = "",
    *,
    max_positionals: int | None = None,
    digits: bool = False,
    any_word: bool = False,
    check: Callable[[list[str]], bool] | None = None,
) -> OptionSpec:
    """Build an `OptionSpec` from compact strings (letters; space-separated names).

    A name in `long_value` ending in ``?`` takes an optional value (only
    ``--x`` or ``--x=v``, never ``--x v``): ``spec(long_value="lines color?")``.
    """
    valued = long_value.split()
    return OptionSpec(
        frozenset(short),
        frozenset(short_value),
        frozenset(long.split()),
        frozenset(name for name in valued if not name.endswith("?")),
        frozenset(name[:-1] for name in valued if name.endswith("?")),
        max_positionals,
        digits,
        any_word,
        check,
    )


def optional_values(names: str) -> str:
    """`names` (space-separated) marked as taking an optional value, for `spec`."""
    return " ".join(f"{name}?" for name in names.split())


def _long(option: str, rest: Sequence[str | None], s: OptionSpec) -> int:
    """Words consumed by a long option (1 or 2), or 0 if it is not allowed."""
    name, eq, _ = option[2:].partition("=")
    if name in s.long and not eq:
        return 1
    if name in s.long_optional:
        return 1
    if name in s.long_value:
        if eq:
            return 1
        return 2 if rest and rest[0] is not None else 0
    return 0


def _short(option: str, rest: Sequence[str | None], s: OptionSpec) -> int:
    """Words consumed by a short cluster (1 or 2), or 0 if it is not allowed."""
    if s.digits and option[1:].isdigit():
        return 1
    for j in range(1, len(option)):
        letter = option[j]
        if letter in s.short_value:
            if j + 1 < len(option):
                return 1
            return 2 if rest and rest[0] is not None else 0
        if letter not in s.short:
            return 0
    return 1


def option_width(option: str, rest: Sequence[str | None], s: OptionSpec) -> int:
    """Words one option uses (1, or 2 with its value), or 0 if `s` does not allow it."""
    return (_long if option.startswith("--") else _short)(option, rest, s)


def first_operand(args: Sequence[str | None], s: OptionSpec) -> int | None:
    """Index of the first operand, options stopping there; None if one is not allowed.

    POSIX order, as ``timeout``, ``nice`` and ``xargs`` parse: the first operand
    starts another command. A word that depends on an expansion gives None.
    """
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return None
        if arg == "--":
            return i + 1
        if arg == "-" or not arg.startswith("-"):
            return i
        used = option_width(arg, args[i + 1 :], s)
        if used == 0:
            return None
        i += used
    return i


def operands(args: Sequence[str | None], s: OptionSpec) -> list[str | None] | None:
    """The operands of `args` under `s`, or None if any option is not allowed."""
    out: list[str | None] = []
    i = 0
    ended = False
    while i < len(args):
        arg = args[i]
        if arg is None:
            if not s.any_word:
                return None
            out.append(arg)
            i += 1
            continue
        if ended or arg == "-" or not arg.startswith("-"):
            out.append(arg)
            i += 1
            continue
        if arg == "--":
            ended = True
            i += 1
            continue
        used = option_width(arg, args[i + 1 :], s)
        if used == 0:
            return None
        i += used
    return out


def options_ok(args: Sequence[str | None], s: OptionSpec) -> bool:
    """True if every option in `args` is allowed by `s` and the operands pass."""
    found = operands(args, s)
    if found is None:
        return False
    if s.max_positionals is not None and len(found) > s.max_positionals:
        return False
    if s.check is None:
        return True
    literal = [a for a in found if a is not None]
    return len(literal) == len(found) and s.check(literal)
