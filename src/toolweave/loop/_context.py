"""Context assembly: environment, git and directory providers, routed by kind.

A provider declares how often it runs through its `kind` attribute: SYSTEM (or
no attribute) runs once per run and its blocks fold into the cacheable system
prompt; any other kind is *refreshed*: re-run before every model call, and
only blocks that changed since they were last sent reach the model, as one
``<system-reminder>`` user message (nothing when unchanged, so the prompt
cache stays warm).
"""

from __future__ import annotations

import enum
import inspect
import os
import platform
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TypeAlias, final

__all__ = [
    "AssembledContext",
    "ContextAssembler",
    "ContextBlock",
    "ContextKind",
    "ContextProvider",
    "ContextRequest",
    "DirectorySummaryContext",
    "EnvironmentContext",
    "GitContext",
    "refreshes",
]


class ContextKind(enum.Enum):
    """Where a context block goes; as a provider's `kind`, how often it runs.

    SYSTEM providers run once per run; the others are refreshed before every
    model call (see `refreshes`).
    """

    SYSTEM = "system"
    """Folded into the system prompt (stable, prompt-cache friendly)."""
    USER_PREPEND = "user_prepend"
    """Refreshed facts shown first in the `<system-reminder>` user message."""
    ATTACHMENT = "attachment"
    """Refreshed facts shown after the prepended ones in the same reminder."""


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """One piece of context a provider offers."""

    kind: ContextKind
    """Where it goes."""
    key: str
    """A short name (``environment``, ``git``), used as its heading."""
    body: str
    """The text."""
    _: KW_ONLY
    cacheable: bool = True
    """Stable across calls; SYSTEM blocks that are not come after those that are."""


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """What a provider may look at."""

    _: KW_ONLY
    workspace: Path | None = None
    """The agent's workspace root (None = the current directory)."""
    prompt: str = ""
    """The user's prompt of this run."""

    @property
    def root(self) -> Path:
        """The workspace, or the current directory."""
        return self.workspace if self.workspace is not None else Path.cwd()


ProvidedContext: TypeAlias = ContextBlock | Sequence[ContextBlock] | None
ContextProvider: TypeAlias = Callable[
    [ContextRequest], ProvidedContext | Awaitable[ProvidedContext]
]
"""A callable (sync or async) of a request returning zero or more blocks."""


@final
@dataclass(frozen=True, slots=True)
class EnvironmentContext:
    """Working directory, platform and OS, as a SYSTEM block by default."""

    kind: ContextKind = ContextKind.SYSTEM
    """Where the block goes."""

    def __call__(self, request: ContextRequest) -> ContextBlock:
        """The environment block."""
        body = (
            f"Working directory: {request.root}\n"
            f"Platform: {platform.system().lower()}\n"
            f"OS version: {platform.platform()}"
        )
        return ContextBlock(self.kind, "environment", body)


def _git_dir(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = candidate.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return target if target.is_absolute() else (folder / target).resolve()
    return None


def _resolve_ref(git_dir: Path, ref: str) -> str | None:
    for base in (git_dir, _common_dir(git_dir)):
        loose = base / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip() or None
        packed = base / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    return None


def _common_dir(git_dir: Path) -> Path:
    common = git_dir / "commondir"
    if common.is_file():
        return (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


@final
@dataclass(frozen=True, slots=True)
class GitContext:
    """The git branch (or detached HEAD) read from ``.git`` files — no process is started.

    Gives nothing outside a repository. Only what ``.git/HEAD`` and the refs
    say is known: branch and commit, not uncommitted changes.
    Refreshed by default: re-read before every model call, so a commit or a
    branch switch made by a tool reaches the model as a reminder.
    """

    kind: ContextKind = ContextKind.ATTACHMENT
    """Where the block goes."""

    def __call__(self, request: ContextRequest) -> ContextBlock | None:
        """The git block, or None outside a repository."""
        git_dir = _git_dir(request.root.resolve())
        if git_dir is None or not (git_dir / "HEAD").is_file():
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref:"):
            ref = head.removeprefix("ref:").strip()
            branch = ref.removeprefix("refs/heads/")
            sha = _resolve_ref(git_dir, ref)
            commit = f" at {sha[:7]}" if sha else " (no commits yet)"
            body = f"Git branch: {branch}{commit}"
        else:
            body = f"Git HEAD: detached at {head[:7]}"
        return ContextBlock(self.kind, "git", body, cacheable=False)


@final
@dataclass(frozen=True, slots=True)
class DirectorySummaryContext:
    """The top-level entries of the workspace, cut at `max_entries`."""

    kind: ContextKind = ContextKind.ATTACHMENT
    """Where the block goes."""
    max_entries: int = 50
    """Entries listed before the rest are only counted."""
    show_hidden: bool = False
    """List names starting with a dot."""

    def __call__(self, request: ContextRequest) -> ContextBlock:
        """The directory block."""
        root = request.root
        with os.scandir(root) as entries:
            names = sorted(
                entry.name + ("/" if entry.is_dir() else "")
                for entry in entries
                if self.show_hidden or not entry.name.startswith(".")
            )
        shown = names[: self.max_entries]
        lines = [f"Directory {root} ({len(names)} entries):", *shown]
        if len(names) > len(shown):
            lines.append(f"... and {len(names) - len(shown)} more")
        return ContextBlock(self.kind, "directory", "\n".join(lines), cacheable=False)


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """Context routed by kind."""

    system: str
    """SYSTEM blocks joined, to append to the system prompt ('' if none)."""
    reminder: str | None
    """The refreshed blocks wrapped in one ``<system-reminder>``, or None."""
    skipped: tuple[str, ...] = ()
    """One line per provider that failed and was skipped."""


def refreshes(provider: ContextProvider) -> bool:
    """Whether `provider` re-runs before each model call (its `kind` is not SYSTEM).

    A provider without a `kind` attribute runs once per run.
    """
    kind = getattr(provider, "kind", ContextKind.SYSTEM)
    return isinstance(kind, ContextKind) and kind is not ContextKind.SYSTEM


def _provider_name(provider: object) -> str:
    return getattr(provider, "__name__", type(provider).__name__)


def _as_blocks(provided: ProvidedContext) -> list[ContextBlock]:
    if provided is None:
        return []
    if isinstance(provided, ContextBlock):
        return [provided]
    items: Sequence[object] = provided  # a provider may return junk at runtime
    return [b for b in items if isinstance(b, ContextBlock)]


_Found: TypeAlias = list[tuple[int, ContextBlock]]
"""Blocks with the index of the provider that gave them."""


@final
class ContextAssembler:
    """Runs providers and routes their blocks by kind, once per run and then per call.

    `assemble` runs every provider (the start of a run); `refresh` re-runs the
    refreshing ones (see `refreshes`) and keeps only the non-SYSTEM blocks whose
    body changed since last sent (a refreshing provider's SYSTEM blocks count
    at the start only: the system prompt is fixed for the run). Never raises: a
    provider that raises (or returns something that is not a block) is skipped
    and named in `AssembledContext.skipped`, once for as long as it keeps
    failing the same way; context assembly must never kill a turn. Holds per-run
    state: use one assembler per run, from one task.
    """

    def __init__(self, providers: Sequence[ContextProvider] = ()) -> None:
        self.providers = tuple(providers)
        """The providers, in order."""
        self._sent: dict[tuple[int, str], str] = {}
        self._failing: dict[int, str] = {}

    async def assemble(self, request: ContextRequest) -> AssembledContext:
        """Collect and route every provider's blocks. A checkpoint only for async providers."""
        found, skipped = await self._collect(request, range(len(self.providers)))
        self._sent = {}
        self._mark_sent(found)
        return _route([b for _, b in found], skipped)

    async def refresh(self, request: ContextRequest) -> AssembledContext:
        """Re-run the refreshing providers; the reminder holds what changed, or is None.

        `system` is always ''. A checkpoint only for async providers.
        """
        indices = [i for i, p in enumerate(self.providers) if refreshes(p)]
        found, skipped = await self._collect(request, indices)
        changed = [
            (i, b)
            for i, b in found
            if b.kind is not ContextKind.SYSTEM and self._sent.get((i, b.key)) != b.body
        ]
        self._mark_sent(changed)
        return _route([b for _, b in changed], skipped)

    def forget(self) -> None:
        """Forget what was sent (the transcript was rewritten): the next refresh sends all."""
        self._sent = {}

    def _mark_sent(self, found: _Found) -> None:
        for index, block in found:
            if block.kind is not ContextKind.SYSTEM:
                self._sent[(index, block.key)] = block.body

    async def _collect(
        self, request: ContextRequest, indices: Iterable[int]
    ) -> tuple[_Found, tuple[str, ...]]:
        found: _Found = []
        skipped: list[str] = []
        for index in indices:
            provider = self.providers[index]
            try:
                provided = provider(request)
                if inspect.isawaitable(provided):
                    provided = await provided
                found.extend((index, b) for b in _as_blocks(provided))
            except Exception as exc:
                line = f"context provider {_provider_name(provider)} failed: {exc!r}"
                if self._failing.get(index) != line:
                    skipped.append(line)
                self._failing[index] = line
            else:
                self._failing.pop(index, None)
        return found, tuple(skipped)


def _route(blocks: list[ContextBlock], skipped: tuple[str, ...]) -> AssembledContext:
    system = [b for b in blocks if b.kind is ContextKind.SYSTEM]
    system.sort(key=lambda b: not b.cacheable)  # stable: cacheable blocks first
    refreshed = [b for b in blocks if b.kind is ContextKind.USER_PREPEND] + [
        b for b in blocks if b.kind is ContextKind.ATTACHMENT
    ]
    reminder = None
    if refreshed:
        inner = "\n\n".join(f"# {b.key}\n{b.body}" for b in refreshed)
        reminder = f"<system-reminder>\n{inner}\n</system-reminder>"
    return AssembledContext(
        "\n\n".join(f"# {b.key}\n{b.body}" for b in system), reminder, skipped
    )
