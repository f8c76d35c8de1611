"""Templates like ``fs:{path}``: checked against the input schema, filled from the input."""

from __future__ import annotations

import itertools
import json
import os
import string
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["TemplateError", "fields_of", "render_arg", "render_keys"]

_FORMATTER = string.Formatter()


class TemplateError(ValueError):
    """A template is malformed or names something the input does not have."""


def fields_of(template: str) -> list[str]:
    """The placeholder names in `template`, in order.

    Only plain ``{name}`` placeholders are allowed (``{{``/``}}`` escape braces):
    no attribute or index access, conversion or format spec, so a template can
    read nothing but top-level input values.

    Raises:
        TemplateError: the template is malformed or uses anything else.
    """
    try:
        parts = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise TemplateError(f"malformed template {template!r}: {exc}") from exc
    names: list[str] = []
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise TemplateError(
                f"template {template!r}: only plain {{name}} placeholders are allowed,"
                f" got {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}}"
            )
        names.append(name)
    return names


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _lookup(template: str, name: str, args: Mapping[str, Any]) -> Any:
    if name not in args or args[name] is None:
        raise TemplateError(
            f"template {template!r} needs {name!r}, which the input lacks"
        )
    return args[name]


def render_arg(template: str, args: Mapping[str, Any]) -> str:
    """Fill one argv template; non-string values are written as JSON.

    Raises:
        TemplateError: a value the template names is absent from `args`.
    """
    values = {
        name: _scalar_text(_lookup(template, name, args))
        for name in fields_of(template)
    }
    return template.format_map(values)


def _absolute_fs_key(key: str, base: str) -> str:
    if not key.startswith("fs:"):
        return key
    return "fs:" + os.path.normpath(os.path.join(base, key[3:]))


def render_keys(
    templates: Iterable[str], args: Mapping[str, Any], *, base_dir: str
) -> tuple[str, ...]:
    """Fill access-key templates; a list value yields one key per item.

    ``fs:`` keys with a relative path are made absolute against `base_dir` (the
    directory the tool runs in) and normalised, so they compare with the
    absolute ``fs:`` keys of the built-in tools.

    Raises:
        TemplateError: a value a template names is absent from `args`.
    """
    keys: list[str] = []
    for template in templates:
        names = fields_of(template)
        choices = []
        for name in names:
            value = _lookup(template, name, args)
            items = value if isinstance(value, list) else [value]
            choices.append([_scalar_text(item) for item in items])
        for combo in itertools.product(*choices):
            key = template.format_map(dict(zip(names, combo, strict=True)))
            keys.append(_absolute_fs_key(key, base_dir))
    return tuple(keys)
