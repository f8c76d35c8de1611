"""Lazy re-exports: a package names its public objects without importing them all.

`import toolweave` must stay light (no built-in tool, provider SDK, MCP or
parser loaded before it is used). A package lists ``name -> submodule`` and
gets a module-level ``__getattr__`` (PEP 562) that imports the submodule on the
first access and caches the object in the package, so later lookups are plain
attribute reads. Type checkers see the names through ``if TYPE_CHECKING:``
imports next to the table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for `package`, resolving each of `names` on first use.

    Args:
        package: The package's ``__name__`` (its globals receive the resolved names).
        names: Public name -> relative submodule (``"._bash"``) that defines it.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        vars(importlib.import_module(package))[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *names})

    return __getattr__, __dir__
