"""What a running tool can see: its call, the session's shared state, a progress channel."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .._records import slot_setter
from ..events import FileRead
from ..messages import ToolCall
from ._sandbox_mode import SandboxMode

__all__ = [
    "ReadLedger",
    "ReadRecord",
    "SessionState",
    "ShownResult",
    "ToolContext",
    "TranscriptView",
    "idempotency_key",
    "result_digest",
]


def idempotency_key(scope: str, call: ToolCall, attempt: int = 1) -> str:
    """``<scope>/<call ref>/<attempt>``: a call attempt's key (`ToolContext.idempotency_key`)."""
    return f"{scope or 'unscoped'}/{call.ref}/{attempt}"


def result_digest(call: ToolCall, text: str) -> bytes:
    """A digest of one call (its name and input) with the text of its result.

    What ties a result in the ledger to the same result in a transcript:
    equal digests mean the transcript holds this very call and this very
    text (a hook's rewrite, a persisted preview or a compaction makes them
    differ, so the earlier result counts as not seen).
    """
    key = json.dumps([call.name, call.input], sort_keys=True, default=str)
    digest = hashlib.blake2b(key.encode(), digest_size=16)
    digest.update(b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


@dataclass(frozen=True, slots=True)
class ShownResult:
    """One result that showed lines of a file: the span, and how to find it again."""

    span: tuple[int, int | None]
    """The lines it showed: (first line, lines shown or None = to the end)."""
    length: int
    """The length of its text (a cheap first test before hashing)."""
    digest: bytes
    """`result_digest` of its call and text."""


class TranscriptView(Protocol):
    """What the model will see of a run's tool results (the agent loop provides one).

    Thread-safe to call (a tool may ask from its worker thread).
    """

    def shows(self, length: int, digest: bytes) -> bool:
        """Whether the transcript holds a result of this length and `result_digest`."""


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """What the session last saw of a file when a tool read it."""

    mtime_ns: int
    """The file's modification time at the read."""
    size: int
    """The file's size at the read."""
    ranges: frozenset[tuple[int, int | None]] = frozenset()
    """Line ranges read since the file last changed: (offset, limit or None)."""
    shown: frozenset[ShownResult] = frozenset()
    """The results that showed those lines since the file last changed (in memory only)."""


def _span(span: tuple[int, int | None]) -> tuple[int, int]:
    return (span[0], -1 if span[1] is None else span[1])


class ReadLedger:
    """The files read in this session: the one piece of mutable state parallel tools share.

    Safe to use from many tasks and worker threads at once: every
    method takes an internal lock and returns immutable records. It lives for the
    whole session, so the read-before-edit guard works across iterations.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[Path, ReadRecord] = {}

    def record(
        self,
        path: Path,
        *,
        mtime_ns: int,
        size: int,
        span: tuple[int, int | None],
        shown: ShownResult | None = None,
    ) -> None:
        """Record that `span` of `path` was read when it had this mtime and size.

        `shown` is the result that showed it, when it showed lines. A read of
        a changed file forgets the spans and results from before the change.
        """
        with self._lock:
            old = self._records.get(path)
            same = old is not None and (old.mtime_ns, old.size) == (mtime_ns, size)
            spans = old.ranges if old is not None and same else frozenset()
            results = old.shown if old is not None and same else frozenset()
            if shown is not None:
                results |= {shown}
            self._records[path] = ReadRecord(mtime_ns, size, spans | {span}, results)

    def get(self, path: Path) -> ReadRecord | None:
        """The last record of `path`, or None if it was never read."""
        with self._lock:
            return self._records.get(path)

    def snapshot(self) -> tuple[FileRead, ...]:
        """Everything known, as plain records sorted by path (what a session stores)."""
        with self._lock:
            items = sorted(self._records.items(), key=lambda item: str(item[0]))
        return tuple(
            FileRead(str(path), r.mtime_ns, r.size, tuple(sorted(r.ranges, key=_span)))
            for path, r in items
        )

    def restore(self, files: Iterable[FileRead]) -> None:
        """Know `files` again (a resumed session); they replace what is known of those paths.

        A file that changed on disk since is still refused by read-before-edit:
        its recorded mtime and size no longer match.
        """
        with self._lock:
            for f in files:
                self._records[Path(f.path)] = ReadRecord(
                    f.mtime_ns, f.size, frozenset(f.ranges)
                )

    def forget(self, path: Path) -> None:
        """Drop what is known of `path`."""
        with self._lock:
            self._records.pop(path, None)

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._records

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


@dataclass(slots=True)
class SessionState:
    """State that lives as long as a session and is shared by every call in it.

    Anything a tool mutates here must be safe for concurrent use, or the tool
    must be SEQUENTIAL. `values` is guarded by `lock`.
    """

    _: KW_ONLY
    workspace: Path | None = None
    """The root every file tool is confined to."""
    results_dir: Path | None = None
    """Where large tool results are persisted (``tool-results/``)."""
    read_files: ReadLedger = field(default_factory=ReadLedger)
    """Files read in this session (the read-before-edit guard)."""
    transcript: TranscriptView | None = None
    """What the model will see of earlier results: a re-read is answered "unchanged"
    only if the result that showed those lines is in it. An agent run sets its
    own (its runs share the ledger, not their transcripts); None, for a caller's
    own loop, trusts the ledger's spans (give each conversation its own state)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Guards `values`."""
    values: dict[str, Any] = field(default_factory=dict)
    """Tool-specific shared state (todos, caches); guarded by `lock`."""
    sandbox: SandboxMode | None = None
    """The sandbox mode of bash calls (`AgentConfig.sandbox`); None = each tool's own."""
    call_scope: str = ""
    """What sets this run's calls apart from every other run's: ``<session id>/<run>``
    for a recorded run (the store's session id and run number), else the run's id.
    The agent loop sets it on its run's state; it prefixes every
    `ToolContext.idempotency_key`."""


def _ignore_progress(message: str, fraction: float | None) -> None:
    del message, fraction


class _Fresh:
    """`ToolContext.state`'s default: a new `SessionState` (shown as dataclasses do)."""

    def __repr__(self) -> str:
        return "<factory>"


_FRESH: Any = _Fresh()


@dataclass(frozen=True, slots=True, init=False)
class ToolContext:
    """Passed to a tool function that declares a parameter of this type.

    Thread affinity: a sync tool receives it on a worker thread;
    `report_progress` is safe to call from there.
    """

    call: ToolCall
    """The call being run."""
    state: SessionState = field(default_factory=SessionState)
    """The session's shared state."""
    _: KW_ONLY
    progress: Callable[[str, float | None], None] = _ignore_progress
    """Where progress goes; use `report_progress`."""
    idempotency_key: str = ""
    """A key for this call attempt, stable wherever and whenever it runs: pass it
    to an external service (a payment's or an email's idempotency key, a ticket's
    external id) so a repeated delivery of the same attempt is deduplicated.

    ``<session id>/<run>/<call ref>/<attempt>`` (`idempotency_key`): the store's
    identity of the call (`CallRecord.key`), or the run's id in place of
    session and run when nothing records it. The same on a Ray worker as on the
    driver, and the same when the store is read after a crash. A resumed session
    never runs a finished or interrupted call again; the model's repeat of a call
    is a new call with a new key. ``attempt`` is 1: toolweave runs each call
    once. Given (a remote call's driver-side key), it is kept as it is."""

    def __init__(
        self,
        call: ToolCall,
        state: SessionState = _FRESH,
        *,
        progress: Callable[[str, float | None], None] = _ignore_progress,
        idempotency_key: str | None = None,
    ) -> None:
        # The generated __init__, written out: one is made per call (see
        # toolweave._records.slot_setter).
        session = SessionState() if state is _FRESH else state
        _context_call(self, call)
        _context_state(self, session)
        _context_progress(self, progress)
        _context_key(
            self,
            _key(session.call_scope, call)
            if idempotency_key is None
            else idempotency_key,
        )

    @property
    def call_id(self) -> str:
        """The id of the call being run."""
        return self.call.id

    def report_progress(self, message: str, fraction: float | None = None) -> None:
        """Tell listeners how the call is going. Never raises, never blocks."""
        with contextlib.suppress(Exception):
            self.progress(message, fraction)


_context_call = slot_setter(ToolContext, "call")
_context_state = slot_setter(ToolContext, "state")
_context_progress = slot_setter(ToolContext, "progress")
_context_key = slot_setter(ToolContext, "idempotency_key")
_key = idempotency_key
