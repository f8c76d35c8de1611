"""The tool contract: what the scheduler and the lifecycle need from any tool."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import PurePath
from typing import Any, Literal, Unpack

from pydantic import BaseModel, ValidationError

from .._exceptions import ToolInputError
from ._access import Access, Concurrency, Warrant
from ._context import ToolContext
from ._declaration import (
    DEFAULT_MAX_RESULT_CHARS,
    UNDECLARED,
    AccessSpec,
    ConcurrencySpec,
    Declaration,
    DeclarationFields,
)
from ._declaration import declared as declared_as
from ._declaration_errors import report_declaration_error

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "AccessSpec",
    "ConcurrencySpec",
    "PermissionCheck",
    "Tool",
    "format_validation_error",
]


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as tools present it (no title, always properties)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars), without `copy.deepcopy`'s toll."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class PermissionCheck:
    """A tool's own opinion about whether a call may run (`Tool.check_permissions`)."""

    behavior: Literal["allow", "ask", "deny", "passthrough"] = "passthrough"
    """``passthrough`` leaves the decision to rules, hooks and mode."""
    message: str = ""
    """Why, shown to the user (ask) or the model (deny)."""
    _: KW_ONLY
    rules: tuple[str, ...] = ()
    """For an ask: allow rules that together would approve this call without
    asking, e.g. ``("bash(make test)",)`` or ``("web_fetch(domain:example.com)",)``.

    A denial for want of anyone to ask names them, and an "always" answer
    approves what they name for the rest of the run (empty: this tool with
    this subject).
    """


def _raised(exc: Exception) -> str:
    return (
        f"it raised {type(exc).__name__}: {exc}"
        if str(exc)
        else f"it raised {type(exc).__name__}"
    )


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    """Say what was wrong with the input in words a model can act on."""
    lines = [f"Invalid input for tool {tool_name!r}:"]
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(input)"
        lines.append(f"- {where}: {err['msg']}")
    return "\n".join(lines)


class Tool:
    """A tool the model can call.

    Subclasses implement `call`. Everything else has a safe default: SEQUENTIAL,
    undeclared access (a barrier under the `conflict` policy), BLOCK on interrupt.
    Declarations live here; the Dispatcher decides what overlaps.

    Thread affinity: `concurrency_for`, `access_for` and `parse` may be called from
    the dispatching task at any time and must not block.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_model: type[BaseModel],
        declaration: Declaration = UNDECLARED,
        aliases: tuple[str, ...] = (),
        runs_in_thread: bool = False,
        warrant: Warrant = Warrant.USER,
        **declared: Unpack[DeclarationFields],
    ) -> None:
        """A tool named `name` whose calls are run as `declaration` says.

        `declaration`'s fields may also be given as keywords (``timeout=5``,
        ``concurrency=Concurrency.SAFE``, ...): they replace the same fields
        of `declaration` (the fail-closed default when none is given), so
        subclasses written before the record existed keep working, and one
        declaration can be shared and varied. Either way one `Declaration` is
        built and checked; the attributes below are its fields, read on the
        scheduler's hot path.

        Raises:
            ToolDefinitionError: naming the tool and the field at fault.
        """
        declaration = declared_as(name, declaration, **declared)
        self.name = name
        """The model-facing name."""
        self.description = description
        """What the model is told the tool does."""
        self.input_model = input_model
        """The pydantic model inputs are validated against."""
        self._field_names = tuple(input_model.model_fields)
        self.aliases = aliases
        """Other names the registry resolves to this tool."""
        self.runs_in_thread = runs_in_thread
        """The tool's work runs on a worker thread (it cannot be cancelled mid-way)."""
        self._warrant = warrant
        self.concurrency = declaration.concurrency
        """A Concurrency, or a callable of the validated input (`Declaration.concurrency`)."""
        self.access = declaration.access
        """An Access, or a callable of the validated input; None = undeclared."""
        self.access_bound = declaration.access_bound
        """The most any call touches, whatever its input; None = unknown (`bound_access`)."""
        self.interrupt = declaration.interrupt
        """What a running call does on user interrupt."""
        self.timeout = declaration.timeout
        """Seconds before the call is ended with a timeout error; None = config default."""
        self.max_result_chars = declaration.max_result_chars
        """Results longer than this are persisted and previewed; None = never."""
        self.hidden = declaration.hidden
        """Hidden tools are not offered to the model and never run in parallel (as in Codex)."""
        self.abort_siblings_on_error = declaration.abort_siblings_on_error
        """If this call fails, cancel running siblings that also declare it (as in Claude Code)."""
        self.replaceable_output = declaration.replaceable_output
        """PostToolUse hooks may replace this tool's output."""
        self.placement: str = declaration.placement
        """``"local"`` or ``"ray"`` (see `Declaration.placement`)."""
        self.resources: Mapping[str, float] = declaration.resources
        """What one call needs where it runs (see `Declaration.resources`)."""

    @property
    def declaration(self) -> Declaration:
        """What this tool declares, as one record built from its attributes now.

        Built on each read, so it always says what the scheduler sees (an
        attribute changed after construction included), and checked like any
        declaration: reading it for a tool whose attributes were set to
        something no declaration allows raises `ToolDefinitionError`.
        """
        return Declaration(
            concurrency=self.concurrency,
            access=self.access,
            access_bound=self.access_bound,
            interrupt=self.interrupt,
            timeout=self.timeout,
            max_result_chars=self.max_result_chars,
            hidden=self.hidden,
            abort_siblings_on_error=self.abort_siblings_on_error,
            replaceable_output=self.replaceable_output,
            placement=self.placement,  # type: ignore[arg-type]
            resources=self.resources,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    @property
    def warrant(self) -> Warrant:
        """Who vouches for this tool's SAFE claim: whether its calls may start early.

        `Warrant.USER` unless the tool says otherwise: a tool you build, or
        declare with ``@tool``, makes its claim in your code. Tools that relay
        someone else's claim (MCP, manifests) or enforce their own (the
        built-ins) set it; must not block (read as each streamed call arrives).
        """
        return self._warrant

    # -- declarations --------------------------------------------------------

    def parse(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Validate raw input and return it as ``{argument name: value}``.

        Raises:
            ToolInputError: with a message that tells the model what was wrong.
        """
        try:
            model = self.input_model.model_validate(dict(raw))
        except ValidationError as exc:
            raise ToolInputError(format_validation_error(self.name, exc)) from exc
        return {name: getattr(model, name) for name in self._field_names}

    def concurrency_for(self, args: dict[str, Any]) -> Concurrency:
        """The concurrency of a call with validated `args`; SEQUENTIAL if unsure.

        A classifier that raises or returns anything but a Concurrency or a bool
        means SEQUENTIAL (fail closed), and is reported (see
        `reporting_declaration_errors`).
        """
        spec = self.concurrency
        if isinstance(spec, Concurrency):
            return spec
        try:
            verdict: object = spec(args)
        except Exception as exc:
            report_declaration_error(self.name, "concurrency", _raised(exc))
            return Concurrency.SEQUENTIAL
        if isinstance(verdict, Concurrency):
            return verdict
        if isinstance(verdict, bool):
            return Concurrency.SAFE if verdict else Concurrency.SEQUENTIAL
        report_declaration_error(
            self.name, "concurrency", f"it returned {verdict!r}, not a Concurrency"
        )
        return Concurrency.SEQUENTIAL

    def access_for(self, args: dict[str, Any]) -> Access | None:
        """The resources a call touches, or None when the tool declares nothing.

        A declaration that raises or returns a non-Access means a barrier, and
        is reported (see `reporting_declaration_errors`).
        """
        spec = self.access
        if spec is None or isinstance(spec, Access):
            return spec
        try:
            access: object = spec(args)
        except Exception as exc:
            report_declaration_error(self.name, "access", _raised(exc))
            return Access.barrier()
        if isinstance(access, Access):
            return access
        report_declaration_error(
            self.name, "access", f"it returned {access!r}, not an Access"
        )
        return Access.barrier()

    def bound_access(self) -> Access:
        """What any call of this tool may touch, whatever its input. Fail closed.

        Used where the input is not known yet: a sub-agent call claims the union
        of its tools' bounds. The declared `access_bound` if any; else a SAFE
        tool's constant `access` (undeclared: it reads everything, as the gate
        treats its calls); else a SEQUENTIAL tool's constant `access` if it
        writes something. Anything else (input-dependent concurrency, an
        input-dependent access with no bound, a SEQUENTIAL tool claiming no
        write) writes everything.
        """
        if self.access_bound is not None:
            return self.access_bound
        spec = self.access
        if self.concurrency is Concurrency.SAFE:
            if spec is None:
                return Access.read_all()
            if isinstance(spec, Access):
                return spec
        if (
            self.concurrency is Concurrency.SEQUENTIAL
            and isinstance(spec, Access)
            and spec.writes
        ):
            return spec
        return Access.barrier()

    # -- lifecycle hooks a tool may override ---------------------------------

    async def warm_declarations(self, raw_input: Mapping[str, Any]) -> None:
        """Do off the event loop what `concurrency_for`/`access_for` will need.

        Awaited with the call's raw input before the gate classifies it, so a
        declaration that costs real work (parsing a shell command) is computed
        on a worker thread and only looked up, cached, on the loop. Contract:
        bounded in time, never raises (the scheduler ignores a failure, and the
        gate then does the work itself, still fail-closed). Default: nothing.
        """

    @property
    def needs_warming(self) -> bool:
        """True if `warm_declarations` does anything (a subclass overrides it).

        Lets the scheduler skip the await for the many tools whose declarations
        cost nothing to compute.
        """
        return type(self).warm_declarations is not Tool.warm_declarations

    @property
    def needs_prepare(self) -> bool:
        """True if `prepare` must be awaited before the call takes a slot."""
        return False

    async def prepare(self) -> None:
        """Readiness step (connect to a server, warm a cache), awaited outside the gate.

        Awaited before the call takes a concurrency slot, so a cold start never
        holds a slot. If it raises, the call still runs and reports the failure.
        """

    async def validate_input(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> str | None:
        """Check the validated input against the world; return an error message or None."""
        del args, ctx
        return None

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        """The tool's own permission opinion; by default it has none."""
        del args, ctx
        return PermissionCheck()

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        """The argument that permission rules of the form ``Name(spec)`` match.

        Return a string for a command or a URL (matched exactly, by a
        ``prefix:*`` rule, or by ``*`` wildcards), an absolute `PurePath` for a
        file (matched by gitignore-style globs, relative ones against the
        workspace), or None when the tool has no such argument: then only rules
        that name the bare tool match it. Must not block; a raise fails the call
        (fail closed).
        """
        del args
        return None

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the tool. Returns raw output the lifecycle maps to result content.

        Raise `ToolError` (or any exception) to fail the call; the message becomes
        the error result.
        """
        raise NotImplementedError

    # -- schemas ---------------------------------------------------------------

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the input: a fresh copy the caller may change.

        pydantic builds it once per input model (a model class is immutable,
        so is its schema); every run asks for it again, and building it costs
        far more than copying it.
        """
        return {k: _copy_json(v) for k, v in _schema_of(self.input_model).items()}

    def anthropic_spec(self) -> dict[str, Any]:
        """The tool as the Anthropic Messages API wants it."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema(),
        }

    def openai_spec(self) -> dict[str, Any]:
        """The tool as OpenAI Chat Completions wants it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema(),
            },
        }
