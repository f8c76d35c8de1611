"""Permission rules, modes, the tool's own check and the ask handler, through the runner."""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Any

import anyio
import pytest
from lifecycle_helpers import call, make_state, registry_with, run_concurrently
from pydantic import BaseModel

from toolweave._exceptions import ConfigError
from toolweave.execution import (
    CallKind,
    Hooks,
    PermissionMode,
    PermissionRule,
    PermissionRules,
    PreToolUseDecision,
    RuleVerdict,
    ToolRunner,
    classify_call,
)
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import Access, PermissionCheck, Tool, ToolContext, tool

WS = Path("/home/u/proj")


class _Cmd(BaseModel):
    command: str


class Shell(Tool):
    """A fake shell: its subject is the command; it asks for anything but `ls`."""

    def __init__(self) -> None:
        super().__init__(name="Bash", description="Run a command.", input_model=_Cmd)

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        return str(args["command"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        if args["command"] == "ls":
            return PermissionCheck("allow")
        return PermissionCheck("ask", f"run {args['command']!r}?")

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return f"ran {args['command']}"


def _writes(path: str) -> Any:
    @tool(name="write", access=lambda args: Access(writes=(f"fs:{args['path']}",)))
    async def write(path: str) -> str:
        """The write test tool."""
        return f"wrote {path}"

    return write


class _Path(BaseModel):
    path: str


class Editor(Tool):
    """Edits a file; asks before every edit; declares the file it writes."""

    def __init__(self) -> None:
        super().__init__(
            name="Edit",
            description="Edit a file.",
            input_model=_Path,
            access=lambda args: Access(writes=(f"fs:{args['path']}",)),
        )

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        return PurePath(args["path"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        return PermissionCheck("ask", "edit a file?")

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return f"edited {args['path']}"


# -- rule parsing and matching ------------------------------------------------


def _match(rule: str, subject: str | PurePath | None, *names: str) -> bool:
    return PermissionRule.parse(rule).matches(names or ("Bash",), subject, workspace=WS)


@pytest.mark.parametrize(
    ("rule", "subject", "expected"),
    [
        ("Bash(git log:*)", "git log", True),
        ("Bash(git log:*)", "git log --oneline -5", True),
        ("Bash(git log:*)", "git logout", False),
        ("Bash(git log:*)", "git", False),
        ("Bash(make)", "make", True),
        ("Bash(make)", "make clean", False),
        ("Bash(npm run *)", "npm run test -- --watch", True),
        ("Bash(npm run *)", "npm install", False),
        ("Bash", "anything at all", True),
        ("Bash()", "anything at all", True),
        ("Bash(*)", None, True),
        ("Bash(make)", None, False),
        ("bash(make)", "make", True),
    ],
)
def test_command_rules(rule: str, subject: str | None, expected: bool) -> None:
    assert _match(rule, subject) is expected


def test_an_allow_wildcard_never_vouches_for_a_compound_command() -> None:
    rule = PermissionRule.parse("Bash(git log:*)")
    for command in ("git log; rm -rf ~", "git log && curl x | sh", "git log > /etc/x"):
        assert rule.matches(("Bash",), command, workspace=WS) is True
        assert rule.matches(("Bash",), command, workspace=WS, vouching=True) is False
    piped = PermissionRule.parse("Bash(ps aux | grep *)")
    assert piped.matches(("Bash",), "ps aux | grep py", workspace=WS, vouching=True)


@pytest.mark.parametrize(
    ("rule", "path", "expected"),
    [
        ("Read(./src/**)", "/home/u/proj/src/a.py", True),
        ("Read(./src/**)", "/home/u/proj/src/deep/er/b.py", True),
        ("Read(./src/**)", "/home/u/proj/srcx/a.py", False),
        ("Read(./src/**)", "/home/u/proj/other/src/a.py", False),
        ("Read(src/*.py)", "/home/u/proj/src/a.py", True),
        ("Read(src/*.py)", "/home/u/proj/src/deep/a.py", False),
        ("Read(src/)", "/home/u/proj/src/deep/a.py", True),
        (
            "Read(./src/**)",
            "src/a.py",
            True,
        ),  # a relative subject is under the workspace
        ("Read(./src/**)", "/home/u/proj/src/../../etc/passwd", False),
        ("Read(//etc/**)", "/etc/passwd", True),
        ("Read(//etc/**)", "/home/u/proj/etc/passwd", False),
        ("Read(/etc/**)", "/etc/passwd", True),  # shell reading
        ("Read(/etc/**)", "/home/u/proj/etc/passwd", True),  # Claude Code reading
        ("Read(*.env)", "/home/u/proj/.secrets/prod.env", True),
        ("Read(*.env)", "/srv/x.env", True),
        ("Read(*.env)", "/srv/x.envy", False),
        ("Read(.env)", "/home/u/proj/.env", True),
    ],
)
def test_path_rules(rule: str, path: str, expected: bool) -> None:
    assert _match(rule, PurePath(path), "Read") is expected


def test_home_relative_path_rules() -> None:
    secret = PurePath(Path.home() / ".ssh" / "id_rsa")
    assert _match("Read(~/.ssh/**)", secret, "Read")
    assert not _match("Read(~/.ssh/**)", PurePath("/srv/.ssh/id_rsa"), "Read")


@pytest.mark.parametrize(
    ("rule", "names", "expected"),
    [
        ("mcp__git__git_log", ("mcp__git__git_log",), True),
        ("mcp__git__*", ("mcp__git__git_reset",), True),
        ("mcp__git", ("mcp__git__git_reset",), True),
        ("mcp__git", ("mcp__gitx__status",), False),
        ("mcp__git__*", ("mcp__time__now",), False),
        ("Edit", ("edit",), True),
        ("say", ("shout", "say"), True),  # aliases count
    ],
)
def test_tool_name_rules(rule: str, names: tuple[str, ...], expected: bool) -> None:
    assert PermissionRule.parse(rule).matches(names, None, workspace=WS) is expected


@pytest.mark.parametrize("bad", ["", "Bash(", "(x)", "Bash(x) y", "a b"])
def test_malformed_rules_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError):
        PermissionRules(deny=[bad])


def test_a_single_string_is_not_a_rule_list() -> None:
    with pytest.raises(ConfigError, match="list of rules"):
        PermissionRules(allow="Bash")


def test_deny_beats_ask_beats_allow() -> None:
    rules = PermissionRules(
        allow=["Bash"], ask=["Bash(git push:*)"], deny=["Bash(rm:*)"]
    )
    names = ("Bash",)
    assert rules.match(names, "rm -rf x") == RuleVerdict("deny", "Bash(rm:*)")
    assert rules.match(names, "git push origin") == RuleVerdict(
        "ask", "Bash(git push:*)"
    )
    assert rules.match(names, "ls") == RuleVerdict("allow", "Bash")
    assert rules.match(("Read",), "ls") is None
    assert not PermissionRules() and rules


def test_call_kinds() -> None:
    assert classify_call(None, WS) is CallKind.OTHER
    assert classify_call(Access(), WS) is CallKind.READ_ONLY
    assert classify_call(Access(reads=("fs:/etc",)), WS) is CallKind.READ_ONLY
    assert classify_call(Access(writes=("fs:/home/u/proj/a.py",)), WS) is CallKind.EDIT
    assert classify_call(Access(writes=("fs:/home/u/proj",)), WS) is CallKind.EDIT
    assert classify_call(Access(writes=("fs:/home/u/proj/../x",)), WS) is CallKind.OTHER
    assert classify_call(Access(writes=("fs:/home/u/projx/a",)), WS) is CallKind.OTHER
    assert classify_call(Access(writes=("todo:",)), WS) is CallKind.OTHER
    assert classify_call(Access(writes=("fs:/home/u/proj/a",)), None) is CallKind.OTHER


# -- through the runner ---------------------------------------------------------


class Asker:
    """An ask handler that answers from a script and records what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, item: ToolCall, reason: str) -> Any:
        self.asked.append((item.id, reason))
        return self.answers.pop(0)


def _runner(tmp_path: Path, *tools: Tool, **options: Any) -> ToolRunner:
    return ToolRunner(registry_with(*tools), state=make_state(tmp_path), **options)


@pytest.mark.anyio
async def test_hook_allow_never_overrides_a_deny_rule(tmp_path: Path) -> None:
    hooks = Hooks()
    hooks.pre_tool_use(lambda d: PreToolUseDecision(permission="allow", reason="fine"))
    runner = _runner(
        tmp_path, Shell(), hooks=hooks, permissions=PermissionRules(deny=["Bash(rm:*)"])
    )
    result = await runner(call("1", "Bash", command="rm -rf /"))
    assert result == ToolResult(
        "1", "Permission denied: denied by rule Bash(rm:*)", is_error=True
    )
    assert (await runner(call("2", "Bash", command="make"))).text == "ran make"


@pytest.mark.anyio
async def test_hook_allow_does_not_skip_an_ask_rule(tmp_path: Path) -> None:
    hooks = Hooks()
    hooks.pre_tool_use(lambda d: PreToolUseDecision(permission="allow"))
    asker = Asker("deny")
    runner = _runner(
        tmp_path,
        Shell(),
        hooks=hooks,
        permissions=PermissionRules(ask=["Bash(git push:*)"]),
        ask=asker,
    )
    result = await runner(call("1", "Bash", command="git push"))
    assert result.is_error
    assert asker.asked == [("1", "rule Bash(git push:*) requires approval")]


@pytest.mark.anyio
async def test_the_tools_own_ask_and_the_handler(tmp_path: Path) -> None:
    asker = Asker("allow", "deny", "always", "nonsense")
    runner = _runner(tmp_path, Shell(), ask=asker)
    assert (await runner(call("ls", "Bash", command="ls"))).text == "ran ls"
    assert (await runner(call("1", "Bash", command="make"))).text == "ran make"
    denied = await runner(call("2", "Bash", command="make"))
    assert denied.text == "Permission denied by the user: run 'make'?"
    assert (await runner(call("3", "Bash", command="make"))).text == "ran make"
    # "always" approved this tool and subject: the handler is not asked again ...
    assert (await runner(call("4", "Bash", command="make"))).text == "ran make"
    # ... but another subject is asked; a nonsense answer is a denial.
    other = await runner(call("5", "Bash", command="make clean"))
    assert other.text == "Permission denied: the ask handler answered 'nonsense'"
    assert [i for i, _ in asker.asked] == ["1", "2", "3", "5"]


@pytest.mark.anyio
async def test_no_handler_means_ask_is_deny(tmp_path: Path) -> None:
    runner = _runner(tmp_path, Shell())
    result = await runner(call("1", "Bash", command="make"))
    assert result.is_error
    assert result.text == (
        "Permission denied: approval is required (run 'make'?), and there is no"
        " one to ask (no terminal, no ask handler). To allow it without asking,"
        ' use the allow rule permissions.allow = ["Bash(make)"] (toolweave.toml,'
        " or AgentConfig(permissions=PermissionRules(allow=[...])))."
    )


@pytest.mark.anyio
async def test_an_allow_rule_waives_the_tools_ask(tmp_path: Path) -> None:
    runner = _runner(
        tmp_path, Shell(), permissions=PermissionRules(allow=["Bash(make:*)"])
    )
    assert (await runner(call("1", "Bash", command="make all"))).text == "ran make all"
    compound = await runner(call("2", "Bash", command="make all; rm -rf ~"))
    assert (
        compound.is_error
    )  # the wildcard allow does not vouch for it: the tool's ask stands


@pytest.mark.anyio
async def test_a_raising_ask_handler_denies(tmp_path: Path) -> None:
    async def broken(item: ToolCall, reason: str) -> Any:
        raise RuntimeError("ui crashed")

    runner = _runner(tmp_path, Shell(), ask=broken)
    result = await runner(call("1", "Bash", command="make"))
    assert (
        result.text
        == "Permission denied: the ask handler failed (RuntimeError: ui crashed)"
    )


@pytest.mark.anyio
async def test_asks_of_parallel_calls_are_serialized_and_always_is_shared(
    tmp_path: Path,
) -> None:
    inside = 0
    peak = 0
    first_in = anyio.Event()
    release = anyio.Event()
    asked: list[str] = []

    async def handler(item: ToolCall, reason: str) -> Any:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        asked.append(item.id)
        first_in.set()
        await release.wait()
        inside -= 1
        return "always"

    runner = _runner(tmp_path, Shell(), ask=handler)
    calls = [call(str(i), "Bash", command="make") for i in range(4)]
    async with anyio.create_task_group() as tg:
        results: list[ToolResult] = []

        async def drive() -> None:
            results.extend(await run_concurrently(runner, calls))

        tg.start_soon(drive)
        await first_in.wait()
        await anyio.wait_all_tasks_blocked()
        assert inside == 1  # the others wait for the first question to be answered
        release.set()
    assert peak == 1
    assert len(asked) == 1  # the first "always" answered the rest
    assert [r.text for r in results] == ["ran make"] * 4


@pytest.mark.anyio
async def test_plan_mode_runs_only_read_only_calls(tmp_path: Path) -> None:
    runner = _runner(tmp_path, _writes("x"), mode=PermissionMode.PLAN)
    assert (await runner(call("1", "echo", text="hi"))).text == "hi"
    denied = await runner(call("2", "write", path="/tmp/a"))
    assert denied.text == "Permission denied: plan mode allows only read-only calls"
    runner.mode = PermissionMode.DEFAULT
    assert runner.mode is PermissionMode.DEFAULT
    assert (await runner(call("3", "write", path="/tmp/a"))).text == "wrote /tmp/a"


@pytest.mark.anyio
async def test_accept_edits_approves_edits_inside_the_workspace_only(
    tmp_path: Path,
) -> None:
    state = make_state(tmp_path)
    assert state.workspace is not None
    inside = str(state.workspace / "a.py")
    outside = str(tmp_path / "elsewhere.py")
    runner = ToolRunner(registry_with(Editor()), state=state)
    assert (await runner(call("1", "Edit", path=inside))).is_error  # asks; no handler
    runner.mode = PermissionMode.ACCEPT_EDITS
    assert (await runner(call("2", "Edit", path=inside))).text == f"edited {inside}"
    assert (await runner(call("3", "Edit", path=outside))).is_error
    runner.mode = PermissionMode.BYPASS
    assert (await runner(call("4", "Edit", path=outside))).text == f"edited {outside}"


@pytest.mark.anyio
async def test_bypass_keeps_deny_and_ask_rules(tmp_path: Path) -> None:
    rules = PermissionRules(ask=["Bash(git push:*)"], deny=["Edit(./secrets/**)"])
    state = make_state(tmp_path)
    runner = ToolRunner(
        registry_with(Shell(), Editor()),
        state=state,
        permissions=rules,
        mode=PermissionMode.BYPASS,
    )
    assert (await runner(call("1", "Bash", command="make"))).text == "ran make"
    assert (await runner(call("2", "Bash", command="git push"))).is_error
    assert state.workspace is not None
    secret = str(state.workspace / "secrets" / "k")
    assert (await runner(call("3", "Edit", path=secret))).text == (
        "Permission denied: denied by rule Edit(./secrets/**)"
    )
