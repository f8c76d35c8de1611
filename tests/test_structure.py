"""The shape of the code, as checks: what issue 25 made simple stays simple.

Each limit below is a line the code must not cross again. `scheduling/` meets
them all (its backend primitives come from the bottom-layer package, `_native`,
by that package's public module names); for the rest of `src/` each check is a ratchet:
today's offenders are listed by name, a new one fails, and so does a listed
one that no longer offends (delete its entry: the lists only shrink).

They read the source with `ast` (and the import graph with grimp, which
import-linter brings), so they run in seconds.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import grimp
import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "toolweave"
LAYERS = frozenset(
    {
        "cli",
        "cluster",
        "execution",
        "integrations",
        "loop",
        "models",
        "scheduling",
        "sessions",
        "testing",
        "tools",
    }
)
BOTTOM = "_native"
"""The one private bottom-layer package any layer may import from (issue 25 item 3)."""

MAX_PARAMETERS = 8
MAX_CORE_FUNCTION_LINES = 50
MAX_MODULE_LINES = 400
MAX_BATCH_LINES = 350
CORE = ("scheduling", "execution")
"""The layers whose functions must stay short."""

# -- today's offenders outside scheduling/ (the lists only shrink) ------------

KNOWN_LONG_FUNCTIONS: frozenset[str] = frozenset()  # none left: execution/ meets it too
KNOWN_MANY_PARAMETERS = frozenset(
    {
        "cli/_app.py _options",
        "cli/_batch_command.py make_batch_command.batch",  # a typer command, registered by _app
        "cluster/_batch.py run_batch",
        "cluster/_batch.py _BatchRun.__init__",  # grew with batch recovery (issue 26)
        # public keywords (docs/agent.md): the child (model, tools, system, config,
        # timeout: the ChildAgent record) and the tool's concurrency and interrupt
        "loop/_subagent.py subagent",
        # its keywords are the public API (DESIGN.md fixes @tw.tool(concurrency=...,
        # access=..., ...)); each becomes one field of the Declaration it builds
        "tools/_function.py tool",
    }
)
KNOWN_LONG_MODULES = frozenset(
    {
        "cli/_app.py",
        "cli/_session_run.py",
        "cluster/_batch.py",  # grew with batch recovery (issue 26)
        "events.py",  # grew with the permission-wait events (issue 27)
        "execution/_audit_ops.py",
        "execution/_hooks.py",
        "execution/_rules.py",
        "loop/_loop.py",
        "sessions/_recorder.py",
        "sessions/_sqlite.py",
        "tools/builtin/bash/_commands.py",  # grew with the proved read-only forms
        "tools/builtin/bash/_parse.py",
        "tools/builtin/bash/_rules.py",
        "tools/builtin/bash/_tool.py",  # grew with declared writes (issue 28)
        "tools/builtin/_read.py",
        "tools/mcp/_server.py",
    }
)
KNOWN_PRIVATE_IMPORTS: frozenset[str] = frozenset()
# Benches measure one private stage in isolation, where the public path would
# add what the figure must leave out (the SDK's transport, the CLI's argument
# parsing, a whole run around the audit hook's per-event cost).
KNOWN_BENCH_PRIVATE_IMPORTS = frozenset(
    {
        "bench_audit.py imports execution._audit_hook",  # sys.audit cost per event
        "bench_classifier.py imports tools.builtin.bash._classifier",  # one stage
        "bench_classifier.py imports tools.builtin.bash._parse",
        "bench_classifier.py imports tools.builtin.bash._rules",
        "bench_sandbox.py imports tools.builtin.bash._process",  # spawn, no tool
        "bench_sandbox.py imports tools.builtin.sandbox._landlock",
        "bench_sandbox.py imports tools.builtin.sandbox._sandbox",
        "bench_local.py imports models._openai_chat_convert",  # request building
        "bench_local.py imports models._openai_chat_replay",  # a recorded stream
        "bench_local.py imports models._openai_chat_stream",  # chunk mapping
        "bench_store.py imports cli._drive",  # the run driver without typer
        "bench_store.py imports cli._output",
        "bench_stream.py imports models._anthropic_convert",  # mapping vs the SDKs'
        "bench_stream.py imports models._anthropic_stream",
        "bench_stream.py imports models._openai_chat_convert",
        "bench_stream.py imports models._openai_chat_stream",
        "bench_stream.py imports models._openai_responses_convert",
        "bench_stream.py imports models._openai_responses_stream",
    }
)
KNOWN_IMPORT_CIRCLES: frozenset[frozenset[str]] = frozenset()

# -- reading the source ---------------------------------------------------------


@cache
def _modules() -> tuple[tuple[str, ast.Module, int], ...]:
    """Every module of the package: its path under src/toolweave, its tree, its lines."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        out.append(
            (path.relative_to(SRC).as_posix(), ast.parse(text), len(text.splitlines()))
        )
    return tuple(out)


def _layer(rel: str) -> str | None:
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else None


def _functions(
    tree: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Each function with its qualified name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def _length(node: ast.stmt) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def _is_typer_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(func, ast.Attribute) and func.attr in {"command", "callback"}:
            return True
    return False


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    named = (*args.posonlyargs, *args.args, *args.kwonlyargs)
    return sum(a.arg not in {"self", "cls"} for a in named)


def _imported(rel: str, node: ast.ImportFrom | ast.Import) -> list[list[str]]:
    """The toolweave modules (as parts under toolweave) an import names."""
    if isinstance(node, ast.Import):
        names = [alias.name.split(".") for alias in node.names]
        return [n[1:] for n in names if n[:1] == ["toolweave"]]
    package = rel.split("/")[:-1]
    if node.level == 0:
        module = (node.module or "").split(".")
        if module[:1] != ["toolweave"]:
            return []
        base = module[1:]
    else:
        base = package[: len(package) - (node.level - 1)]
        base += node.module.split(".") if node.module else []
    # `from ..tools import _cancel` names the private module as an alias
    return [base] + [[*base, alias.name] for alias in node.names]


def _private_imports() -> set[str]:
    found = set()
    for rel, tree, _lines in _modules():
        own = _layer(rel)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom | ast.Import):
                continue
            for target in _imported(rel, node):
                if not target or target[0] == own:
                    continue
                if target[0] not in LAYERS and target[0] != BOTTOM:
                    continue
                if any(part.startswith("_") for part in target[1:]):
                    found.add(f"{rel} imports {'.'.join(target[:2])}")
    return found


def _bench_private_imports() -> set[str]:
    """Imports of a layer's private module from bench/ (`_native` is the bottom package)."""
    found = set()
    for path in sorted((SRC.parents[1] / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom | ast.Import):
                continue
            for target in _imported("bench/x.py", node):
                private = [i for i, part in enumerate(target) if part.startswith("_")]
                if target and target[0] in LAYERS and private:
                    found.add(
                        f"{path.name} imports {'.'.join(target[: private[0] + 1])}"
                    )
    return found


def _long_functions() -> set[str]:
    return {
        f"{rel} {name}"
        for rel, tree, _lines in _modules()
        if _layer(rel) in CORE
        for name, node in _functions(tree)
        if _length(node) > MAX_CORE_FUNCTION_LINES
    }


def _many_parameters() -> set[str]:
    return {
        f"{rel} {name}"
        for rel, tree, _lines in _modules()
        for name, node in _functions(tree)
        if _parameters(node) > MAX_PARAMETERS and not _is_typer_command(node)
    }


def _long_modules() -> set[str]:
    return {rel for rel, _tree, lines in _modules() if lines > MAX_MODULE_LINES}


def _import_circles() -> set[frozenset[str]]:
    """The strongly connected sets of modules (TYPE_CHECKING imports count)."""
    graph = grimp.build_graph("toolweave", cache_dir=None)
    edges = {
        m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules
    }
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: set[frozenset[str]] = set()
    for root in sorted(edges):  # Tarjan's algorithm, iteratively
        if root in order:
            continue
        work = [(root, iter(edges[root]))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            for child in children:
                if child not in order:
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[module] = min(low[module], order[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == order[module]:
                    members = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.add(member)
                        if member == module:
                            break
                    if len(members) > 1:
                        circles.add(frozenset(members))
    return circles


def _ratchet(found: set[str], known: frozenset[str], what: str) -> None:
    new = sorted(found - known)
    fixed = sorted(known - found)
    assert not new, f"new {what} (the limit is the project's): {new}"
    assert not fixed, f"no longer {what}: delete from the known list: {fixed}"


# -- scheduling/: the limits, met ------------------------------------------------


def test_scheduling_functions_are_short() -> None:
    assert {f for f in _long_functions() if f.startswith("scheduling/")} == set()


def test_scheduling_functions_take_at_most_eight_parameters() -> None:
    assert {f for f in _many_parameters() if f.startswith("scheduling/")} == set()


def test_scheduling_modules_stay_under_the_module_limit() -> None:
    assert {m for m in _long_modules() if m.startswith("scheduling/")} == set()


def test_the_batch_engine_stays_small() -> None:
    """`Batch`, the class, within its bound (issue 25: it was 684 lines of parallel lists)."""
    (tree,) = (t for rel, t, _lines in _modules() if rel == "scheduling/_batch.py")
    (batch,) = (
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Batch"
    )
    assert _length(batch) <= MAX_BATCH_LINES


def test_scheduling_is_in_no_import_circle() -> None:
    inside = [c for c in _import_circles() if any(".scheduling." in m for m in c)]
    assert inside == []


# -- the rest of src/: ratchets --------------------------------------------------------


def test_core_functions_are_short_or_known() -> None:
    _ratchet(_long_functions(), KNOWN_LONG_FUNCTIONS, "functions over 50 lines")


def test_functions_take_at_most_eight_parameters_or_are_known() -> None:
    _ratchet(_many_parameters(), KNOWN_MANY_PARAMETERS, "functions over 8 parameters")


def test_modules_stay_under_400_lines_or_are_known() -> None:
    _ratchet(_long_modules(), KNOWN_LONG_MODULES, "modules over 400 lines")


def test_no_layer_reaches_into_another_layers_private_modules_but_the_known() -> None:
    _ratchet(
        _private_imports(),
        KNOWN_PRIVATE_IMPORTS,
        "imports of another layer's private module",
    )


def test_benches_import_public_names_but_the_known() -> None:
    """Issue 25 item 5: the benches use what users can import (makespan included)."""
    _ratchet(
        _bench_private_imports(),
        KNOWN_BENCH_PRIVATE_IMPORTS,
        "bench imports of a private module",
    )


def test_scheduling_reaches_into_no_private_module_of_another_layer() -> None:
    """Its primitives come from `_native`'s public module names, nothing else."""
    assert {f for f in _private_imports() if f.startswith("scheduling/")} == set()


def test_no_import_circle_but_the_known() -> None:
    circles = _import_circles()
    assert circles - KNOWN_IMPORT_CIRCLES == set(), "a new import circle"
    assert KNOWN_IMPORT_CIRCLES - circles == set(), "a known circle ended: delete it"


# -- the checks can fail -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(a, b, c, d, e, f, g, h, i): pass", {"m.py f"}),
        ("class C:\n    def f(self, a, b, c, d, e, f, g, h): pass", set()),
        ("class C:\n    def f(self, *, a, b, c, d, e, f, g, h, i): pass", {"m.py C.f"}),
        ("@app.command()\ndef f(a, b, c, d, e, f, g, h, i): pass", set()),
    ],
)
def test_the_parameter_count_reads_what_it_should(
    source: str, expected: set[str]
) -> None:
    tree = ast.parse(source)
    found = {
        f"m.py {name}"
        for name, node in _functions(tree)
        if _parameters(node) > MAX_PARAMETERS and not _is_typer_command(node)
    }
    assert found == expected


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        ("loop/_x.py", "from ..tools._cancel import is_fatal", ["tools", "_cancel"]),
        ("loop/_x.py", "from ..tools import _cancel", ["tools", "_cancel"]),
        ("loop/_x.py", "import toolweave.tools._cancel", ["tools", "_cancel"]),
        ("loop/_x.py", "from toolweave.tools._cancel import x", ["tools", "_cancel"]),
        ("loop/_x.py", "from ..tools import Tool", None),
        ("loop/_x.py", "from .._native.cancel import is_fatal", None),
        ("loop/_x.py", "from .._native._x import y", ["_native", "_x"]),
    ],
)
def test_a_private_import_is_seen_in_every_spelling(
    rel: str, source: str, expected: list[str] | None
) -> None:
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ImportFrom | ast.Import)
    private = {
        tuple(t[:2])
        for t in _imported(rel, node)
        if any(p.startswith("_") for p in t[1:])
    }
    assert private == ({tuple(expected)} if expected else set())


def test_the_ratchet_fails_both_ways() -> None:
    with pytest.raises(AssertionError, match="new"):
        _ratchet({"a", "b"}, frozenset({"a"}), "x")
    with pytest.raises(AssertionError, match="no longer"):
        _ratchet({"a"}, frozenset({"a", "b"}), "x")
    _ratchet({"a"}, frozenset({"a"}), "x")
