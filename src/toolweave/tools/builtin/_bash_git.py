"""Which ``git`` invocations only read the repository (for the bash classifier)."""

from __future__ import annotations

__all__ = ["git_read_only"]

_READ_SUBCOMMANDS = frozenset(
    {"annotate", "blame", "cat-file", "check-ignore", "count-objects", "describe",
     "diff", "diff-files", "diff-index", "diff-tree", "for-each-ref", "grep", "log",
     "ls-files", "ls-remote", "ls-tree", "merge-base", "name-rev", "rev-list",
     "rev-parse", "shortlog", "show", "show-ref", "status", "var", "version",
     "whatchanged"}
)  # fmt: skip
"""Subcommands that never change refs, the index, the worktree or config.

`status` can refresh the index opportunistically; the bash tool runs every
command with GIT_OPTIONAL_LOCKS=0, which turns that off.
"""

_GLOBAL_VALUE = frozenset({"-C", "--git-dir", "--work-tree", "--namespace"})
_GLOBAL_FLAG = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--bare",
     "--no-replace-objects", "--paginate", "-p"}
)  # fmt: skip
_WRITE_OPTIONS = (
    "--output",
    "-O",
    "--open-files-in-pager",
)  # log/diff/show --output=, grep -O

_BRANCH_WRITE = frozenset(
    {"-d", "-D", "-m", "-M", "-c", "-C", "-f", "-u", "--delete", "--move", "--copy",
     "--force", "--set-upstream-to", "--unset-upstream", "--edit-description",
     "--track", "--no-track", "--create-reflog"}
)  # fmt: skip
_TAG_WRITE = frozenset(
    {"-d", "-a", "-s", "-m", "-f", "-F", "-u", "-e", "--delete", "--annotate",
     "--sign", "--force", "--message", "--file", "--local-user", "--edit"}
)  # fmt: skip
_CONFIG_READ = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
     "--get-color", "--get-colorbool"}
)  # fmt: skip
_CONFIG_WRITE = frozenset(
    {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
     "--remove-section", "-e", "--edit"}
)  # fmt: skip


def _split_global(args: list[str]) -> tuple[str, list[str]] | None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _GLOBAL_VALUE:
            i += 2
        elif arg in _GLOBAL_FLAG or arg.split("=", 1)[0] in _GLOBAL_VALUE:
            i += 1
        elif arg.startswith("-"):
            return None  # -c key=value can set core.pager, aliases ...: not read-only
        else:
            return arg, args[i + 1 :]
    return None


def _listing(rest: list[str], writes: frozenset[str]) -> bool:
    """branch/tag: read-only when listing (no name given, or --list)."""
    if any(a.split("=", 1)[0] in writes for a in rest):
        return False
    names = [a for a in rest if not a.startswith("-")]
    return not names or "-l" in rest or "--list" in rest


def _conditional(sub: str, rest: list[str]) -> bool:
    first = rest[0] if rest else ""
    if sub == "branch":
        return _listing(rest, _BRANCH_WRITE)
    if sub == "tag":
        return _listing(rest, _TAG_WRITE)
    if sub == "remote":
        return all(a in ("-v", "--verbose") for a in rest) or first in (
            "show",
            "get-url",
        )
    if sub == "config":
        if first in ("get", "list"):
            return True
        return any(a in _CONFIG_READ for a in rest) and not any(
            a in _CONFIG_WRITE for a in rest
        )
    if sub == "stash":
        return first in ("list", "show")
    if sub == "worktree":
        return first == "list"
    if sub == "reflog":
        return first not in ("expire", "delete", "drop")
    return False


def git_read_only(args: list[str]) -> bool:
    """True if ``git <args>`` only reads (global options allowed, ``-c`` not)."""
    split = _split_global(args)
    if split is None:
        return False
    sub, rest = split
    if any(a.startswith(_WRITE_OPTIONS) for a in rest):
        return False
    if sub in _READ_SUBCOMMANDS:
        return True
    return _conditional(sub, rest)
