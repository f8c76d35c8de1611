"""bash(...) permission rules hold on every command a shell input runs.

A deny table across every wrapper and composition of issue 11 item 6: the rule
must match wherever the command sits. Allow rules allow only when every part
is allowed; unparseable input never matches an allow rule and always matches
a deny rule (fail closed).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lifecycle_helpers import make_state, registry_with

from toolweave.execution import PermissionRules, ToolRunner
from toolweave.execution._rules import _words_match
from toolweave.messages import ToolCall
from toolweave.tools.builtin import BashTool, ShellCommand
from toolweave.tools.builtin.bash._rules import command_parts

NAMES = ("bash",)

DENIED_BY_RM = [
    "rm -f x",
    "echo hi && rm -f x",
    "echo hi || rm -f x",
    "echo hi; rm -f x",
    "ls & rm -f x",
    "ls | rm -f x",
    "ls |& rm -f x",
    "(rm -f x)",
    "{ ls; rm -f x; }",
    "echo $(rm -f x)",
    "echo `rm -f x`",
    'echo "$(rm -f x)"',
    "cat <(rm -f x)",
    "echo > >(rm -f x)",
    "echo $(echo $(rm -f x))",
    "if rm -f x; then ls; fi",
    "if true; then rm -f x; else ls; fi",
    "while rm x; do ls; done",
    "for f in a; do rm $f; done",
    "case a in a) rm x;; esac",
    "f() { rm x; }",
    "x=$(rm x)",
    "export X=$(rm x)",
    "[[ -f $(rm x) ]]",
    "echo $(( $(rm x) ))",
    "cat <<EOF\n$(rm x)\nEOF\n",
    "bash -c 'rm -f x'",
    "sh -c 'ls; rm -f x'",
    "bash -lc 'rm x'",
    'zsh -c "rm x"',
    "bash -c 'bash -c \"rm x\"'",
    "eval rm -f x",
    "eval 'ls && rm x'",
    "env rm x",
    "env -i PATH=/bin rm x",
    "env FOO=1 rm x",
    "command rm x",
    "command -p rm x",
    "builtin rm x",
    "exec rm x",
    "nice rm x",
    "nice -n 5 rm x",
    "nohup rm x",
    "timeout 5 rm x",
    "timeout -s KILL 5 rm x",
    "time rm x",
    "stdbuf -o0 rm x",
    "xargs rm",
    "xargs -0 rm -f",
    "xargs -I{} rm {}",
    "find . -exec rm {} ;",
    "find . -execdir rm {} +",
    "find . -ok rm {} ;",
    "find . -name x -okdir rm -f {} ;",
    "sudo rm x",
    "sudo -u root rm x",
    "sudo -E -H rm x",
    "sudo --weird-option rm x",
    "doas rm x",
    "/bin/rm x",
    "./rm x",
    "sudo timeout 5 nice rm x",
    "timeout 5 bash -c 'rm x'",
    "xargs sh -c 'rm x'",
    "find . -exec sh -c 'rm x' ;",
    "env -S 'rm x'",
    "watch rm x",
    "ionice -c3 rm x",
    "setsid rm x",
    "flock /tmp/l rm x",
    "trap 'rm x' EXIT",
    "coproc rm x",
    "! ! rm x",
    "x=\x0cdo rm x",
    "x=\x0bdo rm x",
    "ls\r\nrm x",
    "time 2>&1 rm x",
    "ls\n\\rm x",
    "EOF\n\\rm x",
    "coproc W { rm x; }",
    "nice -5 rm x",
    "ls#$(rm x)",
    "echo ${x/$(rm a)/b}",
    'declare -a "a=($(rm x))"',
    'a=(rm x); "${a[@]}"',
    "select x in a; do rm x; done",
    "r\\\nm x",
    "\\rm x",
    "$'rm' x",
    "trap -- 'ls; rm x' INT TERM",
    "echo 'rm x' | bash",
    "bash <<< 'rm x'",
    "sh -s < script.sh",
    "bash - < script.sh",
    "bash -o errexit <<< 'rm x'",
    "ssh host rm x",
    "ssh -p 22 -i key host 'rm x'",
    "su -c 'rm x' root",
    "chroot /srv rm x",
    "unshare -r rm x",
    "parallel rm ::: a b",
    "taskset -c 1 rm x",
    "systemd-run --user rm x",
    "$(echo rm) x",
    "$CMD x",
    "r$x -f x",
    # unparseable: a deny rule always matches
    'ls "',
    "echo $(",
    'bash -c "$X"',
    "eval $X",
    "a" * 70_000,
]

NOT_DENIED_BY_RM = [
    "ls",
    "echo rm",
    "echo 'rm -f x'",
    "grep rm f",
    "git rm x",
    "rmdir x",
    "cat rm.txt",
    "echo $(ls)",
    "find . -name x",
    "timeout 5 ls",
    "bash script.sh",
    "trap - EXIT",
    "trap 'echo bye' EXIT",
    "ssh host ls",
    "bash -o errexit script.sh",
]


@pytest.mark.parametrize("command", DENIED_BY_RM)
def test_a_deny_rule_holds_on_every_wrapper_and_composition(command: str) -> None:
    rules = PermissionRules(deny=["bash(rm:*)"], allow=["bash(*)", "bash(ls:*)"])
    verdict = rules.match(NAMES, ShellCommand(command))
    assert verdict is not None
    assert verdict.behavior == "deny"
    assert verdict.rule.startswith("bash(rm:*)")


@pytest.mark.parametrize("command", NOT_DENIED_BY_RM)
def test_a_deny_rule_does_not_match_other_commands(command: str) -> None:
    rules = PermissionRules(deny=["bash(rm:*)"])
    assert rules.match(NAMES, ShellCommand(command)) is None


@pytest.mark.parametrize("command", DENIED_BY_RM[:20])
def test_an_ask_rule_holds_the_same_way(command: str) -> None:
    rules = PermissionRules(ask=["bash(rm:*)"], allow=["bash(echo:*)"])
    verdict = rules.match(NAMES, ShellCommand(command))
    assert verdict is not None
    assert verdict.behavior == "ask"


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("bash(git push)", "ls && git push"),
        ("bash(git push)", "timeout 9 git push"),
        ("bash(git push --force:*)", "cd x; git push --force origin"),
        ("bash(npm run *)", "ls | npm run build"),
        ("bash(npm run *)", "$X run build"),
        ("bash(curl*)", "echo $(curl x)"),
        ("bash(*)", "ls"),
        ("bash", "ls"),
        ("bash(git push)", "git $SUB"),
        ("bash(git push --force:*)", "git push $FLAG"),
        ("bash(git push --force:*)", "git push > /dev/null --force"),
    ],
)
def test_every_rule_form_matches_inside_compositions(rule: str, command: str) -> None:
    verdict = PermissionRules(deny=[rule]).match(NAMES, ShellCommand(command))
    assert verdict is not None and verdict.behavior == "deny"


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("bash(git push)", "git push origin"),
        ("bash(git push)", "git $A $B"),
        ("bash(npm run *)", "yarn run build"),
        ("bash(git push --force:*)", "git push"),
        ("bash(rm:*)", "grep -r rm ."),
    ],
)
def test_rule_forms_do_not_overmatch(rule: str, command: str) -> None:
    assert PermissionRules(deny=[rule]).match(NAMES, ShellCommand(command)) is None


ALLOWED = [
    ("ls", ["bash(ls:*)"]),
    ("ls -la && git status", ["bash(ls:*)", "bash(git status:*)"]),
    ("git status | grep x", ["bash(git status)", "bash(grep:*)"]),
    ("timeout 5 npm test", ["bash(npm test)"]),
    ("nice -n 5 npm test", ["bash(npm test:*)"]),
    ("bash -c 'npm test'", ["bash(npm test)"]),
    ("echo $(git rev-parse HEAD)", ["bash(echo:*)", "bash(git rev-parse:*)"]),
    ("sudo npm test", ["bash(sudo:*)", "bash(npm test)"]),
    ("find . -exec cat {} ;", ["bash(find:*)", "bash(cat:*)"]),
]


@pytest.mark.parametrize(("command", "allow"), ALLOWED)
def test_allow_needs_every_part_allowed(command: str, allow: list[str]) -> None:
    verdict = PermissionRules(allow=allow).match(NAMES, ShellCommand(command))
    assert verdict is not None and verdict.behavior == "allow"
    for missing in allow:
        rest = [r for r in allow if r != missing]
        partial = PermissionRules(allow=rest).match(NAMES, ShellCommand(command))
        assert partial is None, (missing, partial)


@pytest.mark.parametrize(
    "command",
    [
        "ls && rm x",
        "ls; rm x",
        "ls | sh",
        "ls $(rm x)",
        "echo `rm x`",
        "$CMD",
        "$CMD ls",
        'ls "',
        "eval $X",
        "a" * 70_000,
        "sudo ls",
        "xargs rm",
        "find . -exec rm {} ;",
    ],
)
def test_allow_never_covers_an_unallowed_or_unknown_part(command: str) -> None:
    rules = PermissionRules(allow=["bash(ls:*)", "bash(echo:*)", "bash(find:*)"])
    assert rules.match(NAMES, ShellCommand(command)) is None


def test_unknown_words_are_covered_only_by_a_prefix_rule() -> None:
    command = ShellCommand("ls $DIR")
    assert PermissionRules(allow=["bash(ls:*)"]).match(NAMES, command) is not None
    assert PermissionRules(allow=["bash(ls $DIR)"]).match(NAMES, command) is None
    assert PermissionRules(allow=["bash(ls *)"]).match(NAMES, command) is None
    assert PermissionRules(allow=["bash(ls -l:*)"]).match(NAMES, command) is None


def test_a_whole_tool_allow_still_loses_to_a_deny() -> None:
    rules = PermissionRules(allow=["bash"], deny=["bash(rm:*)"])
    assert rules.match(NAMES, ShellCommand("ls")).behavior == "allow"  # type: ignore[union-attr]
    verdict = rules.match(NAMES, ShellCommand("ls && rm x"))
    assert verdict is not None and verdict.behavior == "deny"


def test_a_whole_tool_deny_matches_anything() -> None:
    verdict = PermissionRules(deny=["bash"]).match(NAMES, ShellCommand("ls"))
    assert verdict is not None and verdict.rule == "bash"


def test_rules_of_other_tools_are_ignored() -> None:
    rules = PermissionRules(deny=["read(rm:*)"], allow=["edit"])
    assert rules.match(NAMES, ShellCommand("rm x")) is None


def test_unparseable_input_names_why_in_the_verdict() -> None:
    verdict = PermissionRules(deny=["bash(rm:*)"]).match(NAMES, ShellCommand('ls "'))
    assert verdict is not None
    assert "could not be fully parsed" in verdict.rule


def test_empty_input_is_never_allowed() -> None:
    rules = PermissionRules(allow=["bash(ls:*)"])
    assert rules.match(NAMES, ShellCommand("# only a comment")) is None


def test_nesting_and_fan_out_are_bounded() -> None:
    deep = "ls"
    for _ in range(8):
        deep = f"bash -c {deep!r}"
    assert command_parts(deep) is None
    wide = "sudo " * 60 + "ls"
    assert command_parts(wide) is None


def test_words_match_with_unknown_words() -> None:
    assert _words_match("rm:*", (None, "x"))
    assert _words_match("git push", ("git", None))
    assert not _words_match("git push", ("git", None, "x"))
    assert _words_match("npm run *", ("npm", None))
    assert _words_match("*rm*", (None,))
    assert not _words_match("npm run *", ("yarn", None))


@pytest.mark.anyio
async def test_the_issue_example_is_denied_end_to_end(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = workspace / "x"
    marker.write_text("keep")
    runner = ToolRunner(
        registry_with(BashTool(workspace)),
        state=make_state(tmp_path),
        permissions=PermissionRules(deny=["bash(rm:*)"]),
    )
    result = await runner(ToolCall("c1", "bash", {"command": "echo hi && rm -f x"}))
    assert result.is_error
    assert "denied by rule bash(rm:*)" in result.text
    assert marker.read_text() == "keep"


@pytest.mark.parametrize(
    "command",
    ["((rm x))", "(( $(rm x) ))", "echo $((rm x))", "for ((;;)); do ls; done"],
)
def test_arithmetic_bash_may_reread_as_subshells_is_unparseable(command: str) -> None:
    assert command_parts(command) is None
    verdict = PermissionRules(deny=["bash(rm:*)"]).match(NAMES, ShellCommand(command))
    assert verdict is not None and verdict.behavior == "deny"
