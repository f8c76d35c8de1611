"""Permission rules in the shape of Claude Code settings: ``Tool`` and ``Tool(spec)``."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Literal, TypeAlias, final
from urllib.parse import urlsplit

from .._exceptions import ConfigError
from ..tools.builtin import CommandParts, ShellCommand

__all__ = ["PermissionRule", "PermissionRules", "RuleBehavior", "RuleVerdict"]

RuleBehavior: TypeAlias = Literal["allow", "ask", "deny"]

_RULE = re.compile(r"\s*([^\s()]+)\s*(?:\((.*)\))?\s*", re.DOTALL)
# Shell control operators: an allow *wildcard* never vouches for a compound command.
_COMPOUND = (";", "&", "|", "`", "$(", ">", "<", "\n")


_LIT, _ONE, _STAR, _ANY, _DIRS = range(5)
"""Path-glob tokens: a character, ``?``, ``*``, ``**``, ``**/``."""


def _glob_tokens(pattern: str) -> tuple[tuple[int, str], ...]:
    tokens: list[tuple[int, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            tokens.append((_DIRS, ""))
            i += 3
        elif pattern.startswith("**", i):
            tokens.append((_ANY, ""))
            i += 2
        else:
            char = pattern[i]
            kind = _STAR if char == "*" else _ONE if char == "?" else _LIT
            tokens.append((kind, char))
            i += 1
    return tuple(tokens)


_WILDCARDS = (_STAR, _ANY, _DIRS)


def glob_fullmatch(pattern: str, path: str) -> bool:
    """gitignore-style glob: ``**/`` any directories, ``**`` anything, ``*``/``?`` within one.

    Runs the pattern as a set of positions over the path, one character at a
    time: linear in the path (times the pattern's length). A backtracking regex
    is polynomial in the number of stars, and the path comes from the model:
    ``**/*a*a*b`` against a 4,000-character name took seconds, longer ones hours.
    A position is ``2 * token``, or ``2 * token + 1`` inside a ``**/`` that has
    matched characters (it may then end only with a ``/``).
    """
    tokens = _glob_tokens(pattern)
    states = _closure(tokens, {0})
    for char in path:
        states = _closure(tokens, _step(tokens, states, char))
        if not states:
            return False
    return 2 * len(tokens) in states


def _closure(tokens: tuple[tuple[int, str], ...], states: set[int]) -> set[int]:
    """`states` and every position reachable from them by matching nothing."""
    stack = list(states)
    while stack:
        state = stack.pop()
        index, inside = divmod(state, 2)
        wildcard = not inside and index < len(tokens) and tokens[index][0] in _WILDCARDS
        if wildcard and state + 2 not in states:
            states.add(state + 2)
            stack.append(state + 2)
    return states


def _step(tokens: tuple[tuple[int, str], ...], states: set[int], char: str) -> set[int]:
    """The positions after matching `char` from each of `states`."""
    after: set[int] = set()
    for state in states:
        index = state // 2
        if index == len(tokens):
            continue
        kind, literal = tokens[index]
        start, following = 2 * index, 2 * index + 2
        if kind == _LIT:
            if char == literal:
                after.add(following)
        elif kind == _ONE:
            if char != "/":
                after.add(following)
        elif kind == _ANY or (kind == _STAR and char != "/"):
            after.add(start)
        elif kind == _DIRS:  # ``(?:.*/)?``: any characters, ending with a "/"
            after.add(start + 1)
            if char == "/":
                after.add(following)
    return after


def _base_dir(workspace: Path | None) -> str:
    return posixpath.normpath(os.path.abspath(workspace if workspace else os.getcwd()))


def _path_globs(spec: str, workspace: Path | None) -> list[str]:
    """Absolute glob patterns a path spec stands for.

    ``//p`` is absolute; ``~/p`` is under the home directory; ``/p`` is matched
    both as absolute and under the workspace (Claude Code reads it relative to
    the project, a shell reads it from the root: a deny rule must not miss
    either); ``./p``, ``../p`` and ``a/p`` are under the workspace (or the
    current directory); a bare name such as ``*.env`` matches at any depth; a
    trailing ``/`` means everything below.
    """
    if spec.endswith("/"):
        spec += "**"
    base = _base_dir(workspace)
    if spec.startswith("//"):
        return [spec[1:]]
    if spec == "~" or spec.startswith("~/"):
        return [str(Path.home()) + spec[1:]]
    if spec.startswith("/"):
        return [spec, base.rstrip("/") + spec]
    if "/" not in spec:
        return ["**/" + spec]
    return [posixpath.normpath(posixpath.join(base, spec))]


def _normalize_subject(subject: PurePath, workspace: Path | None) -> str:
    text = subject.as_posix()
    if not subject.is_absolute():
        text = posixpath.join(_base_dir(workspace), text)
    return posixpath.normpath(text)


def _is_boundary(char: str) -> bool:
    """True if `char` ends a command word: whitespace or a shell operator."""
    return char.isspace() or char in ";&|<>()`$"


def wildcard_fullmatch(spec: str, subject: str) -> bool:
    """True if `subject` is `spec` with each ``*`` standing for any text (newlines too).

    Linear in the subject: the parts between stars are found leftmost, in
    order, which is exact for a star-only pattern. A regex (``.*`` per star)
    backtracks polynomially in the number of stars, and the subject is a
    command the model wrote: ``*a*a*a*b`` against 16 k characters took minutes.
    """
    first, *middle, last = spec.split("*")
    if not subject.startswith(first):
        return False
    start, end = len(first), len(subject) - len(last)
    if end < start or not subject.endswith(last):
        return False
    for part in middle:
        found = subject.find(part, start, end)
        if found < 0:
            return False
        start = found + len(part)
    return True


def _match_text(spec: str, subject: str, *, vouching: bool) -> bool:
    """Match a command: exact, ``prefix:*`` (then a word boundary), or ``*`` globs."""
    if spec.endswith(":*"):
        prefix = spec[:-2]
        ok = subject == prefix or (
            subject.startswith(prefix) and _is_boundary(subject[len(prefix)])
        )
    elif "*" in spec:
        ok = wildcard_fullmatch(spec, subject)
    else:
        return subject == spec
    if ok and vouching:
        return not any(op in subject and op not in spec for op in _COMPOUND)
    return ok


def _words_match(spec: str, words: tuple[str | None, ...]) -> bool:
    """Could the command `words` match `spec`? Unknown words (None) match anything.

    Used for deny and ask rules, so every doubt resolves to a match.
    """
    if None not in words:
        return _match_text(spec, " ".join(str(w) for w in words), vouching=False)
    if spec.endswith(":*"):
        wanted = spec[:-2].split()
        return len(words) >= len(wanted) and all(
            w is None or w == p for w, p in zip(words, wanted, strict=False)
        )
    if "*" in spec:
        head = spec.split()[0] if spec.split() else "*"
        return "*" in head or words[0] is None or words[0] == head
    wanted = spec.split()
    return len(words) == len(wanted) and all(
        w is None or w == p for w, p in zip(words, wanted, strict=True)
    )


def _host_matches(pattern: str, url: str) -> bool:
    """``domain:example.com`` (that host) or ``domain:*.example.com`` (its subdomains)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:  # a malformed URL has no host to match
        return False
    if not host:
        return False
    pattern = pattern.strip().lower().rstrip(".")
    host = host.rstrip(".")
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


@final
@dataclass(frozen=True, slots=True)
class PermissionRule:
    """One parsed rule: a tool-name pattern and an optional argument spec."""

    text: str
    """The rule as written."""
    tool: str
    """Lower-cased fnmatch pattern of tool names."""
    spec: str | None
    """The argument spec inside the parentheses; None = the whole tool."""

    @classmethod
    def parse(cls, text: str) -> PermissionRule:
        """Parse ``Name`` or ``Name(spec)``.

        Raises:
            ConfigError: if the rule is empty or malformed.
        """
        match = _RULE.fullmatch(text)
        if match is None:
            raise ConfigError(f"malformed permission rule {text!r}")
        spec = match.group(2)
        if spec is not None:
            spec = spec.strip()
        return cls(
            text, match.group(1).lower(), None if spec in ("", "*", None) else spec
        )

    def matches_tool(self, names: tuple[str, ...]) -> bool:
        """True if this rule names one of `names` (the tool's name and aliases).

        ``mcp__server`` also matches every ``mcp__server__*`` tool.
        """
        patterns = [self.tool]
        if self.tool.startswith("mcp__") and "__" not in self.tool[5:]:
            patterns.append(self.tool + "__*")
        return any(
            fnmatch.fnmatchcase(name.lower(), p) for name in names for p in patterns
        )

    def matches(
        self,
        names: tuple[str, ...],
        subject: str | PurePath | None,
        *,
        workspace: Path | None,
        vouching: bool = False,
    ) -> bool:
        """True if this rule covers a call of a tool named `names` with `subject`.

        `vouching` is set for allow rules: then a wildcard spec never matches a
        command holding a shell control operator the spec does not contain.
        """
        if not self.matches_tool(names):
            return False
        if self.spec is None:
            return True
        if subject is None:
            return False
        if self.spec.startswith("domain:") and isinstance(subject, str):
            return _host_matches(self.spec[len("domain:") :], subject)
        if isinstance(subject, PurePath):
            path = _normalize_subject(subject, workspace)
            return any(
                glob_fullmatch(glob, path) for glob in _path_globs(self.spec, workspace)
            )
        return _match_text(self.spec, subject, vouching=vouching)


def _limiting_verdict(
    behavior: RuleBehavior, rule: PermissionRule, parts: CommandParts | None
) -> RuleVerdict | None:
    """A deny or ask rule's verdict on a shell input: any part that could match."""
    if rule.spec is None:
        return RuleVerdict(behavior, rule.text)
    if parts is None:
        return RuleVerdict(
            behavior,
            f"{rule.text} (the command could not be fully parsed,"
            " so it may run what the rule names)",
        )
    if any(_words_match(rule.spec, p) for p in parts.possible):
        return RuleVerdict(behavior, rule.text)
    return None


def _allow_verdict(
    allows: list[PermissionRule], parts: CommandParts | None
) -> RuleVerdict | None:
    """Allow a shell input only if every part is literal and covered by a rule."""
    whole = next((rule for rule in allows if rule.spec is None), None)
    if whole is not None:
        return RuleVerdict("allow", whole.text)
    if parts is None or not parts.exact:
        return None
    used: dict[str, None] = {}
    for part in parts.exact:
        covering = [r.text for r in allows if r.spec and _covers(r.spec, part)]
        if not covering:
            return None
        used[covering[0]] = None
    return RuleVerdict("allow", ", ".join(used))


def _covers(spec: str, words: tuple[str | None, ...]) -> bool:
    """Does an allow spec certainly cover the command `words`?

    Words that depend on an expansion (None) are covered only by a prefix rule
    (``echo:*``) whose words all come before them.
    """
    if None not in words:
        return _match_text(spec, " ".join(str(w) for w in words), vouching=False)
    if not spec.endswith(":*"):
        return False
    wanted = tuple(spec[:-2].split())
    return len(words) >= len(wanted) and words[: len(wanted)] == wanted


@final
@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """The most restrictive rule that matched a call."""

    behavior: RuleBehavior
    """deny beats ask beats allow."""
    rule: str
    """The rule as written."""


@final
@dataclass(frozen=True, slots=True, init=False)
class PermissionRules:
    """Allow, ask and deny rules, written like Claude Code's settings.

    A rule is a tool-name pattern (case-insensitive fnmatch: ``Edit``,
    ``mcp__git__*``; ``mcp__git`` covers the whole server), optionally with an
    argument spec matched against the tool's `permission_subject`:
    ``Bash(git log:*)`` (prefix then a space or the end), ``Bash(npm run *)``
    (``*`` wildcard), ``Bash(make)`` (exact), ``Read(./src/**)`` (a path glob,
    for tools whose subject is a path), ``web_fetch(domain:example.com)`` (the
    host of a URL subject; ``domain:*.example.com`` for its subdomains). When
    several rules match, deny beats ask beats allow.

    Raises:
        ConfigError: if a rule is malformed.
    """

    allow: tuple[PermissionRule, ...]
    """Calls that need no approval (they satisfy a tool's own ask)."""
    ask: tuple[PermissionRule, ...]
    """Calls that always need approval, whatever hooks or modes say."""
    deny: tuple[PermissionRule, ...]
    """Calls that never run."""

    def __init__(
        self,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
    ) -> None:
        for name, rules in (("allow", allow), ("ask", ask), ("deny", deny)):
            if isinstance(rules, str):
                raise ConfigError(f"{name}= must be a list of rules, not one string")
            object.__setattr__(
                self, name, tuple(PermissionRule.parse(r) for r in rules)
            )

    def match(
        self,
        names: tuple[str, ...],
        subject: str | PurePath | None,
        *,
        workspace: Path | None = None,
    ) -> RuleVerdict | None:
        """The most restrictive rule covering this call, or None. Pure; never blocks."""
        ordered: tuple[tuple[RuleBehavior, tuple[PermissionRule, ...]], ...] = (
            ("deny", self.deny),
            ("ask", self.ask),
            ("allow", self.allow),
        )
        if isinstance(subject, ShellCommand):
            return self._match_shell(names, subject)
        for behavior, rules in ordered:
            for rule in rules:
                if rule.matches(
                    names, subject, workspace=workspace, vouching=behavior == "allow"
                ):
                    return RuleVerdict(behavior, rule.text)
        return None

    def _match_shell(
        self, names: tuple[str, ...], subject: ShellCommand
    ) -> RuleVerdict | None:
        """Rules over every command a shell input runs (see `ShellCommand`).

        Deny beats ask beats allow; a deny or ask rule matches if *any* part
        could match it (and every rule matches input that cannot be parsed);
        allow needs *every* part covered by some allow rule.
        """
        parts = subject.parts()
        limiting: tuple[tuple[RuleBehavior, tuple[PermissionRule, ...]], ...] = (
            ("deny", self.deny),
            ("ask", self.ask),
        )
        for behavior, rules in limiting:
            for rule in rules:
                if rule.matches_tool(names):
                    verdict = _limiting_verdict(behavior, rule, parts)
                    if verdict is not None:
                        return verdict
        return _allow_verdict([r for r in self.allow if r.matches_tool(names)], parts)

    def __bool__(self) -> bool:
        return bool(self.allow or self.ask or self.deny)
