"""WrappedTool: a tool that declares exactly what another tool declares and delegates to it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ._access import Access, Concurrency, Warrant
from ._context import ToolContext
from ._tool import PermissionCheck, Tool

__all__ = ["WrappedTool"]


class WrappedTool(Tool):
    """Wraps `inner`: same name, schema, declarations and checks; subclasses change `call`.

    Use it to change *where* or *how* a tool's work runs (on a Ray worker, after an
    added latency) without changing what the scheduler and the lifecycle see:
    validation, concurrency, access, readiness, `validate_input`, permissions and
    the schema all come from `inner`. Keyword `overrides` replace declared
    attributes, a `Declaration` field among them (for example
    ``runs_in_thread=False`` when the wrapper's call can be cancelled even
    though the inner one could not, or ``placement="ray"``).
    """

    def __init__(self, inner: Tool, **overrides: Any) -> None:
        declared: dict[str, Any] = {
            "name": inner.name,
            "description": inner.description,
            "input_model": inner.input_model,
            "declaration": inner.declaration,
            "aliases": inner.aliases,
            "runs_in_thread": inner.runs_in_thread,
        }
        super().__init__(**{**declared, **overrides})
        self.inner = inner
        """The wrapped tool."""
        self._own_warrant = "warrant" in overrides

    @property
    def warrant(self) -> Warrant:
        """The inner tool's (it makes the claims), unless `overrides` gave one."""
        return self._warrant if self._own_warrant else self.inner.warrant

    def parse(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The inner tool's validation."""
        return self.inner.parse(raw)

    def concurrency_for(self, args: dict[str, Any]) -> Concurrency:
        """The inner tool's concurrency."""
        return self.inner.concurrency_for(args)

    def access_for(self, args: dict[str, Any]) -> Access | None:
        """The inner tool's access claims."""
        return self.inner.access_for(args)

    def bound_access(self) -> Access:
        """The inner tool's bound."""
        return self.inner.bound_access()

    async def warm_declarations(self, raw_input: Mapping[str, Any]) -> None:
        """The inner tool's warm-up of its declarations."""
        await self.inner.warm_declarations(raw_input)

    @property
    def needs_warming(self) -> bool:
        """The inner tool's, unless a subclass warms up itself."""
        if type(self).warm_declarations is not WrappedTool.warm_declarations:
            return True
        return self.inner.needs_warming

    @property
    def needs_prepare(self) -> bool:
        """The inner tool's readiness."""
        return self.inner.needs_prepare

    async def prepare(self) -> None:
        """The inner tool's readiness step."""
        await self.inner.prepare()

    async def validate_input(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> str | None:
        """The inner tool's check."""
        return await self.inner.validate_input(args, ctx)

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        """The inner tool's permission opinion."""
        return await self.inner.check_permissions(args, ctx)

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        """The inner tool's permission subject."""
        return self.inner.permission_subject(args)

    def input_schema(self) -> dict[str, Any]:
        """The inner tool's schema."""
        return self.inner.input_schema()

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the inner tool (subclasses change this)."""
        return await self.inner.call(args, ctx)
