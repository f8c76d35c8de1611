"""Run a framework's own test suite twice: with its component, and with toolweave's.

A pytest plugin shared by the suites under ``tests/integrations/upstream/<framework>/``
(each loads it from its ``pytest.ini``). The option ``--swap`` picks the run:

- ``--swap=framework`` (default): the framework's tests, unmodified, against the
  framework's own component. Every test must pass (or skip as it skips upstream).
- ``--swap=toolweave``: the same tests with toolweave's component swapped in by the
  framework's ``conftest.py`` (its ``SWAPS``: where the framework's class or function
  is replaced by ours, done once at configure time, before any test module is
  imported, so ``from framework import X`` in a test binds ours), with its
  defaults (every tool undeclared: a barrier). Every test must pass, except the
  ones listed in the framework's ``differences.toml``, which must *fail* (strict
  xfail): a listed test that passes is an error, so the list stays honest, and an
  unlisted test that fails is a failure, as in any run.
- ``--swap=toolweave-read-only`` (where the framework's conftest offers it): ours
  with every tool declared read-only, so calls overlap as the framework's own do.
  A difference that only the barrier causes (tools that must run at once) is
  listed for ``toolweave`` alone, and must pass here: the run proves its reason.

A difference that would hang where it fails (a tool waits forever for a sibling
the barrier holds back, and its clean-up waits too) says ``run = false``: it is
reported as an expected failure without running there, and still runs, and must
pass, in the variants it is not listed for.

Since the framework run must pass whole, "the two runs agree except on the listed
differences" is exactly "both runs exit 0". The list is data: each entry names the
test id, the reason and the docs anchor where the difference is documented
(``tests/integrations/test_upstream_differences.py`` checks that every anchor
exists). An entry whose test is no longer collected (renamed upstream) is an error
too, when its file was collected.

A second kind of entry, ``[[skew]]``, names a test that fails in *both* runs
because the installed versions are not the ones the suite was written against
(a newer ``openai`` than the SDK release pinned, a suite from a neighbouring
release): strict xfail in both runs, so it cannot hide a difference (it fails
without toolweave too) and cannot outlive the skew (it passing is an error).
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
VARIANTS = ("framework", "toolweave", "toolweave-read-only")
SWAPPED = VARIANTS[1:]


@dataclass(frozen=True)
class Difference:
    """One test that is expected to fail with toolweave's component swapped in."""

    test: str
    reason: str
    docs: str
    raises: str | None = None  # the exception type the swapped run fails with
    variants: tuple[str, ...] = SWAPPED  # the runs it fails in (skews: every run)
    run: bool = True  # False: not run where expected to fail (it would hang)


@dataclass(frozen=True)
class Swap:
    """Replace `attribute` of module `module` with ``make(original)``.

    A plain name is replaced in its module and in every loaded module that
    aliases it; a dotted one (``Class.method``) on its class.
    """

    module: str
    attribute: str
    make: Callable[[Any], Any]  # the original -> its replacement


def load_differences(path: Path, kind: str = "difference") -> dict[str, Difference]:
    """The differences file's ``[[kind]]`` tables (test, reason, docs[, raises]).

    `kind` is ``difference`` (fails only with toolweave's component) or ``skew``
    (fails in both runs, because of the installed versions).
    """
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    found: dict[str, Difference] = {}
    for entry in data.get(kind, []):
        if "variants" in entry:
            entry = {**entry, "variants": tuple(entry["variants"])}
        elif kind == "skew":
            entry = {**entry, "variants": VARIANTS}
        difference = Difference(**entry)
        unknown = set(difference.variants) - set(VARIANTS)
        if unknown:
            raise ValueError(f"{path}: {difference.test}: unknown variants {unknown}")
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
        help=(
            "framework: the framework's own component; toolweave: ours swapped in"
            " (its defaults: tools undeclared); toolweave-read-only: ours, every"
            " tool declared read-only (calls may overlap as the framework's do)"
        ),
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
    config: pytest.Config,
    swaps: Iterable[Swap],
    prefixes: tuple[str, ...],
    read_only_swaps: Iterable[Swap] | None = None,
) -> None:
    """Called by a framework's conftest from its ``pytest_configure``.

    `swaps` for ``--swap=toolweave``, `read_only_swaps` (every tool declared
    read-only) for ``--swap=toolweave-read-only``, which a suite without them
    refuses.
    """
    run_variant = variant(config)
    if run_variant == "toolweave-read-only":
        if read_only_swaps is None:
            raise pytest.UsageError(f"this suite has no {run_variant} variant")
        swaps = read_only_swaps
    if run_variant in SWAPPED:
        config._toolweave_swapped = apply_swaps(swaps, prefixes)  # type: ignore[attr-defined]
        _count_scheduled_batches(config)


def _count_scheduled_batches(config: pytest.Config) -> None:
    """Count the batches toolweave scheduled, so a swap that took no effect fails.

    Every integration schedules through `ForeignScheduler.run`; a swapped run in
    which it never ran tested the framework's own component twice.
    """
    from toolweave.integrations._foreign import ForeignScheduler

    original = ForeignScheduler.run
    config._toolweave_batches = 0  # type: ignore[attr-defined]

    async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        config._toolweave_batches += 1  # type: ignore[attr-defined]
        return await original(self, *args, **kwargs)

    ForeignScheduler.run = run  # type: ignore[method-assign]


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: int, config: pytest.Config
) -> None:
    batches = getattr(config, "_toolweave_batches", None)
    if batches is not None:
        terminalreporter.write_line(f"batches scheduled by toolweave: {batches}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    batches = getattr(session.config, "_toolweave_batches", None)
    if batches == 0 and session.testscollected and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def suite_dir(config: pytest.Config) -> Path:
    """The framework's folder: where its ``pytest.ini`` (and differences.toml) is."""
    return (config.inipath or config.rootpath / "pytest.ini").parent


def local_id(item: pytest.Item, base: Path) -> str:
    """`item`'s id relative to the suite's folder, whatever pytest's rootdir is."""
    _, sep, rest = item.nodeid.partition("::")
    return item.path.relative_to(base).as_posix() + sep + rest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    base = suite_dir(config)
    path = base / "differences.toml"
    differences = load_differences(path)
    skews = load_differences(path, "skew")
    both = set(differences) & set(skews)
    if both:
        raise pytest.UsageError(
            "differences.toml lists tests as both difference and skew: "
            + ", ".join(sorted(both))
        )
    ids = {item: local_id(item, base) for item in items}
    collected = set(ids.values())
    files = {test.split("::", 1)[0] for test in collected}
    narrowed = any("::" in arg for arg in config.args) or bool(
        config.option.keyword or config.option.markexpr
    )
    stale = [
        test
        for test in [*differences, *skews]
        if not narrowed and test.split("::", 1)[0] in files and test not in collected
    ]
    if stale:
        raise pytest.UsageError(
            "differences.toml lists tests that are not collected: " + ", ".join(stale)
        )
    run_variant = variant(config)
    expected = {
        test: difference
        for test, difference in [*skews.items(), *differences.items()]
        if run_variant in difference.variants
    }
    for item in items:
        difference = expected.get(ids[item])
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
                run=difference.run,
                reason=(
                    f"listed {'skew' if ids[item] in skews else 'difference'}:"
                    f" {difference.reason} ({difference.docs})"
                ),
            )
        )
