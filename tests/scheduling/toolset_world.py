"""Test helpers: a session whose calls change the toolset (issue 29, item 4).

`World` holds a registry with a tool `w` (a SAFE reader at first) and an
`admin` barrier whose context modifier registers `x`, removes it, or
re-registers `w` as a SEQUENTIAL writer or back as a reader (or raises). Each
tool's output names the version that ran, so a transcript tells which tool
each call really ran as.

With `hold=True` every call waits on a gate of its own; `drive` releases, by
rendezvous, whatever is inside at once, wave by wave: the calls of one wave
were provably inside together, and calls in different waves never were.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

import toolweave as tw
from toolweave.execution import ToolOutput

T = TypeVar("T")


class World:
    """The registry, and which calls are inside their tool right now."""

    def __init__(self, *, hold: bool) -> None:
        self.hold = hold
        self.inside: set[str] = set()
        self.gates: dict[str, anyio.Event] = {}
        self.registry = tw.ToolRegistry([self._w("reader"), self._admin()])

    async def _body(self, tag: str) -> None:
        self.inside.add(tag)
        try:
            if self.hold:
                await self.gates.setdefault(tag, anyio.Event()).wait()
            else:
                await anyio.lowlevel.checkpoint()
        finally:
            self.inside.discard(tag)

    def _w(self, version: str) -> tw.Tool:
        world = self
        writer = version == "writer"

        async def w(tag: str) -> str:
            """The w test tool."""
            await world._body(tag)
            return f"w@{version}:{tag}"

        key = "w:"
        return tw.tool(
            name="w",
            concurrency=tw.Concurrency.SEQUENTIAL if writer else tw.Concurrency.SAFE,
            access=(lambda a: tw.Access(writes=[key]))
            if writer
            else (lambda a: tw.Access(reads=[key])),
        )(w)

    def _x(self) -> tw.Tool:
        world = self

        async def x(tag: str) -> str:
            """The x test tool."""
            await world._body(tag)
            return f"x:{tag}"

        return tw.tool(
            name="x",
            concurrency=tw.Concurrency.SAFE,
            access=lambda a: tw.Access(reads=["x:"]),
        )(x)

    def _reregister_w(self, version: str) -> None:
        self.registry.unregister("w")
        self.registry.register(self._w(version))

    def _raise_after(self, change: Callable[[], None]) -> Callable[[], None]:
        def modifier() -> None:
            change()
            raise RuntimeError("the modifier failed half-way")

        return modifier

    def modifier(self, op: str) -> Callable[[], object]:
        """The context modifier `admin` returns for `op`."""
        reg = self.registry
        ops: dict[str, Callable[[], object]] = {
            "register_x": lambda: reg.register(self._x()),
            "unregister_x": lambda: reg.unregister("x"),
            "w_writer": lambda: self._reregister_w("writer"),
            "w_reader": lambda: self._reregister_w("reader"),
            "raise": self._raise_after(lambda: None),
            "register_x_then_raise": self._raise_after(lambda: reg.register(self._x())),
        }
        return ops[op]

    def _admin(self) -> tw.Tool:
        world = self

        async def admin(op: str, tag: str) -> ToolOutput:
            """Change the toolset (SEQUENTIAL, undeclared: a barrier)."""
            await world._body(tag)
            return ToolOutput(f"admin {op}", context_modifier=world.modifier(op))

        return tw.tool(name="admin")(admin)


async def drive(
    world: World, run: Callable[[], Awaitable[T]]
) -> tuple[T, list[set[str]]]:
    """Run `run()`, releasing the calls inside wave by wave; its value and the waves."""
    out: list[T] = []
    waves: list[set[str]] = []
    done = anyio.Event()

    async def go() -> None:
        out.append(await run())
        done.set()

    with anyio.fail_after(60):  # a bound on a hang, never a proof of anything
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            while not done.is_set():
                await anyio.wait_all_tasks_blocked()
                if world.inside:
                    waves.append(set(world.inside))
                    for tag in world.inside:
                        world.gates.setdefault(tag, anyio.Event()).set()
                else:
                    await anyio.lowlevel.checkpoint()
    return out[0], waves


def call(i: int, name: str, tag: str, **args: Any) -> tw.ToolCall:
    """A call with id c<i> (ids unique: the Agent path keys events by them)."""
    return tw.ToolCall(f"c{i}", name, {"tag": tag, **args})


# (name, the calls as (tool, tag, op or None), the waves under the conflict policy)
CASES: dict[str, tuple[list[tuple[str, str, str | None]], list[set[str]]]] = {
    "register-then-call": (
        [("admin", "a", "register_x"), ("x", "x1", None), ("x", "x2", None)],
        [{"a"}, {"x1", "x2"}],
    ),
    "reader-to-writer": (
        [
            ("w", "r0", None),
            ("admin", "a", "w_writer"),
            ("w", "w1", None),
            ("w", "w2", None),
            ("w", "w3", None),
        ],
        [{"r0"}, {"a"}, {"w1"}, {"w2"}, {"w3"}],
    ),
    "writer-and-back": (
        [
            ("admin", "a1", "w_writer"),
            ("w", "w1", None),
            ("w", "w2", None),
            ("admin", "a2", "w_reader"),
            ("w", "r1", None),
            ("w", "r2", None),
        ],
        [{"a1"}, {"w1"}, {"w2"}, {"a2"}, {"r1", "r2"}],
    ),
    "unregister-then-call": (
        [
            ("admin", "a1", "register_x"),
            ("x", "x1", None),
            ("admin", "a2", "unregister_x"),
            ("x", "x2", None),
        ],
        [{"a1"}, {"x1"}, {"a2"}],
    ),
    "modifier-raises": (
        [("admin", "a", "raise"), ("w", "r1", None), ("w", "r2", None)],
        [{"a"}, {"r1", "r2"}],
    ),
    "modifier-registers-then-raises": (
        [("admin", "a", "register_x_then_raise"), ("x", "x1", None)],
        [{"a"}, {"x1"}],
    ),
    "two-modifiers": (
        [
            ("admin", "a1", "register_x"),
            ("admin", "a2", "w_writer"),
            ("x", "x1", None),
            ("w", "w1", None),
            ("w", "w2", None),
        ],
        [{"a1"}, {"a2"}, {"x1", "w1"}, {"w2"}],
    ),
}


def batch_of(case: str) -> list[tw.ToolCall]:
    """The calls of `case`, with ids c0, c1, ..."""
    specs, _waves = CASES[case]
    return [
        call(i, name, tag, **({"op": op} if op is not None else {}))
        for i, (name, tag, op) in enumerate(specs)
    ]


def writers_alone(world_waves: list[set[str]]) -> bool:
    """No wave holds two calls of the writer `w` (tags ``w*``), nor one beside a barrier."""
    return all(
        sum(t.startswith("w") for t in wave) <= 1
        and not (
            any(t.startswith("w") for t in wave)
            and any(t.startswith("a") for t in wave)
        )
        for wave in world_waves
    )
