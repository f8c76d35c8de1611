"""The read-only allow-list of the bash classifier: which argv can write nothing.

`argv_read_only(argv)` answers for one simple command whose words are already
known literally. Commands in `ALWAYS_READ_ONLY` have no option that writes a
file or runs another program, so any arguments are fine. The commands in
`_CHECKERS` are read-only only with some options (``sed`` without ``-i``,
``sort`` without ``-o``, ``find`` without ``-delete``/``-exec``, ``git`` with a
reading subcommand ...); their arguments must be literal (the classifier checks
that no glob or expansion could smuggle a flag in) and pass the checker.
Everything else, and every name with a ``/``, is not read-only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ._bash_git import git_read_only

__all__ = ["ALWAYS_READ_ONLY", "FLAG_SENSITIVE", "argv_read_only"]

ALWAYS_READ_ONLY = frozenset(
    {
        "[", "arch", "b2sum", "base64", "basename", "cat", "cd", "cksum", "cmp",
        "column", "comm", "cut", "df", "diff", "dirname", "du", "echo", "egrep",
        "expand", "false", "fgrep", "fold", "grep", "groups", "head", "hexdump",
        "id", "jq", "ls", "md5sum", "nl", "nproc", "od", "paste", "printenv",
        "printf", "ps", "pwd", "readlink", "realpath", "rev", "seq", "sha1sum",
        "sha256sum", "sha512sum", "sleep", "stat", "strings", "tac", "tail",
        "test", "tr", "true", "type", "uname", "unexpand", "wc", "which", "whoami",
    }
)  # fmt: skip
"""Commands with no writing or program-running option: any arguments are fine."""


def _short_flags(arg: str) -> str:
    """The letters of a short-option cluster (``-ni`` → ``ni``), else ``""``."""
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""


def _positionals(args: list[str], takes_value: frozenset[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            out.append(arg)
    return out


# -- sed -----------------------------------------------------------------------

_SED_ADDRESS = re.compile(
    r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\]|\\.)*/[IM]*)"
    r"(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|[+~]\d+))?\s*!?\s*"
)
_SED_SIMPLE = set("pdqQ=lnNPDhHgGxz}")
_SED_TO_EOL = set("aicrRbtT:")  # text, a file to read, or a label, up to the line end
_SED_S_FLAGS = re.compile(r"[gpiImM0-9]*")


def _sed_delimited(script: str, i: int, parts: int) -> int:
    """Index after `parts` delimited fields starting at the delimiter script[i]."""
    delim = script[i]
    if delim in "\\\n":
        return -1
    i += 1
    for _ in range(parts):
        while i < len(script) and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return -1
        i += 1
    return i


def _sed_command_end(script: str, i: int) -> int:
    """Index just after the sed command at script[i], or -1 if it may write."""
    cmd = script[i]
    if cmd in "sy":
        i = _sed_delimited(script, i + 1, 2)
        if i < 0:
            return -1
        flags = _SED_S_FLAGS.match(script, i)
        return flags.end() if flags else i
    if cmd in _SED_TO_EOL:
        end = script.find("\n", i)
        return len(script) if end < 0 else end
    if cmd in _SED_SIMPLE:
        i += 1
        while i < len(script) and script[i].isdigit():
            i += 1
        return i
    return -1  # w, W, e and anything unknown


def _sed_script_read_only(script: str) -> bool:
    """True if a sed script only prints and edits the stream (no w, W, e)."""
    i = 0
    while i < len(script):
        if script[i] in " \t\n;":
            i += 1
            continue
        match = _SED_ADDRESS.match(script, i)
        i = match.end() if match and match.end() > i else i
        if i >= len(script):
            return False
        if script[i] == "{":  # a block: its commands follow directly
            i += 1
            continue
        i = _sed_command_end(script, i)
        if i < 0 or (i < len(script) and script[i] not in " \t\n;}"):
            return False
    return True


_SED_LONG_FLAGS = frozenset(
    {"--quiet", "--silent", "--regexp-extended", "--posix", "--separate",
     "--unbuffered", "--null-data", "--debug", "--sandbox", "--"}
)  # fmt: skip


def _sed_options(args: list[str]) -> tuple[list[str], list[str]] | None:
    """(scripts given by -e, positional words), or None for a writing option."""
    scripts: list[str] = []
    positional: list[str] = []
    it = iter(args)
    for arg in it:
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("--"):
            if arg not in _SED_LONG_FLAGS:
                return None  # --in-place, --file, unknown
        elif not _short_flags(arg):
            positional.append(arg)
        else:
            flags = _short_flags(arg)
            head, _, rest = flags.partition("e")
            if any(letter not in "nErsuz" for letter in head):
                return None  # -i (in place), -f (unreadable script), unknown
            if "e" in flags:
                scripts.append(rest if rest else next(it, ""))
    return scripts, positional


def _sed(args: list[str]) -> bool:
    parsed = _sed_options(args)
    if parsed is None:
        return False
    scripts, positional = parsed
    if not scripts and positional:
        scripts.append(positional[0])
    return bool(scripts) and all(_sed_script_read_only(s) for s in scripts)


# -- other option-sensitive commands --------------------------------------------


def _sort(args: list[str]) -> bool:
    for arg in args:
        if arg.startswith(("--output", "--compress-program")) or "o" in _short_flags(
            arg
        ):
            return False
    return True


_FIND_ACTIONS = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0",
     "-fprintf", "-fls"}
)  # fmt: skip


def _find(args: list[str]) -> bool:
    return not any(arg in _FIND_ACTIONS for arg in args)


_AWK_DANGER = ("system", "|", ">", "getline")


def _awk(args: list[str]) -> bool:
    it = iter(args)
    program: str | None = None
    for arg in it:
        if program is not None:
            continue  # input files
        if arg in ("-F", "-v"):
            next(it, None)
        elif arg.startswith(("-F", "-v")) and len(arg) > 2:
            continue
        elif arg == "--":
            program = next(it, None)
        elif arg.startswith("-"):
            return False  # -f, -i, -o, -p, -d, -l ... read or write files
        else:
            program = arg
    return program is not None and not any(d in program for d in _AWK_DANGER)


def _rg(args: list[str]) -> bool:
    return not any(arg == "--pre" or arg.startswith("--pre=") for arg in args)


def _tree(args: list[str]) -> bool:
    return not any(arg.startswith("-o") for arg in args)


def _file(args: list[str]) -> bool:
    return not any(arg == "--compile" or "C" in _short_flags(arg) for arg in args)


def _date(args: list[str]) -> bool:
    it = iter(args)
    for arg in it:
        if arg in ("-d", "-r", "-f", "--date", "--reference", "--file"):
            next(it, None)
        elif arg.startswith("+") or arg.startswith(("--date=", "--reference=")):
            continue
        elif arg.startswith("--set") or "s" in _short_flags(arg):
            return False
        elif not arg.startswith("-"):
            return False  # `date MMDDhhmm` sets the clock
    return True


_HOSTNAME_READ = frozenset(
    {"-f", "-s", "-i", "-I", "-d", "-a", "-A", "--fqdn", "--short", "--ip-address",
     "--all-ip-addresses", "--domain", "--alias", "--all-fqdns"}
)  # fmt: skip


def _hostname(args: list[str]) -> bool:
    return all(arg in _HOSTNAME_READ for arg in args)


def _uniq(args: list[str]) -> bool:
    return len(_positionals(args, frozenset({"-f", "-s", "-w"}))) <= 1  # 2nd = output


def _xxd(args: list[str]) -> bool:
    values = frozenset({"-c", "-g", "-l", "-s", "-o", "-n", "-cols", "-len", "-seek"})
    return len(_positionals(args, values)) <= 1  # a 2nd positional is the output file


def _env(args: list[str]) -> bool:
    return all(arg in ("-0", "--null") for arg in args)  # otherwise it runs a command


_XARGS_VALUE = frozenset({"-n", "-I", "-P", "-d", "-L", "-s", "-E", "-a"})
_XARGS_FLAG = frozenset(
    {"-0", "-r", "-t", "-x", "--null", "--no-run-if-empty", "--verbose"}
)


_XARGS_LONG_VALUE = frozenset(
    {"--max-args", "--max-procs", "--delimiter", "--max-lines", "--arg-file"}
)


def _xargs_flag(arg: str) -> bool:
    """True for an xargs option that carries its value (or needs none)."""
    return (
        arg in _XARGS_FLAG
        or (arg[:2] in _XARGS_VALUE and len(arg) > 2)
        or arg.split("=", 1)[0] in _XARGS_LONG_VALUE
    )


def _xargs(args: list[str]) -> bool:
    """Check ``xargs``: it appends unknown words, so only flag-proof commands pass."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _XARGS_VALUE:
            i += 2
        elif _xargs_flag(arg):
            i += 1
        elif arg.startswith("-"):
            return False  # -p prompts; unknown options
        else:
            break
    rest = args[i:]
    return not rest or (rest[0] in ALWAYS_READ_ONLY and argv_read_only(rest))


def _timeout(args: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-s", "-k", "--signal", "--kill-after") else 1
    return i + 1 < len(args) and argv_read_only(args[i + 1 :])


def _command(args: list[str]) -> bool:
    if args and args[0] in ("-v", "-V"):
        return True
    rest = args[1:] if args and args[0] == "-p" else args
    return bool(rest) and argv_read_only(rest)


_CHECKERS: dict[str, Callable[[list[str]], bool]] = {
    "awk": _awk,
    "command": _command,
    "date": _date,
    "env": _env,
    "file": _file,
    "find": _find,
    "git": git_read_only,
    "hostname": _hostname,
    "rg": _rg,
    "sed": _sed,
    "sort": _sort,
    "timeout": _timeout,
    "tree": _tree,
    "uniq": _uniq,
    "xargs": _xargs,
    "xxd": _xxd,
}


FLAG_SENSITIVE = frozenset(_CHECKERS)
"""Commands read-only only with some options; their words must be literal."""


def argv_read_only(argv: list[str]) -> bool:
    """True if running `argv` (literal words) can write no file and run nothing else."""
    if not argv or "/" in argv[0]:
        return False
    name = argv[0]
    if name in ALWAYS_READ_ONLY:
        return True
    checker = _CHECKERS.get(name)
    return checker is not None and checker(argv[1:])
