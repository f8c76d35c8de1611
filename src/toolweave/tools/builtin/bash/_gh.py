"""The GitHub CLI's reading subcommands: read-only with respect to the machine.

Classified by parse only (gh is not installed where the read-only proof
runs): each listed form reads GitHub's API over the network and gh's own
config, and writes nothing in the workspace. The one write gh may try on
its own, its update-check state under ``~/.local/state/gh``, lies outside
the workspace and is refused by the read-only sandbox, which gh ignores.

Never listed: ``--web``/``-w`` (opens a browser; ``gh run list -w`` is its
workflow filter), ``--watch`` (polls until CI ends; ``--watch=false`` is
dropped), ``gh run view --log``/``--log-failed`` (caches the log under gh's
cache folder, a write the sandbox would refuse and gh would fail on),
``gh api`` with a method other than GET, a field (``-f``/``-F``, which
make it a POST), ``--input``, a header (``-H`` could override the method)
or ``--cache`` (writes a cache), and the ``graphql`` endpoint (always a
POST, and mutations go through it). Anything else gh does is not read-only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._options import OptionSpec, operands, options_ok, spec

__all__ = ["gh_read_only"]

Argv = Sequence[str | None]

_OUT = "json jq template repo"
"""gh's output and repository options: ``--json F``, ``-q/--jq X``, ``-t``, ``-R``."""

_VIEW = spec("c", "qtRb", "comments", f"{_OUT} branch")
_READS: dict[tuple[str, str], OptionSpec] = {
    **{(noun, "view"): _VIEW for noun in ("pr", "issue", "repo", "release")},
    ("pr", "diff"): spec(
        "", "R", "name-only patch", "color repo", max_positionals=1
    ),
    ("pr", "checks"): spec("", "qtR", "required", _OUT, max_positionals=1),
    ("pr", "list"): spec(
        "d", "ABHLSaslqtR", "draft",
        f"author assignee base head label limit search state app {_OUT}",
    ),
    ("issue", "list"): spec(
        "", "ALSalmsqtR", "",
        f"author assignee label limit search state mention milestone app {_OUT}",
    ),
    ("pr", "status"): spec("c", "qtR", "conflict-status", _OUT, max_positionals=0),
    ("issue", "status"): spec("", "qtR", "", _OUT, max_positionals=0),
    ("release", "list"): spec(
        "", "LOqtR", "exclude-drafts exclude-pre-releases", f"limit order {_OUT}",
        max_positionals=0,
    ),
    ("run", "list"): spec(
        "a", "bceLsuwqtR", "all",
        f"branch commit created event limit status user workflow {_OUT}",
        max_positionals=0,
    ),
    ("run", "view"): spec(
        "v", "ajqtR", "exit-status verbose", f"attempt job {_OUT}", max_positionals=1
    ),
    ("auth", "status"): spec("a", "h", "active", "hostname", max_positionals=0),
}  # fmt: skip

_API = spec(
    "i", "qtp", "paginate slurp include silent verbose",
    "jq template hostname preview", max_positionals=1,
)  # fmt: skip
_GET = (("-X", "GET"), ("--method", "GET"))


def gh_read_only(args: Argv) -> bool:
    """True if ``gh ARGS`` only reads (see the module doc for what is listed)."""
    if len(args) >= 1 and args[0] == "api":
        return _api(args[1:])
    if len(args) < 2 or args[0] is None or args[1] is None:
        return False
    options = _READS.get((args[0], args[1]))
    if options is None:
        return False
    rest = [a for a in args[2:] if a != "--watch=false"]
    return options_ok(rest, options)


def _api(args: Argv) -> bool:
    """``gh api ENDPOINT`` as a GET: no field, input, header, cache or other method."""
    rest: list[str | None] = []
    i = 0
    while i < len(args):
        pair = tuple(args[i : i + 2])
        if pair in _GET:
            i += 2
            continue
        if args[i] in ("--method=GET", "-XGET"):
            i += 1
            continue
        rest.append(args[i])
        i += 1
    endpoint = operands(rest, _API) if None not in rest else None
    if endpoint is None or len(endpoint) != 1 or endpoint[0] is None:
        return False
    return endpoint[0].strip("/") != "graphql"
