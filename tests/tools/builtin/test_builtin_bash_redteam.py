"""Red-team tables for the bash classifier and the bash permission rules (issue 11).

Each row is a hole found by attacking the merged implementation; the fix is to
the mechanism (a family), and the rows show members of each family. Where a
row claims bash does something (writes, runs a hidden command), a proof test
runs it in a temporary directory with a harmless ``touch`` and checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import ToolError
from toolweave.execution import PermissionRules
from toolweave.tools import SessionState
from toolweave.tools.builtin import BashTool, ShellCommand
from toolweave.tools.builtin.bash._classifier import is_read_only, parse_prefixes
from toolweave.tools.builtin.sandbox._sandbox import Backend, backend_available

# -- classifier: writers it called read-only ---------------------------------------

WRITERS = [
    # {var}> names a file descriptor: an assignment (PATH=11 makes `ls` run ./11/ls)
    "true {PATH}>/dev/null; ls",
    "ls {x}>/dev/null",
    "cat {fd}</etc/passwd",
    "echo hi {x}>&2",
    "ls {a}<&0",
    "ls {_y9}>/dev/null x",
    # GNU sed ends a b/t/T/: label at ';' or a blank: the rest is commands
    "sed 'b x;w out' f",
    "sed 'b x; w out' f",
    "sed -n ':a;w out' f",
    "sed 't x;w out' f",
    "sed 'T;w out' f",
    "sed -n 'bx}w out' f",
    "sed -e 'b end; w out' -e ':end' f",
    "sed 'b\tx;w out' f",
    # a file name that another sed could end early
    "sed 'r in;w out' f",
    "sed 'R in}w out' f",
]

READERS = [
    "ls {x} >/dev/null",  # a word and a redirection, not a named descriptor
    "echo {a,b}",
    "sed 'b end; :end' f",
    "sed -n ':a;N;$!ba;p' f",
    "sed -n '/x/b skip; p; :skip' f",
    "sed 't;T;p' f",
    "sed 'r in' f",
    "sed '/x/r other.txt' f",
    "cat a=~/x",  # still only reads (the tilde is expanded, not an option)
]


@pytest.mark.parametrize("command", WRITERS)
def test_found_writers_are_exclusive(command: str) -> None:
    assert not is_read_only(command)


@pytest.mark.parametrize("command", READERS)
def test_nearby_readers_stay_read_only(command: str) -> None:
    assert is_read_only(command)


def _bash(command: str, cwd: Path) -> None:
    subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        capture_output=True,
        timeout=10,
        check=False,
    )


SED_PROOFS = [
    "sed 'b x;w out' f",
    "sed 'b x; w out' f",
    "sed -n ':a;w out' f",
    "sed 't x;w out' f",
    "sed 'T;w out' f",
    "sed -e 'b end; w out' -e ':end' f",
    "sed 'b\tx;w out' f",
]


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed")
@pytest.mark.parametrize("command", SED_PROOFS)
def test_the_sed_rows_really_write(command: str, tmp_path: Path) -> None:
    """Proof that the rows are writers under GNU sed (w opens its file at compile time)."""
    version = subprocess.run(["sed", "--version"], capture_output=True, text=True)
    if "GNU" not in version.stdout:
        pytest.skip("not GNU sed")
    assert command in WRITERS
    (tmp_path / "f").write_text("x\n")
    _bash(command, tmp_path)
    assert (tmp_path / "out").exists()


def test_a_named_descriptor_really_assigns(tmp_path: Path) -> None:
    out = subprocess.run(
        ["bash", "-c", 'true {PATH}>/dev/null; printf %s "$PATH"'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert out.stdout.isdigit()


# -- user prefixes: a pinned option cannot be overridden after the prefix -----------

PREFIXES = parse_prefixes(["gh api --method GET", "bd show", "mise tasks ls"])

PREFIX_ABUSE = [
    "gh api --method GET /x --method POST",
    "gh api --method GET /x -X POST",
    "gh api --method GET /x -XPOST",
    "gh api --method GET /x --method=POST",
    "gh api --method GET /x --meth POST",
    "gh api --method GET /x -f body=1",
    "gh api --method GET /x --input f",
    "gh api --method GET $ARGS",
    "gh api --method GET /x $MORE",
    "gh api --method GET /x > out",
    "gh api --method GET /x $(rm y)",
    "gh api --method GET /x <(rm y)",
    "bd show 1 > out",
    "X=1 bd show 1",
]
PREFIX_OK = [
    "gh api --method GET /repos/x/y",
    "gh api --method GET /repos/x/y/pulls",
    "bd show 12 --json",
    "bd show $ID",
    "mise tasks ls",
]


@pytest.mark.parametrize("command", PREFIX_ABUSE)
def test_a_user_prefix_cannot_be_stretched(command: str) -> None:
    assert not is_read_only(command, read_only_commands=PREFIXES)


@pytest.mark.parametrize("command", PREFIX_OK)
def test_a_user_prefix_still_covers_its_commands(command: str) -> None:
    assert is_read_only(command, read_only_commands=PREFIXES)


# -- rules: commands bash runs that the rules did not see --------------------------

RULES = PermissionRules(
    deny=["bash(rm:*)"],
    allow=[
        f"bash({name}:*)"
        for name in (
            "echo", "ls", "cat", "true", "test", "[", "printf", "read", "let",
            "declare", "local", "export", "typeset", "readonly", "unset", "mapfile",
            "readarray", "wait", "getopts", "x", "y", "alias", "jobs", "compgen",
            "complete", "bind", "shopt", "history", "source", ".", "sh",
            "fc", "hash", "enable", "r", "flock", "script", "su", "env", "watch",
            "busybox", "toybox", "bash", "nsenter", "ltrace", "valgrind",
        )
    ],
)  # fmt: skip

HIDDEN_RM = [
    # text bash evaluates as arithmetic or a subscript runs its $(...)
    "test -v 'a[$(rm x)]'",
    "[ -v 'a[$(rm x)]' ]",
    "test -R 'a[$(rm x)]'",
    "x='a[$(rm x)]'; test -v \"$x\"",
    "x='a[$(rm x)]'; [ -v \"$x\" ]",
    "test \"$a\" 'a[$(rm x)]'",
    "[ $a 'a[$(rm x)]' ]",
    "printf -v 'a[$(rm x)]' x",
    "printf \"$fmt\" 'a[$(rm x)]' x",
    "read 'a[$(rm x)]' <<< 1",
    "read -r 'a[$(rm x)]' < f",
    "mapfile -t 'a[$(rm x)]' < f",
    "readarray 'a[$(rm x)]' < f",
    "unset 'a[$(rm x)]'",
    "wait -p 'a[$(rm x)]'",
    "getopts a 'b[$(rm x)]'",
    "let 'a[$(rm x)]'",
    "let x=1",
    "declare -i v='a[$(rm x)]'",
    "declare -n r='a[$(rm x)]'; echo $r",
    "typeset -i v='a[$(rm x)]'",
    "local -i v='a[$(rm x)]'",
    "export 'a[$(rm x)]'=1",
    "declare -a a='([$(rm x)]=1)'",
    'declare "$n"=1',
    "x='a[$(rm x)]'; [[ $x -eq 1 ]]",
    "[[ 1 -lt $y ]]",
    "[[ -v 'a[$(rm x)]' ]]",
    "x='a[$(rm x)]'; echo ${!x}",
    "x='$(rm x)'; echo ${x@P}",
    "x='a[$(rm x)]'; echo ${y:x}",
    "x='a[$(rm x)]'; echo ${y:0:x}",
    "x='a[$(rm x)]'; echo ${#y:x}",
    "x='a[$(rm x)]'; echo ${a[x]}",
    "x='a[$(rm x)]'; echo ${y[@]:x}",
    "echo ${!prefix@}",
    # builtins that rebind names or rerun text
    "shopt -s expand_aliases\nalias r='rm x'\nr",
    "alias ls='rm x'",
    "history -s 'rm x'; fc -s",
    "fc -s rm",
    "hash -p /bin/rm ls; ls x",
    "enable -f ./evil.so ls; ls",
    "jobs -x rm x",
    # code fed through a pipe or stdin to a shell or to source
    "source <(echo rm x)",
    ". <(echo rm x)",
    "source /dev/stdin <<< 'rm x'",
    "bash /dev/stdin <<< 'rm x'",
    "bash <(echo rm x)",
    "sh /proc/self/fd/0 <<< 'rm x'",
    "source",
    "mapfile -C 'rm x #' -c 1 a < f",
    "readarray -t -C 'rm x #' a < f",
    "mapfile -tC 'rm x #' a < f",
    "compgen -C 'rm x' y",
    "complete -C 'rm x' y",
    "bind -x '\"\\C-x\": rm x'",
    # through a wrapper, the same holds
    "command test -v 'a[$(rm x)]'",
    "builtin read 'a[$(rm x)]' <<< 1",
    "builtin let x=1",
    # wrappers whose option value or operands are a command line
    "bash -c -- 'rm x'",
    "bash -c -e 'rm x'",
    "sh -c -x -- 'rm x'",
    "busybox rm x",
    "busybox sh -c 'rm x'",
    "toybox rm x",
    "env --split-string='rm x'",
    "env -S 'echo hi; rm x'",
    "env -S'rm x'",
    "flock /tmp/l -c 'echo hi; rm x'",
    "flock --command='echo; rm x' /tmp/l",
    "script -qc 'echo; rm x' /dev/null",
    "script --command 'echo; rm x'",
    "su -c 'echo; rm x'",
    "watch -n 1 echo hi\\; rm x",
    "nsenter -t 1 -m rm x",
    "ltrace rm x",
    "valgrind -q rm x",
]


@pytest.mark.parametrize("command", HIDDEN_RM)
def test_a_deny_rule_holds_where_bash_would_run_the_command(command: str) -> None:
    verdict = RULES.match(("bash",), ShellCommand(command))
    assert verdict is not None
    assert verdict.behavior == "deny"


@pytest.mark.parametrize("command", HIDDEN_RM)
def test_an_allow_rule_never_covers_hidden_code(command: str) -> None:
    rules = PermissionRules(allow=RULES_ALLOW)
    verdict = rules.match(("bash",), ShellCommand(command))
    assert verdict is None or verdict.behavior != "allow"


RULES_ALLOW = [rule.text for rule in RULES.allow]

STILL_ALLOWED = [
    'export PATH="$HOME/bin:$PATH"',
    "export A=1 B=2",
    "local x=$(echo hi)",
    "declare -r X=1",
    "printf '%s\\n' \"$x\"",
    '[ -f "$f" ] && echo yes',
    '[ "$a" = "$b" ] && echo yes',
    'test -n "$x"',
    "[[ -f x ]] && echo y",
    "[[ $a == b ]] && echo y",
    "echo ${x:-default} ${x%.py} ${#x} ${x}",
    "read -r line < f",
    "unset x",
    "bash -c 'echo hi'",
    "busybox echo hi",
    "env -S 'echo hi'",
]


@pytest.mark.parametrize("command", STILL_ALLOWED)
def test_ordinary_forms_are_still_allowed(command: str) -> None:
    verdict = RULES.match(("bash",), ShellCommand(command))
    assert verdict is not None
    assert verdict.behavior == "allow"


PROOFS = [
    "test -v 'a[$(touch hit)]'",
    "x='a[$(touch hit)]'; [[ $x -eq 1 ]]",
    "x='a[$(touch hit)]'; echo ${!x}",
    "x='$(touch hit)'; echo ${x@P}",
    "x='a[$(touch hit)]'; y=abc; echo ${y:x}",
    "read 'a[$(touch hit)]' <<< 1",
    "printf -v 'a[$(touch hit)]' x",
    "declare -i v='a[$(touch hit)]'",
    "let 'a[$(touch hit)]'",
    "shopt -s expand_aliases\nalias r='touch hit'\nr",
    "bash -c -- 'touch hit'",
    "jobs -x touch hit",
    "source <(echo touch hit)",
    "bash /dev/stdin <<< 'touch hit'",
    "printf 'a\\nb\\n' | mapfile -C 'touch hit #' -c 1 a",
    "compgen -C 'touch hit' y",
]


@pytest.mark.parametrize("command", PROOFS)
def test_the_hidden_commands_really_run(command: str, tmp_path: Path) -> None:
    """Proof that bash runs the hidden command in each family above."""
    _bash(command, tmp_path)
    assert (tmp_path / "hit").exists()


# -- sandbox: workspace-write may not leave git set up to run a program --------------

FSMONITOR = "[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch pwned\\n"

GIT_ESCAPES = [
    # .git renamed away, a new one with a fsmonitor put in its place
    f"mv .git .git.old && mkdir .git && cp -r .git.old/. .git/ && printf '{FSMONITOR}'"
    " > .git/c && mv -f .git/c .git/config",
    # .git turned into a gitfile pointing at a copy with the agent's config
    f"cp -r .git evil && printf '{FSMONITOR}' > evil/config && mv .git keep"
    " && echo 'gitdir: evil' > .git",
    f"cp -r .git evil && printf '{FSMONITOR}' > evil/config && rm -rf .git"
    " && echo 'gitdir: evil' > .git",
    # commondir: config and hooks then come from another directory
    f"mkdir -p evil && cp -r .git/objects .git/refs evil/ && printf '{FSMONITOR}'"
    " > evil/config && echo ../evil > .git/commondir",
    # files git reads when they appear
    "git config --file .git/config.worktree core.fsmonitor 'touch pwned'",
    "mkdir -p .git/info && echo '* filter=x' > .git/info/attributes",
    f"mkdir -p .git/modules/sub && printf '{FSMONITOR}' > .git/modules/sub/config",
    # a hooks directory where there was none
    "rm -rf .git/hooks; mkdir .git/hooks && printf '#!/bin/sh\\ntouch pwned\\n'"
    " > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
]


def _git(root: Path, *argv: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    done = subprocess.run(
        ["git", *argv], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    return done.stdout


def _repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one commit; its root and HEAD."""
    root = tmp_path.resolve()
    (root / "a.txt").write_text("a\n")
    _git(root, "init", "-q")
    _git(root, "add", "a.txt")
    _git(root, "commit", "-qm", "one")
    return root, _git(root, "rev-parse", "HEAD").strip()


def _after_the_user_runs_git(root: Path, head: str, command: str, text: str) -> None:
    """The user's own git, outside every sandbox, runs nothing the agent chose."""
    _git(root, "status")
    _git(root, "commit", "-q", "--allow-empty", "-m", "two")
    assert not (root / "pwned").exists(), text
    for name in (
        "commondir",
        "config.worktree",
        "info/attributes",
        "modules/sub/config",
    ):
        assert not os.path.lexists(root / ".git" / name), text
    assert not (root / ".git").is_file(), text  # never a gitfile the agent wrote
    if "rm -rf .git " in command:
        return  # workspace-write may delete the repository; it may not redirect it
    assert head in _git(root, "log", "--format=%H")  # the same repository
    refused = ("restored", "Device or resource busy", "Read-only file system")
    assert any(word in text for word in refused), text


@pytest.fixture(params=["landlock", "bwrap"])
def sandbox_backend(request: pytest.FixtureRequest) -> Backend:
    name: Backend = request.param
    if not backend_available(name):
        pytest.skip(f"{name} is not available here")
    return name


@pytest.mark.anyio
@pytest.mark.parametrize("command", GIT_ESCAPES)
async def test_workspace_write_leaves_git_running_no_program(
    tmp_path: Path, sandbox_backend: Backend, command: str
) -> None:
    root, head = _repo(tmp_path)
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=sandbox_backend)
    try:
        text = str(await run(tool, {"command": command}, SessionState()))
    except ToolError as exc:
        text = str(exc)
    _after_the_user_runs_git(root, head, command, text)


@pytest.mark.anyio
async def test_workspace_write_still_commits_under_the_new_guard(
    tmp_path: Path, sandbox_backend: Backend
) -> None:
    root, _ = _repo(tmp_path)
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=sandbox_backend)
    command = (
        "echo b > b.txt && git add b.txt && git -c user.email=t@t -c user.name=t"
        " commit -qm two && git log --format=%s"
    )
    assert await run(tool, {"command": command}, SessionState()) == "two\none\n"


# -- bounds: inputs that crashed or took seconds ---------------------------------------

SLOW = [
    " ".join(["nice"] * 20000) + " ls",  # RecursionError in the classifier
    " ".join(["timeout 1"] * 9000) + " ls",
    " ".join(["xargs"] * 20000) + " cat",
    "sudo " + " ".join(["x"] * 20000),  # 1.5 s of suffixes in the rules
    "env " + " ".join(["-u X"] * 12000) + " rm y",
    " ".join(["busybox"] * 20000) + " rm x",
]


@pytest.mark.parametrize("command", SLOW, ids=range(len(SLOW)))
def test_wrapper_floods_end_bounded_and_fail_closed(command: str) -> None:
    command = command[: 64 * 1024]
    assert not is_read_only(command)  # no RecursionError, not read-only
    verdict = RULES.match(("bash",), ShellCommand(command))
    assert verdict is not None
    assert verdict.behavior == "deny"  # unparseable: every deny rule matches


def test_a_few_nested_wrappers_still_read_as_before() -> None:
    assert is_read_only("nice timeout 5 nice -n 2 ls")
    verdict = RULES.match(("bash",), ShellCommand("sudo nice timeout 5 rm x"))
    assert verdict is not None
    assert verdict.behavior == "deny"


def _worktree(tmp_path: Path) -> tuple[Path, str]:
    """A linked worktree (its ``.git`` is a gitfile) of a repository outside it."""
    (tmp_path / "main").mkdir()
    main, head = _repo(tmp_path / "main")
    root = (tmp_path / "wt").resolve()
    _git(main, "worktree", "add", "-q", str(root))
    return root, head


@pytest.mark.anyio
async def test_a_worktrees_gitfile_is_kept(
    tmp_path: Path, sandbox_backend: Backend
) -> None:
    root, head = _worktree(tmp_path)
    gitfile = _read(root / ".git")
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=sandbox_backend)
    command = (
        f"git init -q evil && printf '{FSMONITOR}' > evil/.git/config"
        " && printf 'gitdir: evil/.git\\n' > .git"
    )
    try:
        text = str(await run(tool, {"command": command}, SessionState()))
    except ToolError as exc:
        text = str(exc)
    assert _read(root / ".git") == gitfile, text
    _git(root, "status")
    assert not (root / "pwned").exists(), text
    assert head in _git(root, "log", "--format=%H")


def _read(path: Path) -> str:
    return path.read_text()
