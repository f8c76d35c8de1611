"""Which ``git`` invocations only read the repository, and how to run them safely.

An allow-list twice over: the subcommand must be a known reader, and every
option it gets must be a known read-only option of that subcommand (exact
names: git, like getopt_long, accepts unique prefixes — ``--unset-up`` is
``--unset-upstream`` — so a prefix is never accepted). Global options that run
or reconfigure things (``-c``, ``--exec-path``, ``--config-env``, ``-p``) are
refused, and so are options that write or run programs (``--output``,
``--ext-diff``, ``--textconv``, ``-O``/``--open-files-in-pager``, ``--upload-pack``).
Network readers (``ls-remote``, ``fetch``) are not readers: transports run
configured programs.

Repository configuration can still run programs during a read (the agent can
edit ``.git/config``): `git_read_env` gives the environment a parallel git read
runs with (fsmonitor, pager, external diff, hooks and system config off; no
optional locks, so ``status`` never rewrites the index), and `NO_TEXTCONV`
names the subcommands the bash tool gives ``--no-textconv --no-ext-diff``,
since textconv drivers cannot be switched off from the environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._options import OptionSpec, first_operand, optional_values, options_ok, spec

__all__ = [
    "GIT_READ_UNSET",
    "NO_TEXTCONV",
    "git_read_env",
    "git_read_only",
    "git_subcommand",
]

Argv = Sequence[str | None]

_GLOBAL = spec(
    "P", "C",
    "no-pager no-optional-locks literal-pathspecs glob-pathspecs noglob-pathspecs "
    "icase-pathspecs no-replace-objects bare",
    "git-dir work-tree namespace",
)  # fmt: skip

_OVERRIDES = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("diff.external", ""),
    ("core.hooksPath", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("core.sshCommand", "false"),
    ("protocol.allow", "never"),
    ("pager.log", "false"),
    ("pager.diff", "false"),
    ("pager.show", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
)

_READ_VARS = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}


def git_read_env(env: Mapping[str, str]) -> dict[str, str]:
    """Variables to add to `env` for a parallel git read.

    The configuration overrides are appended after any ``GIT_CONFIG_COUNT``
    entries `env` already has (the last value of a key wins, so ours do), and
    the variables that select programs are set or, see `GIT_READ_UNSET`, removed
    by the caller.
    """
    try:
        first = max(0, int(env.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        first = 0
    out = dict(_READ_VARS)
    for i, (key, value) in enumerate(_OVERRIDES, start=first):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    out["GIT_CONFIG_COUNT"] = str(first + len(_OVERRIDES))
    return out


GIT_READ_UNSET = ("GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_SSH", "GIT_SSH_COMMAND")
"""Variables removed from a parallel git read's environment."""

NO_TEXTCONV: dict[str, str] = {
    "diff": "--no-textconv --no-ext-diff",
    "log": "--no-textconv --no-ext-diff",
    "show": "--no-textconv --no-ext-diff",
    "whatchanged": "--no-textconv --no-ext-diff",
    "blame": "--no-textconv",
    "annotate": "--no-textconv",
}
"""Subcommands that run textconv / external diff by default, and the flags that stop it."""

_PRETTY = (
    "oneline stat shortstat numstat name-only name-status raw patch-with-stat "
    "patch-with-raw summary no-patch full-index binary cached staged merge-base "
    "ignore-space-change ignore-all-space ignore-blank-lines ignore-cr-at-eol "
    "ignore-space-at-eol minimal patience histogram no-renames no-color "
    "find-copies-harder text check exit-code quiet no-prefix no-ext-diff no-textconv "
    "compact-summary cumulative dirstat-by-file irreversible-delete "
    "ignore-submodules function-context no-index"
)
_PRETTY_VALUE = (
    "stat-width diff-filter src-prefix dst-prefix line-prefix diff-algorithm "
    "word-diff-regex relative output-indicator-new output-indicator-old anchored "
    "color-moved-ws skip-to rotate-to inter-hunk-context"
)
_PRETTY_OPT = (
    "unified word-diff color color-moved color-words find-renames find-copies "
    "break-rewrites abbrev dirstat submodule ws-error-highlight relative"
)
_LOG = (
    "all branches tags remotes graph decorate no-decorate first-parent merges "
    "no-merges reverse topo-order date-order author-date-order left-right "
    "cherry-pick cherry-mark cherry boundary simplify-by-decoration follow "
    "full-history dense sparse no-walk walk-reflogs reflog "
    "abbrev-commit no-abbrev-commit parents children show-notes no-notes "
    "source use-mailmap mailmap log-size ignore-case regexp-ignore-case "
    "basic-regexp extended-regexp fixed-strings perl-regexp all-match invert-grep "
    "remove-empty full-diff show-pulls count"
)
_LOG_VALUE = (
    "max-count skip since after until before author committer grep since-as-filter "
    "grep-reflog min-parents max-parents exclude ancestry-path"
)
_LOG_OPT = "pretty format date decorate-refs decorate-refs-exclude notes no-walk"

_DIFF_SHORT = "pRuszwbBMCDWaR"
_LOG_SHORT = _DIFF_SHORT + "gcmtr"


def _family(
    short: str, long: str, value: str, optional: str, short_value: str
) -> OptionSpec:
    return spec(
        short, short_value, long, f"{value} {optional_values(optional)}", digits=True
    )


_DIFF = _family(_DIFF_SHORT, _PRETTY, _PRETTY_VALUE, _PRETTY_OPT, "UlSG")
_LOGS = _family(
    _LOG_SHORT + "iEF", f"{_PRETTY} {_LOG}", f"{_PRETTY_VALUE} {_LOG_VALUE}",
    f"{_PRETTY_OPT} {_LOG_OPT}", "nUSGL",
)  # fmt: skip

_SUBCOMMANDS: dict[str, OptionSpec] = {
    "diff": _DIFF,
    "diff-files": _DIFF,
    "diff-index": _DIFF,
    "diff-tree": _family(_DIFF_SHORT + "rtcm", f"{_PRETTY} root stdin no-commit-id",
                         _PRETTY_VALUE, _PRETTY_OPT, "U"),
    "log": _LOGS,
    "show": _LOGS,
    "whatchanged": _LOGS,
    "shortlog": spec("nsec", "w", "numbered summary email committer", "format group"),
    "status": spec("sbvz", "u", "short branch porcelain long verbose show-stash "
                   "ahead-behind no-ahead-behind ignored renames no-renames null "
                   "no-column", "find-renames untracked-files? ignore-submodules? "
                   "porcelain? column? ignored?"),
    "rev-parse": spec("q", "", "show-toplevel show-prefix show-cdup git-dir "
                      "git-common-dir absolute-git-dir is-inside-work-tree "
                      "is-inside-git-dir is-bare-repository is-shallow-repository "
                      "verify quiet symbolic symbolic-full-name all branches tags "
                      "remotes local-env-vars show-superproject-working-tree "
                      "show-ref-format sq-quote", "git-path short? abbrev-ref?"),
    "rev-list": _LOGS,
    "ls-files": spec("cdmoiskuvtfz", "x", "cached deleted modified others ignored stage "
                     "killed unmerged directory no-empty-directory exclude-standard "
                     "full-name error-unmatch eol debug recurse-submodules "
                     "deduplicate sparse", "exclude exclude-from format abbrev?"),
    "ls-tree": spec("rdtlz", "", "long name-only name-status object-only full-name "
                    "full-tree", "format abbrev?"),
    "cat-file": spec("tspe", "", "", "", max_positionals=2),
    # not --dirty / --broken: they refresh the index
    "describe": spec("", "", "all tags contains long always first-parent exact-match "
                     "debug", "match exclude candidates abbrev?"),
    "merge-base": spec("a", "", "all octopus independent is-ancestor fork-point"),
    "name-rev": spec("", "", "tags name-only no-undefined always all", "refs exclude"),
    "show-ref": spec("sdq", "", "head heads tags verify dereference hash quiet "
                     "exists branches", "abbrev?"),
    "for-each-ref": spec("spq", "", "shell perl python tcl omit-empty ignore-case",
                         "count sort format points-at merged no-merged contains "
                         "no-contains exclude color?"),
    "count-objects": spec("vH", "", "verbose human-readable"),
    "check-ignore": spec("qvnz", "", "quiet verbose non-matching no-index"),
    "grep": spec("nivwclLhHEFGPIoqzr", "efABCm", "line-number ignore-case invert-match "
                 "word-regexp count files-with-matches name-only files-without-match "
                 "full-name extended-regexp fixed-strings basic-regexp perl-regexp "
                 "cached untracked no-index no-exclude-standard exclude-standard "
                 "only-matching quiet null break heading show-function function-context "
                 "all-match recurse-submodules column no-color text", "max-depth "
                 "after-context before-context context max-count threads color?"),
    "blame": spec("lbtsefnpcw", "LMC", "root show-stats porcelain line-porcelain "
                  "incremental show-name show-number show-email minimal no-textconv "
                  "progress", "date contents since ignore-rev reverse abbrev?"),
    "var": spec("l"),
    "version": spec("", "", "build-options"),
}  # fmt: skip
_SUBCOMMANDS["annotate"] = _SUBCOMMANDS["blame"]

_BRANCH = spec("arvl", "", "all remotes verbose list show-current no-color "
               "ignore-case omit-empty", "sort format points-at contains no-contains "
               "merged no-merged color? abbrev? column?")  # fmt: skip
_TAG = spec("l", "n", "list ignore-case omit-empty", "sort format points-at contains "
            "no-contains merged no-merged color? column?")  # fmt: skip
_CONFIG = spec("lz", "", "list get get-all get-regexp get-urlmatch get-color "
               "get-colorbool global local system worktree show-origin show-scope "
               "null name-only includes no-includes", "file blob type default")  # fmt: skip


_LIST_FILTERS = (
    "--points-at",
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
)
"""Options after which git branch/tag list (git's documentation: each implies
``--list``); their value is a commit, and any further operand a pattern."""


def _listing(args: Argv, options: OptionSpec) -> bool:
    """branch/tag: read-only when listing: no name, an explicit -l/--list, or a filter."""
    names = [a for a in args if a is not None and not a.startswith("-")]
    listing = (
        "-l" in args
        or "--list" in args
        or "--show-current" in args
        or any(a is not None and a.split("=", 1)[0] in _LIST_FILTERS for a in args)
    )
    return options_ok(args, options) and (not names or listing)


def _conditional(sub: str, rest: Argv) -> bool:
    first = rest[0] if rest else None
    if sub == "branch":
        return _listing(rest, _BRANCH)
    if sub == "tag":
        return _listing(rest, _TAG)
    if sub == "remote":
        return all(a in ("-v", "--verbose") for a in rest) or (
            first == "get-url" and options_ok(rest[1:], spec("", "", "push all"))
        )
    if sub == "config":
        if first in ("get", "list"):
            return options_ok(rest[1:], _CONFIG)
        return any(a in ("--get", "--get-all", "--get-regexp", "--list", "-l")
                   for a in rest) and options_ok(rest, _CONFIG)  # fmt: skip
    if sub == "reflog":
        return first is None or (first == "show" and options_ok(rest[1:], _LOGS))
    if sub == "stash":
        return first == "list" and len(rest) == 1
    if sub == "worktree":
        return first == "list" and options_ok(
            rest[1:], spec("v", "", "porcelain verbose z")
        )
    return False


def git_subcommand(args: Argv) -> int | None:
    """Index in `args` (after ``git``) of the subcommand, or None if a global is not allowed."""
    start = first_operand(args, _GLOBAL)
    if start is None or start >= len(args) or "--" in args[:start]:
        return None
    return start


def git_read_only(args: Argv) -> bool:
    """True if ``git <args>`` only reads (every word literal and allow-listed)."""
    if any(a is None for a in args):
        return False
    start = git_subcommand(args)
    if start is None:
        return False
    sub, rest = str(args[start]), args[start + 1 :]
    known = _SUBCOMMANDS.get(sub)
    if known is not None:
        return options_ok(rest, known)
    return _conditional(sub, rest)
