"""`@tool`: turn a plain (sync or async) function into a Tool."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, NoReturn, get_type_hints, overload

from pydantic import ConfigDict, Field, create_model

from .._exceptions import ToolDefinitionError, ToolError
from .._native.threads import run_in_worker_thread
from .._native.unawaited import not_a_result
from ._access import Access, Concurrency, Interrupt
from ._context import ToolContext
from ._declaration import UNDECLARED, declared
from ._tool import DEFAULT_MAX_RESULT_CHARS, AccessSpec, ConcurrencySpec, Tool

__all__ = ["FunctionTool", "check_tool_name", "tool"]

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Example|Examples|Note|Notes):\s*$"
)
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What the Anthropic and OpenAI APIs accept as a tool name."""


def check_tool_name(name: str) -> None:
    """Raise `ToolDefinitionError` unless providers accept `name` as a tool name."""
    if _TOOL_NAME.fullmatch(name):
        return
    hint = (
        " A lambda has no name of its own: pass @tool(name=...)."
        if name == "<lambda>"
        else ""
    )
    raise ToolDefinitionError(
        f"tool name {name!r} is not accepted by model providers: use 1 to 64"
        f" letters, digits, '_' or '-'.{hint}"
    )


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            match = _ARG_LINE.match(line)
            if match and (line[: len(line) - len(line.lstrip())].count(" ") <= 4):
                current = match.group(1).lstrip("*")
                args[current] = match.group(2).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), args


class FunctionTool(Tool):
    """A tool backed by a Python function; built by `@tool`.

    Built directly, like any `Tool`, it takes the description it is given
    (`@tool` refuses a function with none: see `tool`).

    Async functions run on the event loop; sync functions on a worker thread under
    the Dispatcher's thread limiter (a sync CANCEL tool's thread is abandoned on
    cancel, since threads cannot be stopped). A parameter annotated `ToolContext`
    receives the context and is not part of the input schema.
    """

    def __init__(self, fn: Callable[..., Any], **options: Any) -> None:
        self.fn = fn
        """The wrapped function."""
        self._context_param, input_model, description = _build_input_model(
            fn, options["name"]
        )
        description = options.pop("description") or description
        if options.pop("require_description", False) and not description.strip():
            raise ToolDefinitionError(
                f"tool {options['name']!r} has no description, so the model is not"
                " told what it does: give the function a docstring (its text before"
                " 'Args:' is the description) or pass @tool(description=...)."
            )
        if inspect.isasyncgenfunction(fn):
            raise ToolDefinitionError(
                f"tool {options['name']!r} is an async generator (it yields), but a"
                " tool returns one result: collect what it would yield and return"
                " it (a list, a string)."
            )
        is_async = inspect.iscoroutinefunction(fn)
        super().__init__(
            input_model=input_model,
            description=description,
            runs_in_thread=not is_async,
            **options,
        )
        self._is_async = is_async

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Call the function with the validated arguments (and the context, if asked)."""
        kwargs = dict(args)
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        if self._is_async:
            result: Awaitable[Any] = self.fn(**kwargs)
            return await result
        return await run_in_worker_thread(
            partial(_call_sync, self.fn, kwargs),
            abandon_on_cancel=self.interrupt is Interrupt.CANCEL,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (handy in tests)."""
        return self.fn(*args, **kwargs)


def _call_sync(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """`fn(**kwargs)` on the worker thread; an awaitable it returns is its mistake.

    Checked here, in the thread: trio refuses a thread function that returns
    a coroutine with a TypeError about its own internals.
    """
    output = fn(**kwargs)
    mistake = not_a_result(output)
    if mistake is not None:
        raise ToolError(mistake)
    return output


def _build_input_model(
    fn: Callable[..., Any], name: str
) -> tuple[str | None, Any, str]:
    description, arg_docs = _parse_docstring(fn.__doc__)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"cannot resolve type hints of {name!r}: {exc}"
        ) from exc
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {name!r}: *args/**kwargs are not supported"
            )
        if param.name not in hints:
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} has no type annotation, so"
                " the model cannot be told what to pass. Annotate it (for example"
                f" `{param.name}: str`); a lambda cannot be annotated: use a def."
            )
        annotation = hints[param.name]
        if annotation is ToolContext:
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            annotation,
            Field(default, description=arg_docs.get(param.name) or None),
        )
    model = _input_model(name, fields)
    try:
        model.model_json_schema()
    except Exception as exc:
        _raise_for_the_parameter(name, fields, exc)
    return context_param, model, description


def _input_model(name: str, fields: dict[str, Any]) -> Any:
    return create_model(
        f"{name}_input",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )


def _raise_for_the_parameter(
    name: str, fields: dict[str, Any], exc: Exception
) -> NoReturn:
    """Name the first parameter whose type has no JSON schema (the model needs one)."""
    for param, spec in fields.items():
        try:
            _input_model(name, {param: spec}).model_json_schema()
        except Exception:  # this parameter's type is the one
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param!r} has type"
                f" {_type_name(spec[0])}, which has no JSON schema, so the model"
                " cannot be told how to fill it. Use str, int, float, bool, a list"
                " or dict of those, a Literal, an Enum, a dataclass or a pydantic"
                " model (annotate a ToolContext parameter to receive the context)."
            ) from exc
    raise ToolDefinitionError(f"tool {name!r}: no JSON schema: {exc}") from exc


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency: ConcurrencySpec = Concurrency.SEQUENTIAL,
    access: AccessSpec | None = None,
    access_bound: Access | None = None,
    interrupt: Interrupt = Interrupt.BLOCK,
    timeout: float | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    aliases: tuple[str, ...] = (),
    hidden: bool = False,
    abort_siblings_on_error: bool = False,
    replaceable_output: bool = False,
    placement: str = "local",
    resources: Mapping[str, float] | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency: ConcurrencySpec = Concurrency.SEQUENTIAL,
    access: AccessSpec | None = None,
    access_bound: Access | None = None,
    interrupt: Interrupt = Interrupt.BLOCK,
    timeout: float | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    aliases: tuple[str, ...] = (),
    hidden: bool = False,
    abort_siblings_on_error: bool = False,
    replaceable_output: bool = False,
    placement: str = "local",
    resources: Mapping[str, float] | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a tool from a function, bare (``@tool``) or with options (``@tool(...)``).

    The input schema comes from the type hints, argument descriptions from the
    Google-style docstring's ``Args:`` section, the tool description from the
    rest of the docstring.

    Checked here, at decoration time, so a mistake surfaces where it was made
    rather than as a provider's 400 (or a model guessing) mid-run: the name
    (and every alias) must match ``^[a-zA-Z0-9_-]{1,64}$`` (a lambda needs
    ``name=``), the tool needs a description (a docstring or
    ``description=``), every parameter needs a type annotation whose type
    has a JSON schema, and an async generator function (one result is
    returned, never a stream) is refused. A `Tool` built directly takes its
    description as given.

    Raises:
        ToolDefinitionError: naming the tool and, for a parameter, the parameter.

    Args:
        fn: The function (when used bare).
        name: Model-facing name; defaults to the function's name.
        description: Overrides the docstring.
        concurrency: A Concurrency, or a callable of the validated input returning a
            Concurrency or a bool. SEQUENTIAL unless said otherwise.
        access: The Access every call claims, or a callable of the validated input
            returning it.
        access_bound: The most any call may touch, whatever its input (lets a
            sub-agent holding this tool overlap with others; see `Tool.bound_access`).
        interrupt: CANCEL or BLOCK on user interrupt.
        timeout: Seconds before the call fails with a timeout; None = config default.
        max_result_chars: Longer results are persisted and previewed; None = never.
        aliases: Other names that resolve to this tool.
        hidden: Not offered to the model; never parallel.
        abort_siblings_on_error: A failure cancels running siblings that declare it too.
        replaceable_output: PostToolUse hooks may replace the output.
        placement: ``"local"`` (default) or ``"ray"``: run each call as a Ray task
            once the tools are wrapped by `toolweave.cluster.ray_tools`.
        resources: What one call needs where it runs, e.g. ``{"num_cpus": 2}``.
    """

    def build(func: Callable[..., Any]) -> FunctionTool:
        if not callable(func):
            raise ToolDefinitionError(f"@tool needs a function, got {func!r}")
        tool_name: str = name or str(getattr(func, "__name__", ""))
        declaration = declared(
            tool_name,
            UNDECLARED,
            concurrency=concurrency,
            access=access,
            access_bound=access_bound,
            interrupt=interrupt,
            timeout=timeout,
            max_result_chars=max_result_chars,
            hidden=hidden,
            abort_siblings_on_error=abort_siblings_on_error,
            replaceable_output=replaceable_output,
            placement=placement,  # type: ignore[arg-type]
            resources={} if resources is None else resources,
        )
        for given in (tool_name, *aliases):
            check_tool_name(given)
        return FunctionTool(
            func,
            name=tool_name,
            description=description,
            require_description=True,
            declaration=declaration,
            aliases=tuple(aliases),
        )

    if fn is not None:
        return build(fn)
    return build
