"""Help pages in the usual shape: ``TASK`` not ``{task}``, no ``<bool>`` after a flag."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click import Context, Parameter

__all__ = ["Command", "Group"]

_REQUIRED = re.compile(r"\{(.+)\}(\.\.\.)?")


def _plain_usage(pieces: list[str]) -> list[str]:
    """``{TASK}`` → ``TASK``: a required argument is written bare, as man pages do."""
    out = []
    for piece in pieces:
        match = _REQUIRED.fullmatch(piece)
        out.append(match.group(1) + (match.group(2) or "") if match else piece)
    return out


def _quiet_flags(params: list[Parameter]) -> list[Parameter]:
    """A flag takes no value, so its help row shows no type."""
    for param in params:
        if getattr(param, "is_bool_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class Command(TyperCommand):
    """A typer command whose help shows plain argument names and untyped flags."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        """The usage line's pieces, required arguments without braces."""
        return _plain_usage(super().collect_usage_pieces(ctx))

    def get_params(self, ctx: Context) -> list[Parameter]:
        """The parameters, flags marked to show no value type."""
        return _quiet_flags(super().get_params(ctx))


class Group(TyperGroup):
    """The root group, with the same help conventions as `Command`."""

    def get_params(self, ctx: Context) -> list[Parameter]:
        """The parameters, flags marked to show no value type."""
        return _quiet_flags(super().get_params(ctx))
