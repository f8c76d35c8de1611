"""Is a bash command read-only? An allow-list over a bounded, complete parse.

A command is read-only (SAFE, may run in parallel) only if

- it parsed completely within the time and size bounds (`parse_script`);
- nothing in it assigns, evaluates arithmetic or subscripts, redirects output
  to a file, defines a function, or uses syntax this module does not know
  (the parse's *hazards*; a read-only job sent to the background with ``&`` is
  read-only: the bash tool kills it with the session when the shell exits);
- every simple command anywhere in it — in lists, pipelines, subshells,
  command and input process substitutions, conditions — is read-only by the
  built-in allow-list (`argv_read_only`: the command *and every option*) or
  starts with a prefix the user declared read-only (`read_only_commands`), or
  is ``bash -c 'SCRIPT'`` / ``sh -c`` / ``bash -lc`` whose literal SCRIPT is
  itself read-only by these rules (`_shell_script`);
- a ``~`` / ``~/path`` operand counts as an absolute path (bash expands it to
  ``$HOME``, never to an option).

Anything else is SEQUENTIAL, including any failure. With ``conservative=True``
(no OS sandbox to make a wrong answer harmless) only a core of plain readers
counts (`CONSERVATIVE`): no git, no find/sed/awk, no wrappers and no user
prefixes.

The OS sandbox enforces what this decides; this decides what *may* overlap.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

import anyio.to_thread

from ...._exceptions import ConfigError
from ..._access import Concurrency
from ._commands import argv_read_only, unwrapped_start
from ._git import NO_TEXTCONV, git_read_only, git_subcommand
from ._parse import Script, SimpleCommand, Unparsed, literal_word, parse_script

__all__ = [
    "ReadOnlyVerdict",
    "classify_bash",
    "is_read_only",
    "last_command_name",
    "parse_prefixes",
    "read_only_form",
    "read_only_verdict",
    "read_only_verdict_async",
]

Prefixes = tuple[tuple[str, ...], ...]


def parse_prefixes(prefixes: Iterable[str]) -> Prefixes:
    """Split user read-only prefixes (``"bd show"``) into words.

    Raises:
        ConfigError: a prefix is empty, not a list item, or not shell words.
    """
    if isinstance(prefixes, str):
        raise ConfigError("read_only_commands must be a list of command prefixes")
    out: list[tuple[str, ...]] = []
    for prefix in prefixes:
        try:
            words = tuple(shlex.split(prefix))
        except (ValueError, AttributeError) as exc:
            raise ConfigError(f"read-only command prefix {prefix!r}: {exc}") from exc
        if not words or "/" in words[0]:
            raise ConfigError(
                f"read-only command prefix {prefix!r} must start with a command name"
            )
        out.append(words)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ReadOnlyVerdict:
    """Whether a command is read-only, and if not, why."""

    read_only: bool
    """True: every part is known read-only."""
    reason: str = ""
    """Why it is not read-only (empty when it is)."""


def _by_prefix(command: SimpleCommand, prefixes: Prefixes) -> bool:
    return any(_prefix_holds(command.words, p) for p in prefixes)


def _prefix_holds(words: tuple[str | None, ...], prefix: tuple[str, ...]) -> bool:
    """`words` start with `prefix`, and nothing after it can undo an option it pins.

    A prefix that pins an option (``gh api --method GET``) vouches for that
    option's value only: a later ``-X POST``, ``--method=POST`` or an
    abbreviation (``--meth POST``) would override it, and an expansion could
    become one. After such a prefix only literal operands may follow.
    """
    if len(words) < len(prefix) or words[: len(prefix)] != prefix:
        return False
    if not any(w.startswith("-") for w in prefix[1:]):
        return True
    return all(w is not None and not w.startswith("-") for w in words[len(prefix) :])


MAX_SHELL_DEPTH = 3
"""``bash -c`` inside ``bash -c`` looked into at most; deeper is not read-only."""

_SHELLS = frozenset({"bash", "sh"})
_SHELL_FLAGS = frozenset("celux")
"""Short options a ``bash -c`` may carry: -c, -e (errexit), -l (login: reads the
profile files, which the read-only sandbox keeps from writing), -u, -x (trace to
stderr)."""


def _shell_script(words: tuple[str | None, ...]) -> str | None:
    """The literal SCRIPT of ``bash|sh [-celux...] -c SCRIPT``, or None.

    No operand may follow SCRIPT (they would become ``$0``, ``$1``: harmless,
    but kept out so the rule stays this small), no long option, no ``-o``.
    """
    if len(words) < 3 or words[0] not in _SHELLS or any(w is None for w in words):
        return None
    flags = "".join(str(w)[1:] for w in words[1:-1])
    if not all(str(w).startswith("-") and len(str(w)) > 1 for w in words[1:-1]):
        return None
    if "c" not in flags or not set(flags) <= _SHELL_FLAGS:
        return None
    return words[-1]


def _home_resolved(part: SimpleCommand) -> tuple[str | None, ...]:
    """`part`'s words with ``~`` and ``~/literal`` as a stand-in absolute path.

    Only for the verdict: bash expands them to ``$HOME`` (absolute), so they
    are path operands, never options. ``~user``, ``~+`` and ``~-`` stay unknown.
    """
    if all(w is not None for w in part.words):
        return part.words
    out: list[str | None] = []
    for word, raw in zip(part.words, part.raw, strict=True):
        rest = literal_word(raw[1:]) if word is None and raw.startswith("~") else None
        out.append(
            "/HOME" + rest if rest is not None and rest[:1] in ("", "/") else word
        )
    return tuple(out)


def read_only_verdict(
    command: str, *, read_only_commands: Prefixes = (), conservative: bool = False
) -> ReadOnlyVerdict:
    """Decide whether `command` is read-only (see module doc). Never raises."""
    return _verdict(
        command, () if conservative else read_only_commands, conservative, 0
    )


def _verdict(
    command: str, prefixes: Prefixes, conservative: bool, depth: int
) -> ReadOnlyVerdict:
    script = parse_script(command)
    if isinstance(script, Unparsed):
        return ReadOnlyVerdict(False, script.reason)
    if script.hazards:
        return ReadOnlyVerdict(False, script.hazards[0])
    for part in script.commands:
        if _by_prefix(part, prefixes) or argv_read_only(
            _home_resolved(part), conservative
        ):
            continue
        inner = None if conservative else _shell_script(part.words)
        if inner is not None and depth < MAX_SHELL_DEPTH:
            verdict = _verdict(inner, prefixes, conservative, depth + 1)
            # the git reads inside get no --no-textconv (`read_only_form` edits
            # the outer text only): a script that needs it is not read-only here
            if verdict.read_only and read_only_form(inner) == inner:
                continue
        return ReadOnlyVerdict(False, f"not known read-only: {' '.join(part.raw)}")
    return ReadOnlyVerdict(True)


async def read_only_verdict_async(
    command: str, *, read_only_commands: Prefixes = (), conservative: bool = False
) -> ReadOnlyVerdict:
    """`read_only_verdict` on a worker thread, so the event loop runs meanwhile.

    The parse is bounded (`PARSE_DEADLINE`, `MAX_COMMAND_BYTES`), so a worker
    thread always comes back: no thread is ever left stuck, and the pool's
    threads are reused.
    """
    decide = functools.partial(
        read_only_verdict,
        command,
        read_only_commands=read_only_commands,
        conservative=conservative,
    )
    return await anyio.to_thread.run_sync(decide)


def is_read_only(
    command: str, *, read_only_commands: Prefixes = (), conservative: bool = False
) -> bool:
    """True if `command` provably only reads (see module doc)."""
    return read_only_verdict(
        command, read_only_commands=read_only_commands, conservative=conservative
    ).read_only


def classify_bash(
    command: str, *, read_only_commands: Prefixes = (), conservative: bool = False
) -> Concurrency:
    """SAFE if `command` provably only reads, else SEQUENTIAL (never raises)."""
    safe = is_read_only(
        command, read_only_commands=read_only_commands, conservative=conservative
    )
    return Concurrency.SAFE if safe else Concurrency.SEQUENTIAL


def last_command_name(command: str) -> str | None:
    """The literal name of the command whose status is the input's, if any.

    Uses the cached parse of the classifier (no second parse of the same input).
    """
    script = parse_script(command)
    if isinstance(script, Script) and script.last is not None:
        return script.last.name
    return None


def read_only_form(command: str) -> str:
    """`command` with textconv and external diff switched off in its git reads.

    Only for commands classified read-only: every ``git diff/log/show/blame/…``
    in it gets ``--no-textconv`` (and ``--no-ext-diff``) right after the
    subcommand, so a driver configured in ``.git/config`` cannot run.
    """
    script = parse_script(command)
    if isinstance(script, Unparsed):
        return command
    source = command.encode("utf-8")
    inserts: list[tuple[int, bytes]] = []
    for part in script.commands:
        at = _git_insert(part)
        if at is not None:
            inserts.append(at)
    for offset, flags in sorted(inserts, reverse=True):
        source = source[:offset] + flags + source[offset:]
    return source.decode("utf-8")


def _git_insert(part: SimpleCommand) -> tuple[int, bytes] | None:
    """Where the flags go for a git read, also inside wrappers (``timeout 5 git log``)."""
    at = unwrapped_start(part.words)
    words = part.words[at:]
    if not words or words[0] != "git" or not git_read_only(words[1:]):
        return None
    index = git_subcommand(words[1:])
    if index is None:
        return None
    flags = NO_TEXTCONV.get(str(words[1 + index]))
    if flags is None:
        return None
    return part.spans[at + 1 + index][1], f" {flags}".encode()
