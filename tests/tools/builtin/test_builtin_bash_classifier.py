"""The bash classifier's table: every family of the issue, readers SAFE, writers not.

Each read-only command is shown parallel through the real gate; each writer is
shown exclusive; compositions put a writer anywhere in an otherwise read-only
input and the whole input must be exclusive.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolweave.messages import ToolCall
from toolweave.scheduling._gate import classify
from toolweave.tools import Access, Concurrency, ToolRegistry
from toolweave.tools.builtin import BashTool, classify_bash
from toolweave.tools.builtin.bash._classifier import (
    is_read_only,
    last_command_name,
    parse_prefixes,
    read_only_form,
    read_only_verdict,
)

READ_ONLY = [
    # lifted by issue 28, each proved under real bash first
    # (test_builtin_bash_read_only_proof.py)
    "ls &",
    "sleep 10 & ls",
    "bash -c 'ls'",
    "sh -c 'cat a'",
    "bash -c ls",
    "ls",
    "ls -la src",
    "pwd",
    "cat README.md",
    "cat -n a.py b.py",
    "head -n 20 a.py",
    "tail -5 log.txt",
    "wc -l *.py",
    "grep -rn TODO src",
    "grep -c foo a.txt b.txt",
    "egrep 'a|b' f",
    "fgrep -i x f",
    "rg -n 'def main' src",
    "rg --files",
    "rg -g '*.py' import",
    "echo hello",
    "echo $HOME",
    'echo "$PWD"',
    "printf '%s\\n' a b",
    "stat a.py",
    "du -sh .",
    "df -h",
    "which python",
    "type ls",
    "true",
    "false",
    "test -f a.py",
    "[ -d src ]",
    "basename /a/b.txt",
    "dirname src/a.py",
    "realpath a.py",
    "readlink -f link",
    "diff a.txt b.txt",
    "diff -u old new",
    "cmp a b",
    "comm -12 a b",
    "cut -d: -f1 /etc/passwd",
    "tr a-z A-Z < in.txt",
    "nl a.py",
    "od -c a.bin",
    "hexdump -C a.bin",
    "strings a.out",
    "sha256sum a.tar",
    "md5sum -c sums.txt",
    "base64 -d blob.b64",
    "tac log",
    "rev names",
    "column -t data.tsv",
    "jq '.name' package.json",
    "ps aux",
    "uname -a",
    "id",
    "whoami",
    "seq 1 10",
    "sleep 1",
    "printenv PATH",
    "sed -n '1,20p' a.py",
    "sed -n -e '/start/,/end/p' f",
    "sed 's/foo/bar/g' a.txt",
    "sed -E 's/(a|b)+/x/' f",
    "sed -n '$p' f",
    "sed '5q' f",
    "sed 'y/abc/xyz/' f",
    "sed -ne 's/x/y/p' f",
    "sed -n '/x/{p;q}' f",
    "sed -n '/a/,/b/{/c/p}' f",
    "awk '{print $1}' data.txt",
    "awk -F: '{print $1}' /etc/passwd",
    "awk -v n=3 'NR==n' f",
    "sort a.txt",
    "sort -u -k2 a.txt",
    "sort -rn counts | head",
    "uniq -c sorted.txt",
    "find . -name '*.py'",
    "find src -type f -newer a.py",
    "find . -maxdepth 2 -print",
    "tree -L 2",
    "file a.bin",
    "date",
    "date +%Y-%m-%d",
    "date -d yesterday +%s",
    "hostname",
    "xxd a.bin",
    "env",
    "command -v git",
    "timeout 5 cat a",
    "git status",
    "git status --short",
    "git log --oneline -10",
    "git -C sub log -p",
    "git --no-pager diff HEAD~1",
    "git diff --stat",
    "git show HEAD:src/a.py",
    "git blame a.py",
    "git branch",
    "git branch -a -v",
    "git branch --list 'feat/*'",
    "git tag",
    "git tag -l 'v1.*'",
    "git rev-parse HEAD",
    "git ls-files",
    "git grep -n foo",
    "git remote -v",
    "git config --get user.name",
    "git config --list",
    "git stash list",
    "git worktree list",
    "git reflog",
    "git describe --tags",
    "ls | wc -l",
    "cat a.py | grep def | sort | uniq -c",
    "ls > /dev/null 2>&1",
    "grep foo a 2>/dev/null",
    "ls &> /dev/null",
    "echo err >&2",
    "cat < input.txt",
    "cat <<< 'here string'",
    "cat <<EOF\nplain text\nEOF\n",
    "ls && pwd",
    "ls || echo none",
    "ls; pwd; whoami",
    "cd src && ls",
    "(cd src; ls)",
    "{ ls; pwd; }",
    "echo $(git rev-parse HEAD)",
    "echo `date`",
    "cat <(ls) <(ls src)",
    "diff <(sort a) <(sort b)",
    "if test -f a; then cat a; else echo none; fi",
    "while false; do ls; done",
    "! grep -q foo a",
    "find . -name '*.py' | xargs grep -l TODO",
    "find . -print0 | xargs -0 wc -l",
    "ls # rm -rf / in a comment",
    "ls \\\n  -la",
    "git log --format='%H %s' | head -3",
    # options known read-only, exact names
    "sort -k2,2 -t, data.csv",
    "sort --numeric-sort --reverse f",
    "head --lines=5 f",
    "tail --bytes 100 f",
    "ls --color=auto -1",
    "grep --color=never -E 'a|b' f",
    "grep -A2 -B2 needle f",
    "rg --files-with-matches foo src",
    "rg -t py --max-count 3 foo",
    "cut --fields=1,2 --delimiter=: f",
    "wc --lines f",
    "du --max-depth=1 -h .",
    "uniq -c -- in",
    "cat -- -dashfile",
    "grep -- -pattern f",
    "date -u +%s",
    "file -b --mime-type a.bin",
    "stat -c %s a",
    "base64 a.bin",
    "nl -ba f",
    "od -An -tx1 a.bin",
    "printf '%s %s\\n' a b",
    "echo -n hi",
    "echo --help",
    "seq -w 1 10",
    "test -f a",
    "test a = b",
    "[ -n abc ]",
    "[ 1 -eq 1 ]",
    "[ a != b ] && echo differ",
    # git reads with allowed options
    "git log --oneline --graph --decorate -20",
    "git log -p -3 -- src/a.py",
    "git log --since=2.weeks --author=me",
    "git log --format=%H -n 1",
    "git show --stat HEAD",
    "git show --name-only HEAD~2",
    "git diff --cached",
    "git diff --name-status main...HEAD",
    "git diff -U5 a b",
    "git diff --word-diff",
    "git status -s -b",
    "git status --porcelain=v1",
    "git status -uno",
    "git rev-parse --show-toplevel",
    "git rev-parse --abbrev-ref HEAD",
    "git ls-files --others --exclude-standard",
    "git ls-tree -r HEAD --name-only",
    "git cat-file -p HEAD",
    "git blame -L 10,20 a.py",
    "git shortlog -sn",
    "git for-each-ref --sort=-committerdate refs/heads",
    "git merge-base main HEAD",
    "git branch --show-current",
    "git branch -r",
    "git tag --list",
    "git config get user.name",
    "git remote get-url origin",
    "git count-objects -v",
    "git describe --always --abbrev=10",
    "git --no-pager log -1",
    "git -P show HEAD",
    "git grep -n -i todo -- '*.py'",
    # compositions of readers stay read-only
    "ls && cat a | grep b",
    "cat a | sort | uniq -c | sort -rn | head",
    "git status && git diff --stat",
    "echo $(ls) $(pwd)",
    "cat $(git ls-files | head -1)",
    "(ls; pwd) | wc -l",
    "{ cat a; cat b; } | grep x",
    "if [ -f a ]; then cat a; fi",
    "while false; do cat a; done",
    "grep -c x a || true",
    "diff <(git show HEAD:a) a",
    "timeout 10 git log -1",
    "nice -n 5 grep -r x .",
    "time git status",
    "command -v rg && rg x",
    "xargs -0 cat < list",
    "ls -la | head -20 && wc -l a b",
    "cat a 2>/dev/null || echo missing",
    'grep "\\${HOME}x" f',
    'grep "\\$HOME" f',
    "grep '${HOME}' f",
    'echo "${HOME}"/x',
]

TRAPS = [
    # plain writers
    "rm -rf build",
    "rm a.txt",
    "mv a b",
    "cp a b",
    "mkdir new",
    "touch stamp",
    "chmod +x run.sh",
    "ln -s a b",
    "dd if=/dev/zero of=f bs=1 count=1",
    "truncate -s 0 f",
    "tee out.txt",
    "ls | tee out.txt",
    "patch -p1 < fix.diff",
    "install -m 755 a /usr/local/bin",
    "npm install",
    "pip install requests",
    "make",
    "pytest",
    "python -c 'print(1)'",
    "node script.js",
    "bash -c 'rm x'",  # bash -c with a read-only literal script is read-only (issue 28)
    "sh script.sh",
    "curl -o out https://example.com",
    "wget https://example.com",
    # redirections to files
    "ls > out.txt",
    "ls >> log.txt",
    "ls 2> err.txt",
    "ls &> all.txt",
    "ls &>> all.txt",
    "ls >| forced.txt",
    "ls >& both.txt",
    "cat <> rw.txt",
    "echo hi > /dev/nullx",
    "echo hi > $OUT",
    "{ ls; } > out.txt",
    "(ls) > out.txt",
    # substitutions that write
    "echo $(rm x)",
    "cat <(rm x)",
    "ls > >(tee out)",
    "echo hi | tee >(cat)",
    "echo ${x:-$(rm y)}",
    "cat <<EOF\n$(rm x)\nEOF\n",
    # flags that write or execute
    "sed -i 's/a/b/' f",
    "sed -i.bak 's/a/b/' f",
    "sed --in-place 's/a/b/' f",
    "sed -ni 'p' f",
    "sed 's/a/b/w out.txt' f",
    "sed -n 'w out.txt' f",
    "sed 'e rm x' f",
    "sed -f script.sed f",
    "sed -n '/x/{w out.txt' f",
    "sed '{s/a/b/w out.txt\n}' f",
    "sed -n p *",
    "sort -o out.txt in.txt",
    "sort --output=out.txt in.txt",
    "sort -ro out in",
    "find . -delete",
    "find . -name '*.pyc' -exec rm {} ;",
    "find . -execdir touch x ;",
    "find . -fprint out.txt",
    "find . -ok rm {} ;",
    "awk '{print > \"out\"}' f",
    "awk 'BEGIN{system(\"rm x\")}'",
    "awk '{print | \"sh\"}' f",
    "awk -f prog.awk f",
    "awk -i inplace '{print}' f",
    "rg --pre ./decode foo",
    "rg --pre=sh foo",
    "tree -o out.txt",
    "file -C -m magic",
    "date -s '2020-01-01'",
    "date 010100002020",
    "hostname newname",
    "uniq in.txt out.txt",
    "xxd a.bin out.hex",
    "env rm x",
    "env FOO=1 ls",
    "xargs rm",
    "find . | xargs sed -n p",
    "xargs -I{} sed -n p {}",
    "timeout 5 rm x",
    "command rm x",
    # git that changes state
    "git commit -m msg",
    "git add .",
    "git checkout main",
    "git switch -c feat",
    "git reset --hard",
    "git clean -fdx",
    "git stash",
    "git stash drop",
    "git push",
    "git pull",
    "git fetch",
    "git merge feat",
    "git rebase main",
    "git rm a.py",
    "git mv a b",
    "git init",
    "git gc",
    "git apply fix.diff",
    "git branch new-branch",
    "git branch -D old",
    "git tag v1.0",
    "git tag -d v1.0",
    "git remote add origin url",
    "git config user.name me",
    "git reflog expire --all",
    "git worktree add ../wt",
    "git -c core.pager='rm x' log",
    "git log --output=out.txt",
    "git diff --output out.patch",
    "git grep -O foo",
    "git co main",
    # shell constructs that are not plain reads
    "FOO=1 ls",
    "PATH=/tmp ls",
    "x=1",
    "rm x &",  # a read-only job in the background is read-only (issue 28)
    "sleep 10 & rm x",
    "f() { ls; }",
    "eval ls",
    "source env.sh",
    ". env.sh",
    "exec ls",
    "./ls",
    "/bin/ls",
    "$CMD",
    "${CMD} -la",
    "l$x",
    "ls; rm x",
    "ls && rm x",
    "ls || rm x",
    "cat a | sh",
    "for f in *; do rm $f; done",
    "while true; do rm x; done",
    # unparsable: fail closed
    'ls "unterminated',
    "echo $((1+2))",
    "case x in a) ls;; esac",
    "[[ -f a ]] && cat a",
    "select x in a; do ls; done",
    "coproc ls",
    "",
    "   ",
    # abbreviated long options (getopt_long accepts unique prefixes)
    "sort --out=x f",
    "sort --outp=x f",
    "sort --compress-prog=sh f",
    "sort --compress-program=gzip f",
    "file --comp f",
    "date --se=2020-01-01",
    "date --set 2020-01-01",
    "git branch --unset-up",
    "git branch --set-upstream-to=origin/main",
    "git branch --unset-upstream",
    "grep --colo=always x f",
    "ls --al",
    "head --line=5 f",
    "git log --outp=x",
    "git diff --ou=x",
    "git log --ext-diff",
    "git diff --textconv",
    "git cat-file --textconv HEAD:a",
    "git log --onel",
    # -- ends options, then an operand may be an output
    "uniq -- in out",
    "uniq -c -- in out",
    "xxd -- a.bin out.hex",
    "base64 -- a b",
    # assignments of every kind
    "printf -v PATH x",
    "printf -v x '%s' y",
    "for PATH in /tmp; do ls; done",
    "for f in *.py; do wc -l $f; done",
    "select PATH in a; do ls; done",
    "read x",
    "read -r PATH < f",
    "while read l; do echo $l; done < f",
    "echo ${x@P}",
    "echo ${!x}",
    "echo ${x:=rm}",
    "echo ${x=1}",
    "echo ${#arr[$(rm x)]}",
    "declare x=1",
    "declare -n ref=PATH",
    "export PATH=/tmp",
    "export x",
    "local x=1",
    "readonly x=1",
    "typeset x=1",
    "unset PATH",
    "let x=1",
    "alias ls=rm",
    "set -e",
    "shopt -s extglob",
    "mapfile arr < f",
    "getopts ab opt",
    "IFS=: read a b",
    "a[0]=1",
    "HOME=/tmp cd",
    "GIT_DIR=/x git status",
    # arithmetic and subscript contexts
    "test -v 'a[$(rm x)]'",
    "test -v x",
    "test -R ref",
    "[ -v 'a[$(rm x)]' ]",
    "[ -v x ]",
    "[ $x -eq 1 ]",
    '[ "$x" = y ]',
    "[[ -f a ]]",
    "[[ -v a[$(rm x)] ]]",
    "[[ $x -eq 1 ]]",
    "[[ a == b ]] && ls",
    "(( x ))",
    "(( x = 1 ))",
    "((a[$(rm x)]++))",
    "echo $(( a[$(rm x)] ))",
    "echo $[1+1]",
    "for ((i=0;i<3;i++)); do ls; done",
    "test $x",
    'test "$x" -v y',
    # options that run programs, pagers and editors
    "rg --hostname-bin=./x foo",
    "rg --hostname-bin ./x foo",
    "rg -z foo",
    "rg --search-zip foo",
    "rg --pre-glob '*' --pre cat foo",
    "git grep --open-files-in-pager foo",
    "git grep --open-files-in-pager=vim foo",
    "git ls-remote --upload-pack=./x origin",
    "git ls-remote origin",
    "git fetch --upload-pack=./x origin",
    "git log --exec=./x",
    "git -p log",
    "git --paginate log",
    "git --exec-path=/tmp log",
    "git --config-env=core.pager=X log",
    "git -c core.fsmonitor=./x status",
    "git -c diff.external=./x diff",
    "git difftool",
    "git help log",
    "git instaweb",
    "git stash show -p",
    "git log $REV",
    'git show "$(rm x)"',
    "less f",
    "more f",
    "vi f",
    "vim f",
    "nano f",
    "emacs f",
    "man ls",
    "watch ls",
    "find . -okdir rm {} ;",
    "find . -fprint0 out",
    "find . -fprintf out %p",
    "find . -fls out",
    "find . -name $x",
    "find . -exec cat {} +",
    "sed -e 's/a/b/e' f",
    "sed --expr='s/a/b/' f",
    "sed --expression='w out' f",
    "awk 'BEGIN { while ((\"ls\" | getline l) > 0) print l }'",
    "awk '@load \"x\"; {print}' f",
    "awk -e 'BEGIN{}'",
    "jq --run-tests f",
    "file -z a.gz",
    "file --uncompress a.gz",
    "file -p a",
    "tree $DIR",
    "xargs tree",
    "git log --show-signature",
    "git log --show-sig",
    "git describe --dirty",
    "xargs sh -c 'rm $0'",
    "xargs -p cat",
    "xargs sort -o out",
    "timeout 5 sh -c ls",
    "nice rm x",
    "time rm x",
    "nohup ls",
    "env -i ls",
    "env -S 'rm x'",
    "sudo ls",
    "sudo rm x",
    "exec rm x",
    "builtin cd x",
    "command -p rm x",
    "stdbuf -o0 ls",
    "ionice ls",
    "setsid ls",
    'bash -c "$CMD"',
    "sh -c 'cat a > b'",
    "zsh -c ls",
    "eval 'cat a'",
    "trap 'rm x' EXIT",
    # redirections to files, in every position
    "cat a >out",
    "cat a 1>out",
    "cat a >> out",
    ">out",
    ">out cat a",
    "cat a 3>out",
    "cat a >&out",
    "cat a 2>&1 >out",
    "grep x f > /dev/null > out",
    "ls > ~/out",
    "ls > '/dev/null'x",
    "ls > /dev/zero",
    "ls > /dev/nul",
    "while true; do ls; done > out",
    "if true; then ls; fi > out",
    "cat <<EOF > out\nx\nEOF\n",
    # anything the parser can't fully read
    'ls "',
    "ls '",
    "echo $(",
    "echo `",
    "echo ${",
    "ls )",
    "ls <",
    "if true; then ls",
    "ls a\\\nb",
    "ls \x00",
    "cat a\x00b",
    "a" * 70_000,
    "echo " + "x " * 40_000,
    "rm" + " x" * 10,
    "ls | | wc",
    "ls && && pwd",
    "((",
]

WRITERS = [
    "rm -rf x",
    "touch x",
    "git commit -m x",
    "sed -i s/a/b/ f",
    "sort -o out f",
    "echo x > out",
    "tee out",
    "cp a b",
    "mv a b",
    "x=1",
    "printf -v x y",
    "git -c core.pager=./x log",
    "uniq -- a b",
    "make",
    "python -c 'import os'",
]

TEMPLATES = [
    "ls && {w}",
    "ls || {w}",
    "ls; {w}",
    "{w}; ls",
    "cat a | {w}",
    "{w} | cat",
    "echo $({w})",
    'echo "$({w})"',
    "echo `{w}`",
    "cat <({w})",
    "(ls; {w})",
    "{{ ls; {w}; }}",
    "if true; then {w}; fi",
    "if {w}; then ls; fi",
    "while false; do {w}; done",
    "! {w}",
    "cat $({w} | head)",
    "cat <<EOF\n$({w})\nEOF\n",
    "git log $({w})",
    "diff <(ls) <({w})",
    "echo $(echo $({w}))",
    "[ -f $({w}) ]",
]

COMPOSITIONS = [t.format(w=w) for t in TEMPLATES for w in WRITERS]
COMPOSED_READERS = [t.format(w="grep -c x f") for t in TEMPLATES]
# `[ -f $(...) ]` holds an expansion inside [ ]: never read-only, even for a reader
COMPOSED_READERS.remove("[ -f $(grep -c x f) ]")
# git's words must be literal: a substitution could expand to an option
COMPOSED_READERS.remove("git log $(grep -c x f)")
COMPOSED_READERS.remove("cat <<EOF\n$(grep -c x f)\nEOF\n")
COMPOSED_READERS.append("cat <<EOF\n$(grep -c x f)\nEOF")


def _gate_parallel(command: str, root: Path | None = None) -> bool:
    """Whether the gate lets the call overlap others, in a folder with no .git.

    Not the checkout itself: in a clone (`.git` a directory, unlike a worktree's
    `.git` file) ``git add``/``git commit`` declare their writes to ``.git``
    and are then rightly parallel with the keys that say so; that case is
    `test_a_git_writer_is_exclusive_or_declares_its_writes_to_git`.
    """
    registry = ToolRegistry([BashTool(root or _EMPTY_WORKSPACE)])
    plan = classify(ToolCall("c1", "bash", {"command": command}), registry)
    return plan.parallel_ok


_EMPTY_WORKSPACE = Path(__file__).resolve().parent  # a real folder, no .git in it


def test_the_table_is_big_and_covers_both_sides() -> None:
    every = READ_ONLY + TRAPS + COMPOSITIONS + COMPOSED_READERS
    assert len(every) >= 400
    assert len(set(every)) == len(every)
    assert len(TRAPS) + len(COMPOSITIONS) >= 2 * len(READ_ONLY)


@pytest.mark.parametrize("command", READ_ONLY + COMPOSED_READERS)
def test_read_only_commands_run_in_parallel(command: str) -> None:
    assert classify_bash(command) is Concurrency.SAFE, read_only_verdict(command)
    assert _gate_parallel(command)


@pytest.mark.parametrize("command", TRAPS)
def test_traps_are_exclusive(command: str) -> None:
    assert classify_bash(command) is Concurrency.SEQUENTIAL
    assert read_only_verdict(command).reason != ""
    if command:  # "" fails the input schema: the gate answers it without running it
        assert not _gate_parallel(command)


@pytest.mark.parametrize("command", COMPOSITIONS)
def test_a_writer_anywhere_makes_the_whole_input_exclusive(command: str) -> None:
    assert classify_bash(command) is Concurrency.SEQUENTIAL
    assert not _gate_parallel(command)


@pytest.mark.parametrize(
    "command", [c for c in TRAPS + COMPOSITIONS if "git " in c and c.strip()]
)
def test_a_git_writer_is_exclusive_or_declares_its_writes_to_git(
    command: str, tmp_path: Path
) -> None:
    """In a git workspace a git writer may overlap others only by declaring `.git`."""
    (tmp_path / ".git").mkdir()
    tool = BashTool(tmp_path)
    if not _gate_parallel(command, tmp_path):
        return  # a barrier, as with no .git (or no sandbox to enforce a declaration)
    access = tool.access_for(tool.parse({"command": command}))
    assert access is not None and access.writes, command
    head = Access(reads=(f"fs:{tmp_path.resolve() / '.git' / 'HEAD'}",))
    assert access.conflicts_with(head), (command, access)


def test_a_parser_fault_is_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolweave.tools.builtin.bash import _parse as _bash_parse

    def broken(*_args: object) -> object:
        raise RecursionError("deep")

    _bash_parse.parse_script.cache_clear()
    monkeypatch.setattr(_bash_parse._Walker, "walk", broken)
    try:
        verdict = read_only_verdict("ls")
    finally:
        _bash_parse.parse_script.cache_clear()
    assert not verdict.read_only
    assert "parser failed" in verdict.reason


@pytest.mark.parametrize(
    "command",
    ["ls", "git status", "sed -n 1p f", "find . -name x", "timeout 5 ls", "xargs cat"],
)
def test_conservative_mode_keeps_only_the_core(command: str) -> None:
    core = {"ls"}
    assert is_read_only(command)
    assert is_read_only(command, conservative=True) is (command in core)


def test_user_prefixes_extend_the_allow_list_by_whole_words() -> None:
    prefixes = parse_prefixes(["bd show", "kubectl get pods", "mise tasks ls"])
    ok = ["bd show 12", "kubectl get pods -A", "mise tasks ls", "bd show $ID"]
    for command in ok:
        assert not is_read_only(command)
        assert is_read_only(command, read_only_commands=prefixes), command
    bad = [
        "bd shows",
        "bd close 12",
        "kubectl delete pods x",
        "kubectl get secrets",
        "bd show 1 > out",
        "bd show $(rm x)",
        "X=1 bd show",
        "bd show 1 && rm x",
        "bd",
    ]
    for command in bad:
        assert not is_read_only(command, read_only_commands=prefixes), command
    assert not is_read_only("bd show 1", read_only_commands=prefixes, conservative=True)


@pytest.mark.parametrize("bad", [[""], ["   "], ["'unterminated"], ["./x show"]])
def test_bad_user_prefixes_are_config_errors(bad: list[str]) -> None:
    from toolweave._exceptions import ConfigError

    with pytest.raises(ConfigError):
        parse_prefixes(bad)
    with pytest.raises(ConfigError):
        parse_prefixes("bd show")  # type: ignore[arg-type]


def test_bash_tool_learns_prefixes() -> None:
    tool = BashTool(".", read_only_commands=["bd show"])
    assert tool.concurrency_for({"command": "bd show 1"}) is Concurrency.SAFE
    assert tool.concurrency_for({"command": "bd list"}) is Concurrency.SEQUENTIAL
    tool.teach(["bd list"])
    assert tool.concurrency_for({"command": "bd list"}) is Concurrency.SAFE


def test_git_reads_run_without_textconv_or_external_diff() -> None:
    command = "git log -p -3 | grep x && git -C . diff --stat -- a; git status"
    assert read_only_form(command) == (
        "git log --no-textconv --no-ext-diff -p -3 | grep x && "
        "git -C . diff --no-textconv --no-ext-diff --stat -- a; git status"
    )
    assert read_only_form("git blame a") == "git blame --no-textconv a"
    assert read_only_form("echo $(git show HEAD)") == (
        "echo $(git show --no-textconv --no-ext-diff HEAD)"
    )
    assert read_only_form('ls "') == 'ls "'


def test_last_command_name() -> None:
    assert last_command_name("cd src && grep -q foo a") == "grep"
    assert last_command_name("ls | diff - b") == "diff"
    assert last_command_name("make; test -f out") == "test"
    assert last_command_name("ls 2>/dev/null | grep x > /dev/null") == "grep"
    assert last_command_name("$CMD") is None
    assert last_command_name('ls "') is None
    assert last_command_name("{ ls; }") is None
    assert last_command_name("! grep x f") is None
