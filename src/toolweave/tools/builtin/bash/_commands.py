"""The read-only allow-list of the bash classifier: which argv can write nothing.

`argv_read_only(argv)` answers for one simple command. A command is read-only
only if its name is listed in `COMMANDS` *and* every option it is given is
listed in that command's `OptionSpec` (exact names: abbreviations, unknown
options and option-running-programs are never listed). A few commands need a
further look at their operands (the sed script, the awk program, find's
expression, date's operand). Words that depend on an expansion (None) are
accepted only where no option could hurt (`OptionSpec.any_word`).

`CONSERVATIVE` is the core used when no OS sandbox backs the classifier: plain
readers and filters whose whole option set is harmless.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._gh import gh_read_only
from ._git import git_read_only
from ._options import OptionSpec, first_operand, option_width, options_ok, spec
from ._sed import sed_script_read_only

__all__ = ["COMMANDS", "CONSERVATIVE", "argv_read_only", "unwrapped_start"]

Argv = Sequence[str | None]


def _awk_program(ops: list[str]) -> bool:
    danger = ("system", "|", ">", "getline", "@", "ENVIRON", "PROCINFO")
    return bool(ops) and not any(d in ops[0] for d in danger)


def _date_operands(ops: list[str]) -> bool:
    return all(op.startswith("+") for op in ops)  # `date MMDDhhmm` sets the clock


_SORT = spec(
    "bdfgiMhnRrVcCsuz", "kt",
    "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
    "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort "
    "reverse version-sort check stable unique zero-terminated debug",
    "key field-separator sort",
)  # fmt: skip
_GREP = spec(
    "EFGPiywxcLlmoqsbHhnTZzrRIUavVa", "efmABCdD",
    "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case "
    "word-regexp line-regexp null-data no-messages invert-match version help count "
    "files-with-matches files-without-match only-matching quiet silent byte-offset "
    "with-filename no-filename line-number initial-tab null text recursive "
    "dereference-recursive line-buffered",
    "regexp file max-count label after-context before-context context "
    "binary-files devices directories exclude exclude-from exclude-dir include group-separator"
    " color? colour?",
    any_word=True,
)  # fmt: skip

COMMANDS: dict[str, OptionSpec] = {
    "cat": spec("AbeEnstTuv", "", "show-all number-nonblank show-ends number squeeze-blank "
                "show-tabs show-nonprinting", any_word=True),
    "head": spec("qvz", "cn", "quiet silent verbose zero-terminated", "bytes lines",
                 digits=True, any_word=True),
    "tail": spec("fFqvzr", "cnsm", "follow retry quiet silent verbose zero-terminated",
                 "bytes lines sleep-interval pid max-unchanged-stats", digits=True,
                 any_word=True),
    "wc": spec("clmwL", "", "bytes chars lines words max-line-length", "files0-from total",
               any_word=True),
    "ls": spec("aAbBcCdfFgGhHiklLmnNopqQrRsStuUvwxXZ1", "IwT",
               "all almost-all author escape directory dereference dereference-command-line "
               "classify file-type full-time group-directories-first no-group "
               "human-readable si inode kibibytes literal numeric-uid-gid hide-control-chars "
               "show-control-chars quote-name recursive reverse size context zero",
               "block-size hide ignore format indicator-style quoting-style sort time "
               "time-style tabsize width color? colour? hyperlink?", any_word=True),
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP,
    "echo": spec(any_word=True),
    "pwd": spec("LP"),
    "cd": spec("LPe@", max_positionals=1, any_word=True),
    "true": spec(any_word=True), "false": spec(any_word=True), ":": spec(any_word=True),
    "basename": spec("asz", "s", "multiple zero", "suffix", any_word=True),
    "dirname": spec("z", "", "zero", any_word=True),
    "realpath": spec("eEmLPqsz", "", "canonicalize-existing canonicalize-missing logical "
                     "physical quiet strip no-symlinks zero", "relative-to relative-base",
                     any_word=True),
    "readlink": spec("efmnqsvz", "", "canonicalize canonicalize-existing canonicalize-missing "
                     "no-newline quiet silent verbose zero", any_word=True),
    "stat": spec("LfLt", "c", "dereference file-system terse", "format printf",
                 any_word=True),
    "du": spec("0abcDhHklLmPsSx", "dBt", "null all apparent-size bytes total "
               "dereference-args human-readable si dereference no-dereference summarize "
               "separate-dirs one-file-system count-links inodes", "max-depth block-size "
               "threshold exclude time-style time?", any_word=True),
    "df": spec("ahHiklPTx", "Bt", "all human-readable si inodes local portability "
               "print-type total", "block-size type exclude-type output", any_word=True),
    "cut": spec("snz", "bcfd", "complement only-delimited zero-terminated",
                "bytes characters fields delimiter output-delimiter", any_word=True),
    "tr": spec("cCdst", "", "complement delete squeeze-repeats truncate-set1",
               any_word=True),
    "sort": _SORT,
    "uniq": spec("cdDiuz", "fsw", "count repeated ignore-case unique zero-terminated",
                 "skip-fields skip-chars check-chars all-repeated? group?",
                 max_positionals=1),
    "diff": spec("abBdeEfilnNpqrstTuwy", "CUDFISWxX",
                 "text ignore-blank-lines minimal ignore-tab-expansion ed "
                 "ignore-case ignore-file-name-case no-ignore-file-name-case "
                 "new-file normal brief recursive report-identical-files side-by-side "
                 "expand-tabs initial-tab ignore-all-space ignore-space-change "
                 "ignore-trailing-space strip-trailing-cr suppress-common-lines "
                 "left-column show-c-function speed-large-files no-dereference "
                 "unidirectional-new-file suppress-blank-empty",
                 "exclude exclude-from ignore-matching-lines label show-function-line "
                 "width from-file to-file horizontal-lines tabsize unified? context? color?"),
    "cmp": spec("blsz", "in", "print-bytes verbose quiet silent", "ignore-initial bytes",
                max_positionals=4),
    "comm": spec("123z", "", "check-order nocheck-order total zero-terminated",
                 "output-delimiter", any_word=True),
    "nl": spec("p", "bdfhilnsvw", "no-renumber", "body-numbering section-delimiter "
               "footer-numbering header-numbering line-increment join-blank-lines "
               "number-format number-separator starting-line-number number-width",
               max_positionals=1),
    "tac": spec("br", "s", "before regex", "separator", any_word=True),
    "rev": spec(any_word=True),
    "od": spec("bcdfilosvx", "AjNtSw", "output-duplicates traditional",
               "address-radix skip-bytes read-bytes format strings width?",
               any_word=True),
    "hexdump": spec("bcCdovx", "enfsL", any_word=True),
    "strings": spec("afw", "nteTs", "all print-file-name include-all-whitespace",
                    "bytes radix encoding target output-separator", any_word=True),
    "base64": spec("di", "w", "decode ignore-garbage", "wrap", max_positionals=1),
    "md5sum": spec("bctwz", "", "binary check tag text ignore-missing quiet status strict "
                   "warn zero", any_word=True),
    "column": spec("tnxejd", "csoNRHW", "table", "separator output-separator",
                   max_positionals=None, any_word=True),
    "fold": spec("bs", "w", "bytes spaces", "width", any_word=True, digits=True),
    "expand": spec("i", "t", "initial", "tabs", any_word=True, digits=True),
    "unexpand": spec("a", "t", "all first-only", "tabs", any_word=True),
    "paste": spec("sz", "d", "serial zero-terminated", "delimiters", any_word=True),
    "seq": spec("w", "fs", "equal-width", "format separator", any_word=True),
    "sleep": spec(max_positionals=4, any_word=True),
    "nproc": spec("", "", "all", "ignore"),
    "printenv": spec("0", "", "null", any_word=True),
    "id": spec("agGnruzZ", "", "context group groups name real user zero", any_word=True),
    "whoami": spec(), "groups": spec(any_word=True), "arch": spec(), "tty": spec(),
    "uname": spec("asnrvmpio", "", "all kernel-name nodename kernel-release "
                  "kernel-version machine processor hardware-platform operating-system"),
    "which": spec("a", any_word=True),
    "type": spec("afptP", any_word=True),
    "file": spec("bcEhiklLNnrs0", "eFfmP", "brief checking-printout dereference "
                 "no-dereference mime mime-type mime-encoding keep-going list "
                 "no-pad no-buffer raw special-files "
                 "print0 extension apple", "exclude "
                 "exclude-quiet separator magic-file parameter files-from"),
    "jq": spec("nrjacsSCMeR", "f", "null-input raw-input slurp compact-output "
               "raw-output join-output ascii-output sort-keys color-output "
               "monochrome-output tab exit-status seq stream raw-output0",
               "indent arg argjson slurpfile rawfile args jsonargs from-file"),
    "date": spec("uIR", "dfr", "utc universal rfc-email debug",
                 "date file reference iso-8601? rfc-3339?", check=_date_operands),
    "hostname": spec("fsiIdaA", "", "fqdn short ip-address all-ip-addresses domain alias "
                     "all-fqdns long", max_positionals=0),
    "test": spec(any_word=False),
    "[": spec(any_word=False),
    "printf": spec(any_word=False),
    "sed": spec(),
    "awk": spec("", "Fv", "", "field-separator assign", check=_awk_program),
    "rg": spec("aiIlLnNopqsSuvwxHhFUcCAB0",
               "efgmtTABCEjMrd",
               "count count-matches files files-with-matches files-without-match "
               "fixed-strings follow hidden ignore-case invert-match json line-number "
               "no-line-number no-filename with-filename no-heading heading no-ignore "
               "no-ignore-vcs no-ignore-dot no-ignore-parent no-ignore-global "
               "no-messages null only-matching quiet smart-case case-sensitive "
               "word-regexp line-regexp vimgrep trim multiline multiline-dotall "
               "pcre2 text unrestricted sort-files stats type-list no-config "
               "column byte-offset passthru crlf binary follow debug",
               "regexp glob iglob type type-not max-count max-depth after-context "
               "before-context context encoding sort sortr max-columns replace "
               "threads max-filesize context-separator field-match-separator "
               "path-separator colors type-add engine color?"),
    "tree": spec("adflifFgpusDhqvrtcUNQ", "LPIH", "noreport dirsfirst prune du si "
                 "gitignore", "filelimit charset sort"),  # -o writes: words must be literal
}  # fmt: skip
"""Every command known to be read-only with the options listed."""

for _name in ("sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum",
              "cksum"):  # fmt: skip
    COMMANDS[_name] = COMMANDS["md5sum"]

CONSERVATIVE = frozenset(
    {"cat", "head", "tail", "wc", "ls", "grep", "egrep", "fgrep", "echo", "pwd", "true",
     "false", ":", "basename", "dirname", "realpath", "cut", "tr", "comm", "tac", "rev",
     "nl", "od", "paste", "seq", "printenv", "id", "whoami", "uname", "stat", "du",
     "df", "md5sum", "sha1sum", "sha256sum", "sha512sum", "test", "["}
)  # fmt: skip
"""Commands still read-only without an OS sandbox: plain readers and filters."""

_TEST_FORBIDDEN = frozenset({"-v", "-R"})  # evaluate an array subscript


def _test(args: Argv) -> bool:
    """Check `test` / `[`: only literal words, never the subscript-evaluating -v / -R."""
    return all(a is not None and a not in _TEST_FORBIDDEN for a in args)


def _printf(args: Argv) -> bool:
    """printf: never ``-v`` (assigns a variable), and a known first word."""
    return bool(args) and args[0] is not None and not args[0].startswith("-v")


_FIND_ZERO = frozenset(
    {"-print", "-print0", "-prune", "-quit", "-true", "-false", "-empty", "-readable",
     "-writable", "-executable", "-depth", "-follow", "-xdev", "-mount", "-noleaf",
     "-daystart", "-not", "-a", "-o", "-and", "-or", "!", "(", ")", ",", "-nouser",
     "-nogroup", "-ignore_readdir_race", "-noignore_readdir_race"}
)  # fmt: skip
_FIND_ONE = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
     "-iregex", "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin",
     "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-user", "-group", "-perm",
     "-maxdepth", "-mindepth", "-links", "-inum", "-samefile", "-uid", "-gid", "-used",
     "-fstype", "-lname", "-ilname", "-regextype", "-printf"}
)  # fmt: skip


def _find(args: Argv) -> bool:
    """find: leading -H/-L/-P, start paths, then only known tests and -print*."""
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    while (
        i < len(args)
        and args[i] is not None
        and not str(args[i]).startswith(("-", "(", "!"))
    ):
        i += 1  # start points
    while i < len(args):
        arg = args[i]
        if arg in _FIND_ZERO:
            i += 1
        elif arg in _FIND_ONE and i + 1 < len(args) and args[i + 1] is not None:
            i += 2
        else:
            return False  # -exec, -delete, -fprint, -ok, unknown, or an expansion
    return True


_SED = spec("nErsuz", "l", "quiet silent regexp-extended posix separate unbuffered "
            "null-data debug sandbox", "line-length")  # fmt: skip


def _sed_cluster(arg: str, nxt: str | None, scripts: list[str]) -> int:
    """Words used by a short cluster (1 or 2), 0 if not allowed; -e adds a script."""
    head, e, glued = arg[1:].partition("e")
    if not e:
        return option_width(arg, [nxt], _SED)
    if head and option_width("-" + head, [], _SED) != 1:
        return 0
    if glued:
        scripts.append(glued)
        return 1
    if nxt is None:
        return 0
    scripts.append(nxt)
    return 2


def _sed(args: Argv) -> bool:
    """sed: scripts from -e / --expression (or the first operand) print only."""
    scripts: list[str] = []
    files: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        used = 1
        if arg is None:
            return False
        if arg.startswith("--expression="):
            scripts.append(arg.partition("=")[2])
        elif arg.startswith("--"):
            used = option_width(arg, [nxt], _SED)
        elif arg.startswith("-") and arg != "-":
            used = _sed_cluster(arg, nxt, scripts)
        else:
            files.append(arg)
        if used == 0:
            return False
        i += used
    if not scripts and files:
        scripts.append(files[0])
    return bool(scripts) and all(sed_script_read_only(x) for x in scripts)


def _echo(args: Argv) -> bool:
    return True  # echo prints its words, whatever they are


def _xxd(args: Argv) -> bool:
    s = spec("abeEiprRuC", "cglsnoS", "", "", max_positionals=1)
    return options_ok(args, s) and not any(a in ("-r", "-R") for a in args if a)


_HELP_SAFE = frozenset(
    {"git", "node", "python", "python3", "pip", "pip3", "make", "docker", "tar", "cp",
     "mv", "rm", "mkdir", "ln", "touch", "tee", "curl", "wget", "find", "xargs", "env",
     "timeout", "nice", "jq", "sed", "awk"}
)  # fmt: skip
"""Programs whose ``--help`` (its only word) prints a fixed text and exits,
checked under real bash (tests/tools/builtin/test_builtin_bash_read_only_proof.py).
Not here: ``npm`` (writes ``~/.npm/_logs``), ``cargo`` and ``rustc`` (the
rustup proxies write ``~/.rustup/settings.toml``: the proof caught it),
``pytest`` (imports conftest.py), any script."""


def _help_only(argv: Argv) -> bool:
    """``CMD --help`` or ``git SUB --help`` for a listed CMD (or any listed reader)."""
    if len(argv) == 2 and argv[1] == "--help":
        return argv[0] in _HELP_SAFE or argv[0] in COMMANDS
    return (
        len(argv) == 3
        and argv[0] == "git"
        and argv[2] == "--help"
        and argv[1] is not None
        and argv[1].isalpha()
    )


_CHECKERS: dict[str, Callable[[Argv], bool]] = {
    "test": _test,
    "[": _test,
    "sed": _sed,
    "echo": _echo,
    "ps": _echo,  # ps only reports: no option writes a file or runs a program
    "true": _echo,
    "false": _echo,
    ":": _echo,
    "printf": _printf,
    "find": _find,
    "git": git_read_only,
    "xxd": _xxd,
    "gh": gh_read_only,
}

_WRAPPERS = frozenset({"timeout", "nice", "command", "xargs", "env", "time"})
_TIMEOUT = spec("fv", "sk", "foreground preserve-status verbose", "signal kill-after")
_NICE = spec("", "n", "", "adjustment")
_XARGS = spec("0rtx", "nIPdLsEa", "null no-run-if-empty verbose exit",
              "max-args max-procs delimiter max-lines arg-file max-chars eof")  # fmt: skip


def _inner(args: Argv, options: OptionSpec, skip: int = 0) -> Argv | None:
    """The command a wrapper runs (after its options and `skip` operands), or None."""
    start = first_operand(args, options)
    if start is None or start + skip >= len(args):
        return None
    return args[start + skip :]


def unwrapped_start(argv: Argv) -> int:
    """Index in `argv` of the command that the read-only wrappers around it run.

    ``timeout 5 nice git log`` gives 3: the bash tool must give *that* ``git``
    its ``--no-textconv``, not only a ``git`` that is the command itself.
    """
    start = 0
    for _ in range(MAX_WRAPPERS):
        name, args = argv[start] if start < len(argv) else None, argv[start + 1 :]
        inner: Argv | None = None
        if name == "timeout":
            inner = _inner(args, _TIMEOUT, skip=1)
        elif name == "nice":
            inner = _inner(args, _NICE)
        elif name in ("command", "time"):
            inner = args or None
        elif name == "env" and args and args[0] is not None:
            inner = None if args[0].startswith("-") or "=" in args[0] else args
        if inner is None:
            return start
        start = len(argv) - len(inner)
    return start


MAX_WRAPPERS = 8
"""Wrappers inside wrappers looked through at most (``nice nice … ls``); deeper
is not read-only (and never a RecursionError on the event loop)."""


def _wrapped(name: str, args: Argv, conservative: bool, depth: int) -> bool:
    """Read-only verdict for a wrapper command: its own options and what it runs."""
    if name == "env":
        # env alone prints the environment; ``env CMD`` runs CMD unchanged. An
        # assignment (``env GIT_EXTERNAL_DIFF=x git diff``) or an option
        # (``-i``, ``-u``, ``-S``, ``-C``) changes what CMD does: not read-only.
        if all(a in ("-0", "--null") for a in args):
            return True
        if args[0] is None or args[0].startswith("-") or "=" in args[0]:
            return False
        return argv_read_only(args, conservative, depth + 1)
    if name == "command" and args and args[0] in ("-v", "-V"):
        return all(a is not None for a in args)
    inner: Argv | None = args or None
    if name == "timeout":
        inner = _inner(args, _TIMEOUT, skip=1)
    elif name == "nice":
        inner = _inner(args, _NICE)
    elif name == "xargs":
        inner = _inner(args, _XARGS)
        if inner is None:
            return first_operand(args, _XARGS) == len(args)  # xargs alone runs echo
        known = COMMANDS.get(str(inner[0]))
        if known is None or not known.any_word:
            return False  # xargs appends words it reads: only any-word commands
    return inner is not None and argv_read_only(inner, conservative, depth + 1)


def argv_read_only(argv: Argv, conservative: bool = False, depth: int = 0) -> bool:
    """True if running `argv` can write no file and run nothing unlisted.

    `conservative` limits the answer to `CONSERVATIVE` commands (no OS sandbox).
    """
    if not argv or argv[0] is None or "/" in argv[0]:
        return False
    name, args = argv[0], argv[1:]
    if not conservative and _help_only(argv):
        return True
    if name in _WRAPPERS:
        if depth >= MAX_WRAPPERS:
            return False
        return not conservative and _wrapped(name, args, conservative, depth)
    if conservative and name not in CONSERVATIVE:
        return False
    checker = _CHECKERS.get(name)
    if checker is not None:
        return checker(args)
    known = COMMANDS.get(name)
    return known is not None and options_ok(args, known)
