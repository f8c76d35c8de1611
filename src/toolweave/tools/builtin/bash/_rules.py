"""What a bash permission rule is matched against: every command the input runs.

A rule such as ``bash(rm:*)`` must hold for ``echo hi && rm -f x``, for
``$(rm x)``, for ``bash -c 'rm x'``, ``eval rm x``, ``sudo rm x``,
``find . -exec rm {} +`` and every other way a command can sit inside another.
`ShellCommand` is the bash tool's permission subject: still the command text
(a ``str``), plus `parts()`:

- `CommandParts.exact` — the commands an *allow* rule must cover, each of them.
  Transparent wrappers (``timeout``, ``nice``, ``nohup``, ``time``,
  ``command``, ``builtin``, ``stdbuf``, ``exec``) and ``bash -c`` / ``eval``
  strings are looked through: the inner command is what must be allowed. Other
  wrappers (``sudo``, ``env``, ``xargs``, ``find -exec`` ...) are parts
  themselves *and* contribute their inner command.
- `CommandParts.possible` — a superset for *deny* and *ask* rules: every simple
  command, every inner command, and for wrappers every suffix of their words
  (so an option we don't know, ``sudo -X rm``, cannot hide the command).

`parts()` is None when the input cannot be fully parsed (too long, malformed,
too slow, arithmetic that bash may re-read as subshells — ``((rm x))`` — a
``bash -c`` string that is not literal, nesting deeper than
`MAX_DEPTH`, more than `MAX_PARTS` candidates): then no allow rule matches and
every deny rule of the tool does (fail closed).
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass

from ._conditions import condition_evaluates
from ._options import OptionSpec, first_operand, spec
from ._parse import Unparsed, parse_script

__all__ = ["CommandParts", "ShellCommand", "command_parts"]

Words = tuple[str | None, ...]

MAX_DEPTH = 4
"""Nesting of ``bash -c`` / ``eval`` / wrappers looked through."""

MAX_PARTS = 4096
"""More candidate commands than this: treated as unparseable."""

RULES_DEADLINE = 0.3
"""Seconds all nested parses of one input may take together (each is bounded by
itself); past it the input is unparseable."""

MAX_WRAPPER_WORDS = 256
"""A wrapper with more words than this is unparseable: every suffix of its words
is a candidate, and copying thousands of suffixes took seconds on the loop."""

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "yash"})

_STRING_OPTIONS: dict[str, frozenset[str]] = {
    "env": frozenset({"-S", "--split-string"}),
    "flock": frozenset({"-c", "--command"}),
    "script": frozenset({"-c", "--command"}),
    "su": frozenset({"-c", "--command", "-C", "--session-command"}),
    "runuser": frozenset({"-c", "--command", "-C", "--session-command"}),
}
"""Options whose value is a command line the wrapper runs (``flock l -c 'rm x'``)."""

_TRANSPARENT: dict[str, tuple[OptionSpec, int]] = {
    "timeout": (spec("fv", "sk", "foreground preserve-status verbose",
                     "signal kill-after"), 1),
    "nice": (spec("", "n", "", "adjustment"), 0),
    "nohup": (spec(), 0),
    "time": (spec("pv", "fo", "portability verbose append", "format output"), 0),
    "command": (spec("p"), 0),
    "builtin": (spec(), 0),
    "exec": (spec("cl", "a"), 0),
    "stdbuf": (spec("", "ioe", "", "input output error"), 0),
    "coproc": (spec(), 0),
    "!": (spec(), 0),  # tree-sitter reads the second ! of `! ! cmd` as a command
    "busybox": (spec(), 0),  # a multiplexer: ``busybox rm x`` is ``rm x``
    "toybox": (spec(), 0),
}  # fmt: skip
"""Wrappers whose inner command alone must be allowed: (options, operands before it)."""

_WRAPPERS: dict[str, tuple[OptionSpec, int]] = {
    "sudo": (spec("AbEeHiKklnPSsVh", "CDghprtTUu", "preserve-env login non-interactive "
                  "shell stdin", "chdir group host prompt role type command-timeout "
                  "user other-user close-from"), 0),
    "doas": (spec("ns", "uC"), 0),
    "env": (spec("0iv", "uCS", "ignore-environment null debug", "unset chdir split-string"),
            0),
    "xargs": (spec("0rtxp", "nIPdLsEai", "null no-run-if-empty verbose exit interactive",
                   "max-args max-procs delimiter max-lines arg-file max-chars eof replace"),
              0),
    "watch": (spec("bcegtx", "dnq", "beep color errexit chgexit no-title exec",
                   "differences interval equexit"), 0),
    "ionice": (spec("t", "cnp", "", "class classdata pid"), 0),
    "setsid": (spec("cfw"), 0),
    "chrt": (spec("abdefimoprRv", "DPT"), 1),
    "flock": (spec("sxunoFE", "wc", "shared exclusive unlock nonblock close no-fork",
                   "timeout conflict-exit-code command"), 1),
    "strace": (spec("fFcCwqrtTvVxyz", "eoOpPsSuUIaXb"), 0),
    "unbuffer": (spec("p"), 0),
    "ssh": (spec("46AaCfGgKkMNnqsTtVvXxYy", "BbcDEeFIiJLlmOopQRSWw"), 1),
    "su": (spec("lmpPf", "gGsw", "login preserve-environment pty", "group shell"), 0),
    "runuser": (spec("lmpPf", "gGsuw", "login preserve-environment pty", "group shell"),
                0),
    "chroot": (spec("", "", "skip-chdir", "userspec groups"), 1),
    "unshare": (spec("mUinpuCTrfc", "S", "fork mount-proc map-root-user"), 0),
    "firejail": (spec(), 0),
    "parallel": (spec("0jkqv", "jSI", "null keep-order quote verbose", "jobs"), 0),
    "taskset": (spec("acp", "", "all-tasks cpu-list pid"), 1),
    "numactl": (spec("al", "CcimNnpP"), 0),
    "prlimit": (spec(), 0),
    "script": (spec("aeEfqT", "cBIOt", "append return echo flush quiet",
                    "command log-in log-out log-timing timing"), 0),
    "nsenter": (spec("aFZmuinpUCTr", "tSGwe", "all no-fork preserve-credentials",
                     "target setuid setgid wd"), 0),
    "ltrace": (spec("bcCfhiLrStTV", "aAeDlnoOpsuwx"), 0),
    "valgrind": (spec("qv"), 0),
    "fakeroot": (spec("", "is", "", "lib faked"), 0),
    "faketime": (spec("mf"), 1),
    "torsocks": (spec("i", "uPpa"), 0),
    "proxychains": (spec("q", "f"), 0),
    "proxychains4": (spec("q", "f"), 0),
    "dbus-run-session": (spec("", "", "", "config-file dbus-daemon"), 0),
    "xvfb-run": (spec("as", "fenpw", "auto-servernum", "server-args"), 0),
    "systemd-run": (spec("GPqrStu", "Epu", "user scope pty pipe wait quiet",
                         "unit property setenv"), 0),
}  # fmt: skip
"""Wrappers that are commands in their own right and run another."""

_FIND_RUNNERS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@dataclass(frozen=True, slots=True)
class CommandParts:
    """The commands a bash input runs, for permission rules."""

    exact: tuple[Words, ...]
    """Each must be covered by an allow rule for the input to be allowed."""
    possible: tuple[Words, ...]
    """Any of these matching a deny (or ask) rule denies (or asks for) the input."""


class ShellCommand(str):
    """A bash command used as a permission subject: the text, plus its parts."""

    __slots__ = ()

    def parts(self) -> CommandParts | None:
        """The commands it runs (see module doc); None if it cannot be parsed."""
        return command_parts(str(self))


class _TooComplex(Exception):
    """Nesting or fan-out beyond the bounds: treat the input as unparseable."""


class _Collector:
    def __init__(self) -> None:
        self.exact: list[Words] = []
        self.possible: list[Words] = []
        self.start = time.perf_counter()

    def add_possible(self, words: Words) -> None:
        self.possible.append(words)
        if len(self.possible) > MAX_PARTS:
            raise _TooComplex

    def script(self, text: str, depth: int, *, exact: bool) -> None:
        """Add every command of a nested script (``bash -c``, ``eval``)."""
        if depth > MAX_DEPTH or time.perf_counter() - self.start > RULES_DEADLINE:
            raise _TooComplex
        parsed = parse_script(text)
        if isinstance(parsed, Unparsed) or parsed.opaque:
            raise _TooComplex
        for command in parsed.commands:
            self.command(command.words, depth, exact=exact, raws=command.raw)

    def command(
        self,
        words: Words,
        depth: int,
        *,
        exact: bool,
        raws: tuple[str, ...] | None = None,
    ) -> None:
        """Add one simple command and whatever it runs (`raws`: its words as written)."""
        if depth > MAX_DEPTH:
            raise _TooComplex
        if not words:
            return
        if _evaluates(words, raws):
            raise _TooComplex
        self.add_possible(words)
        name = words[0]
        if name is not None and "/" in name:
            name = name.rsplit("/", 1)[1]
            words = (name, *words[1:])
            self.add_possible(words)
        if self._runs_code(str(name), words, depth, exact=exact):
            return
        if exact:
            self.exact.append(words)
        if name == "find":
            self._find(words, depth, exact=exact)

    def _runs_code(self, name: str, words: Words, depth: int, *, exact: bool) -> bool:
        """Handle a command that runs other code (shell, eval, trap, wrapper)."""
        if name in _STRING_OPTIONS:
            for line in _option_values(words, _STRING_OPTIONS[name]):
                self.script(line, depth + 1, exact=exact)
        if name == "watch":  # watch runs its operands joined, through ``sh -c``
            self._eval(words, depth, exact=exact)
        if name in _SHELLS:
            return self._shell(words, depth, exact=exact)
        if name in ("source", ".") and _streamed(words[1] if len(words) > 1 else None):
            raise _TooComplex  # ``source <(echo rm x)``: code from a pipe
        if name == "eval":
            self._eval(words, depth, exact=exact)
        elif name == "trap":
            self._trap(words, depth, exact=exact)
        elif name in _TRANSPARENT:
            self._wrapper(words, _TRANSPARENT[name], depth, exact=exact, itself=False)
        elif name in _WRAPPERS:
            self._wrapper(words, _WRAPPERS[name], depth, exact=exact, itself=True)
        else:
            return False
        return True

    def _shell(self, words: Words, depth: int, *, exact: bool) -> bool:
        """``bash -c STRING``: the string's commands; False for a script file.

        A shell given neither (or ``-``) reads its commands from stdin — a pipe,
        a heredoc, a here-string — which rules cannot see: unparseable.

        Every short option cluster holding ``c`` anywhere is taken to introduce
        a script (an over-approximation: options with values are not skipped).
        """
        found = False
        for i, word in enumerate(words[1:], start=1):
            if word is None:
                raise _TooComplex
            if word.startswith("-") and not word.startswith("--") and "c" in word:
                if i + 1 >= len(words) or words[i + 1] is None:
                    raise _TooComplex
                self.script(str(words[i + 1]), depth + 1, exact=exact)
                found = True
        operand = _script_file(words)
        if not found and _streamed(operand):
            raise _TooComplex  # ``bash /dev/stdin <<< 'rm x'``, ``bash <(echo rm x)``
        if (
            found and operand is not None
        ):  # ``bash -c -- 'rm x'``, ``bash -c -e 'rm x'``
            self.script(operand, depth + 1, exact=exact)
        if not found and operand is None:
            raise _TooComplex  # it reads its commands from stdin: unknown code
        return found

    def _trap(self, words: Words, depth: int, *, exact: bool) -> None:
        """``trap 'code' SIGNAL``: the code runs later, in this shell."""
        if exact:
            self.exact.append(words)
        args = [w for w in words[1:] if w not in ("-l", "-p", "--")]
        if not args or args[0] is None:
            if args:
                raise _TooComplex
            return
        if args[0] != "-" and args[1:]:  # one operand alone is a signal to reset
            self.script(args[0], depth + 1, exact=exact)

    def _eval(self, words: Words, depth: int, *, exact: bool) -> None:
        if any(w is None for w in words[1:]):
            raise _TooComplex
        self.script(" ".join(str(w) for w in words[1:]), depth + 1, exact=exact)

    def _wrapper(
        self,
        words: Words,
        wrapper: tuple[OptionSpec, int],
        depth: int,
        *,
        exact: bool,
        itself: bool,
    ) -> None:
        options, skip = wrapper
        if len(words) > MAX_WRAPPER_WORDS:
            raise _TooComplex
        args = words[1:]
        start = first_operand(args, options)
        if words[0] == "env":  # NAME=value words come before the command
            while start is not None and start < len(args) and "=" in str(args[start]):
                start += 1
        inner = None if start is None or start + skip >= len(args) else start + skip
        if exact and (itself or inner is None):
            self.exact.append(words)
        if inner is not None:
            self.command(args[inner:], depth + 1, exact=exact)
        for i in range(1, len(words)):
            self.command(words[i:], depth + 1, exact=False)

    def _find(self, words: Words, depth: int, *, exact: bool) -> None:
        i = 0
        while i < len(words):
            if words[i] in _FIND_RUNNERS:
                end = i + 1
                while end < len(words) and words[end] not in (";", "+"):
                    end += 1
                self.command(words[i + 1 : end], depth + 1, exact=exact)
                i = end
            i += 1


_NAME_TAKERS = frozenset(
    {"read", "mapfile", "readarray", "unset", "getopts", "wait", "printf", "declare",
     "typeset", "local", "export", "readonly"}
)  # fmt: skip
"""Builtins whose operands bash may read as variable names, subscripts included:
``read 'a[$(rm y)]'`` runs ``rm``."""

_REDEFINERS = frozenset(
    {"let", "alias", "fc", "history", "hash", "enable", "compgen", "complete", "bind"}
)
"""Builtins that evaluate text as code or change what a later word runs: ``let``
does arithmetic, ``alias`` (with ``expand_aliases``), ``fc -s`` reruns history
text, ``hash -p`` and ``enable -f`` rebind a command name to another program,
``compgen -C 'rm x'`` runs its command, ``complete``/``bind -x`` store code."""


def _evaluates(words: Words, raws: tuple[str, ...] | None) -> bool:
    """True if bash may run code hidden in this command's words (see `_NAME_TAKERS`).

    Such input is unparseable for the rules: no allow rule matches it, every
    deny rule does.
    """
    name, args = words[0], words[1:]
    if name in _REDEFINERS:
        return True
    if name == "jobs":  # ``jobs -x rm x`` runs rm
        return any(a is None or (a[:1] == "-" and "x" in a) for a in words[1:])
    known = raws if raws is not None and len(raws) == len(words) else None
    if name in ("test", "["):
        if known is not None:
            return condition_evaluates(known[1:], double=False)
        return any(a is None or a in ("-v", "-R") or "[" in a for a in args)
    if name == "printf":  # only ``-v`` takes a name; an unknown format may be -v
        return bool(args) and (args[0] is None or args[0].startswith("-v"))
    if name not in _NAME_TAKERS:
        return False
    if name in ("mapfile", "readarray") and any(
        a is None or (a.startswith("-") and "C" in a) for a in args
    ):
        return True  # -C CALLBACK: bash evaluates it every -c lines
    if name in ("read", "mapfile", "readarray", "unset", "getopts", "wait"):
        return any(a is None or "[" in a for a in args)
    return _declaration_evaluates(args, known[1:] if known else None)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _declaration_evaluates(args: Words, raws: tuple[str, ...] | None) -> bool:
    """declare/export/local...: ``-i``/``-n``/arrays, or a name that may hold a subscript."""
    for i, arg in enumerate(args):
        if arg is None:
            if raws is None or not _ASSIGNMENT.match(raws[i]):
                return True  # the name itself comes from an expansion
            continue
        if arg[:1] in "-+" and "=" not in arg:
            if any(c in arg for c in "inaA"):
                return True
            continue
        target, _, value = arg.partition("=")
        if "[" in target or value.startswith("("):
            return True
    return False


_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def _streamed(path: str | None) -> bool:
    """A script path that is a pipe or stdin: code the command line carries unseen."""
    if path is None:
        return True
    return path == "-" or path.startswith(("/dev/fd/", "/dev/std", "/proc/"))


def _script_file(words: Words) -> str | None:
    """The script file a shell runs (its first operand), None if it reads stdin."""
    skip = False
    for i, word in enumerate(words[1:], start=1):
        if skip:
            skip = False
        elif word == "--":
            after = words[i + 1] if i + 1 < len(words) else None
            return after
        elif word in _SHELL_VALUED:
            skip = True
        elif word is not None and not word.startswith(("-", "+")):
            return word
    return None


def _option_values(words: Words, names: frozenset[str]) -> list[str]:
    """Values of the options `names` (``-c v``, ``-cv``, ``--command=v``, ``--command v``).

    Raises:
        _TooComplex: a value depends on an expansion.
    """
    values: list[str | None] = []
    for i, word in enumerate(words[1:], start=1):
        if word is None:
            continue
        following = words[i + 1] if i + 1 < len(words) else None
        name, eq, glued = word.partition("=")
        if word.startswith("--"):
            if word in names:
                values.append(following)
            elif eq and name in names:
                values.append(glued)
        elif word.startswith("-"):  # a cluster: -qc VALUE, -cVALUE
            at = next((j for j, c in enumerate(word[1:], 2) if f"-{c}" in names), None)
            if at is not None:
                values.append(word[at:] or following)
    if None in values:
        raise _TooComplex
    return [str(v) for v in values]


@functools.lru_cache(maxsize=256)
def command_parts(command: str) -> CommandParts | None:
    """Every command `command` runs, for permission rules (see module doc)."""
    collector = _Collector()
    try:
        collector.script(command, 0, exact=True)
    except _TooComplex:
        return None
    return CommandParts(tuple(collector.exact), tuple(collector.possible))
