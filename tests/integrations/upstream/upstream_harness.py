"""Run a framework's own test suite twice: with its component, and with toolweave's.

A pytest plugin shared by the suites under ``tests/integrations/upstream/<framework>/``
(each loads it from its ``pytest.ini``). The option ``--swap`` picks the run:

- ``--swap=framework`` (default): the framework's tests, unmodified, against the
  framework's own component. Every test must pass (or skip as it skips upstream).
- ``--swap=toolweave``: the same tests with toolweave's component swapped in by the
  framework's ``conftest.py`` (its ``SWAPS``: where the framework's class or function
  is replaced by ours, done once at configure time, before any test module is
  imported, so ``from framework import X`` in a test binds ours). Every test must
  pass, except the ones listed in the framework's ``differences.toml``, which must
  *fail* (strict xfail): a listed test that passes is an error, so the list stays
  honest, and an unlisted test that fails is a failure, as in any run.

Since the framework run must pass whole, "the two runs agree except on the listed
differences" is exactly "both runs exit 0". The list is data: each entry names the
test id, the reason and the docs anchor where the difference is documented
(``tests/integrations/test_upstream_differences.py`` checks that every anchor
exists). An entry whose test is no longer collected (renamed upstream) is an error
too, when its file was collected.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SWAP_OPTION = "--swap"
VARIANTS = ("framework", "toolweave")


@dataclass(frozen=True)
class Difference:
    """One test that is expected to fail with toolweave's component swapped in."""

    test: str
    reason: str
    docs: str
    raises: str | None = None  # the exception type the swapped run fails with


@dataclass(frozen=True)
class Swap:
    """Replace `attribute` of module `module` with ``make(original)``.

    A plain name is replaced in its module and in every loaded module that
    aliases it; a dotted one (``Class.method``) on its class.
    """

    module: str
    attribute: str
    make: Callable[[Any], Any]  # the original -> its replacement


def load_differences(path: Path) -> dict[str, Difference]:
    """The differences file: ``[[difference]]`` tables with test, reason, docs."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    found: dict[str, Difference] = {}
    for entry in data.get("difference", []):
        difference = Difference(**entry)
        if difference.test in found:
            raise ValueError(f"{path}: {difference.test} is listed twice")
        found[difference.test] = difference
    return found


def apply_swaps(swaps: Iterable[Swap], prefixes: tuple[str, ...]) -> list[str]:
    """Put each replacement in its module and every loaded module that aliases it.

    Aliases are looked for in modules whose name starts with one of `prefixes`
    (the framework's own): a module that did ``from .tool_node import ToolNode``
    before this ran holds the original under its own name. Returns what was
    replaced, for the run's header.
    """
    done: list[str] = []
    for swap in swaps:
        home = importlib.import_module(swap.module)
        owner_path, _, leaf = swap.attribute.rpartition(".")
        if owner_path:  # an attribute of a class (a method): no aliases to find
            owner: Any = home
            for part in owner_path.split("."):
                owner = getattr(owner, part)
            setattr(owner, leaf, swap.make(getattr(owner, leaf)))
            done.append(f"{swap.module}.{swap.attribute}")
            continue
        original = getattr(home, swap.attribute)
        replacement = swap.make(original)
        for name, module in list(sys.modules.items()):
            if module is None or not name.startswith(prefixes):
                continue
            namespace = getattr(module, "__dict__", {})
            for key, value in list(namespace.items()):
                if value is original:
                    setattr(module, key, replacement)
                    done.append(f"{name}.{key}")
    return done


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        SWAP_OPTION,
        choices=VARIANTS,
        default="framework",
        help="framework: the framework's own component; toolweave: ours swapped in",
    )


def variant(config: pytest.Config) -> str:
    """Which run this is: ``framework`` or ``toolweave``."""
    return str(config.getoption(SWAP_OPTION))


def pytest_report_header(config: pytest.Config) -> list[str]:
    swapped = getattr(config, "_toolweave_swapped", [])
    lines = [f"upstream suite run: {variant(config)}"]
    if swapped:
        lines.append("swapped in: " + ", ".join(swapped))
    return lines


def configure_swaps(
    config: pytest.Config, swaps: Iterable[Swap], prefixes: tuple[str, ...]
) -> None:
    """Called by a framework's conftest from its ``pytest_configure``."""
    if variant(config) == "toolweave":
        config._toolweave_swapped = apply_swaps(swaps, prefixes)  # type: ignore[attr-defined]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    differences = load_differences(config.rootpath / "differences.toml")
    collected = {item.nodeid for item in items}
    files = {item.nodeid.split("::", 1)[0] for item in items}
    stale = [
        test
        for test in differences
        if test.split("::", 1)[0] in files and test not in collected
    ]
    if stale:
        raise pytest.UsageError(
            "differences.toml lists tests that are not collected: " + ", ".join(stale)
        )
    if variant(config) != "toolweave":
        return
    for item in items:
        difference = differences.get(item.nodeid)
        if difference is None:
            continue
        raises: Any = None
        if difference.raises is not None:
            module, _, name = difference.raises.rpartition(".")
            raises = getattr(importlib.import_module(module or "builtins"), name)
        item.add_marker(
            pytest.mark.xfail(
                strict=True,
                raises=raises,
                reason=f"listed difference: {difference.reason} ({difference.docs})",
            )
        )
