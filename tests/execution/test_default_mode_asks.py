"""`default` mode asks, as in Claude Code: every cell of the decision table.

The real built-in tools through the real lifecycle runner: a bash command not
proven read-only, a write (unless ``accept_edits``) and a fetch from a host not
yet allowed ask; with nobody to ask the call is denied with an error result
that names the setting that would allow it. Each cell also checks the effect
(the file, the command's output, the request) happened exactly when it ran.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

import httpx
import pytest
from lifecycle_helpers import call
from pydantic import BaseModel

from toolweave.execution import (
    Hooks,
    PermissionMode,
    PermissionRules,
    PreToolUseDecision,
    ToolRunner,
)
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import (
    PermissionCheck,
    SessionState,
    Tool,
    ToolContext,
    ToolRegistry,
)
from toolweave.tools.builtin import (
    BashTool,
    EditTool,
    ReadTool,
    WebFetchTool,
    WriteTool,
)

pytestmark = pytest.mark.anyio

Kind = Literal["bash_read", "bash_write", "write", "edit", "fetch"]
Rule = Literal["none", "allow", "deny"]
Outcome = Literal["ran", "asked_ran", "asked_denied", "unattended", "denied"]

KINDS: tuple[Kind, ...] = ("bash_read", "bash_write", "write", "edit", "fetch")
RULES: tuple[Rule, ...] = ("none", "allow", "deny")
MODES = tuple(PermissionMode)
HANDLER = ("absent", "allow", "deny")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Real clocks: these calls wait on real subprocesses and threads."""
    return request.param


# The call of each kind, and the rule that names it.
CALLS: dict[Kind, tuple[str, dict[str, Any], str]] = {
    "bash_read": ("bash", {"command": "cat seen.txt"}, "bash(cat seen.txt)"),
    "bash_write": ("bash", {"command": "echo x > made.txt"}, "bash(echo x)"),
    "write": ("write", {"path": "made.txt", "content": "x\n"}, "write(./made.txt)"),
    "edit": (
        "edit",
        {"path": "seen.txt", "old_string": "old", "new_string": "new"},
        "edit(./seen.txt)",
    ),
    "fetch": (
        "web_fetch",
        {"url": "https://docs.example.com/page"},
        "web_fetch(domain:docs.example.com)",
    ),
}


def oracle(mode: PermissionMode, kind: Kind, rule: Rule, handler: str) -> Outcome:
    """What Claude Code's default-mode rules say, written independently of the code."""
    if rule == "deny":
        return "denied"
    if mode is PermissionMode.PLAN and kind in ("bash_write", "write", "edit"):
        return "denied"
    if rule == "allow" or mode is PermissionMode.BYPASS:
        return "ran"
    asks = {
        "bash_read": False,
        "bash_write": True,
        "write": mode is not PermissionMode.ACCEPT_EDITS,
        "edit": mode is not PermissionMode.ACCEPT_EDITS,
        "fetch": True,
    }[kind]
    if not asks:
        return "ran"
    return {"absent": "unattended", "allow": "asked_ran", "deny": "asked_denied"}[
        handler
    ]


@dataclass
class Cell:
    """One run of one call: what the ask handler and the server saw."""

    asked: list[str]
    fetched: list[str]
    workspace: Path


async def _run(
    tmp_path: Path,
    mode: PermissionMode,
    kind: Kind,
    rule: Rule,
    handler: str,
    *,
    rule_text: str | None = None,
) -> tuple[ToolResult, Cell]:
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir(parents=True)
    (workspace / "seen.txt").write_text("old\n")
    cell = Cell([], [], workspace)

    def serve(request: httpx.Request) -> httpx.Response:
        cell.fetched.append(str(request.url))
        return httpx.Response(
            200, text="the page", headers={"content-type": "text/plain"}
        )

    async def ask(item: ToolCall, reason: str) -> Any:
        cell.asked.append(reason)
        return handler

    name, args, default_rule = CALLS[kind]
    rule_text = rule_text or default_rule
    rules = PermissionRules(**{rule: [rule_text]}) if rule != "none" else None
    state = SessionState(workspace=workspace, results_dir=tmp_path / "results")
    tools = [
        ReadTool(workspace),
        BashTool(workspace),
        EditTool(workspace),
        WriteTool(workspace),
        WebFetchTool(transport=httpx.MockTransport(serve)),
    ]
    runner = ToolRunner(
        ToolRegistry(tools),
        state=state,
        permissions=rules,
        mode=mode,
        ask=None if handler == "absent" else ask,
    )
    if kind == "edit":  # an edit needs a read first; a read never asks
        assert not (await runner(call("r", "read", path="seen.txt"))).is_error
    result = await runner(ToolCall("c1", name, args))
    return result, cell


def _effect(kind: Kind, cell: Cell) -> bool:
    """True if the call's effect is visible: it really ran."""
    ws = cell.workspace
    return {
        "bash_read": False,  # reads leave no trace; judged by the output instead
        "bash_write": (ws / "made.txt").exists(),
        "write": (ws / "made.txt").exists(),
        "edit": (ws / "seen.txt").read_text() == "new\n",
        "fetch": bool(cell.fetched),
    }[kind]


CELLS = list(itertools.product(MODES, KINDS, RULES, HANDLER))


def test_the_table_has_every_cell() -> None:
    assert len(CELLS) == 4 * 5 * 3 * 3
    outcomes = {oracle(*cell) for cell in CELLS}
    assert outcomes == {"ran", "asked_ran", "asked_denied", "unattended", "denied"}


@pytest.mark.parametrize(
    ("mode", "kind", "rule", "handler"),
    CELLS,
    ids=["-".join(str(getattr(p, "value", p)) for p in cell) for cell in CELLS],
)
async def test_every_cell_of_the_decision_table(
    tmp_path: Path, mode: PermissionMode, kind: Kind, rule: Rule, handler: str
) -> None:
    result, cell = await _run(tmp_path, mode, kind, rule, handler)
    expected = oracle(mode, kind, rule, handler)
    ran = expected in ("ran", "asked_ran")
    assert result.is_error is not ran, result.text
    assert bool(cell.asked) is expected.startswith("asked"), cell.asked
    if kind == "bash_read":
        assert ("old" in result.text) is ran
    else:
        assert _effect(kind, cell) is ran, result.text
    if expected == "denied":
        assert result.text.startswith("Permission denied: ")
        assert "no one to ask" not in result.text
    if expected == "asked_denied":
        assert result.text.startswith("Permission denied by the user: ")
    if expected == "unattended":
        assert "no one to ask (no terminal, no ask handler)" in result.text
        # The denial names the setting that would allow it ...
        assert f'permissions.allow = ["{_suggested(kind)}"]' in result.text
        names_mode = "--permission-mode accept_edits" in result.text
        assert names_mode is (kind in ("write", "edit")), result.text


def _suggested(kind: Kind) -> str:
    return {
        "bash_read": "",
        "bash_write": "bash(echo x)",
        "write": "write(./made.txt)",
        "edit": "edit(./seen.txt)",
        "fetch": "web_fetch(domain:docs.example.com)",
    }[kind]


@pytest.mark.parametrize("kind", ["bash_write", "write", "edit", "fetch"])
async def test_the_named_setting_really_allows_the_call(
    tmp_path: Path, kind: Kind
) -> None:
    """Follow the advice of an unattended denial: the call then runs, unasked."""
    default = PermissionMode.DEFAULT
    result, cell = await _run(tmp_path / "before", default, kind, "none", "absent")
    assert result.is_error and not _effect(kind, cell)
    suggested = _suggested(kind)
    assert f'["{suggested}"]' in result.text
    result, cell = await _run(
        tmp_path / "after", default, kind, "allow", "absent", rule_text=suggested
    )
    assert not result.is_error, result.text
    assert _effect(kind, cell) and not cell.asked


async def test_always_for_a_fetch_approves_its_host_only(tmp_path: Path) -> None:
    fetched: list[str] = []
    asked: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        fetched.append(str(request.url))
        return httpx.Response(200, text="ok", headers={"content-type": "text/plain"})

    async def ask(item: ToolCall, reason: str) -> Any:
        asked.append(item.id)
        return "always"

    web = WebFetchTool(transport=httpx.MockTransport(serve))
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    runner = ToolRunner(ToolRegistry([web]), state=state, ask=ask)
    urls = [
        "https://a.example.com/one",
        "https://a.example.com/two?x=1&y=2",
        "https://b.example.com/",
        "https://a.example.com:8443/three",
    ]
    results = [
        await runner(call(f"c{i}", "web_fetch", url=url)) for i, url in enumerate(urls)
    ]
    assert [r.is_error for r in results] == [False] * 4
    assert asked == ["c0", "c2"]  # once per host, whatever the path, query or port
    assert fetched == urls


async def test_always_for_a_command_approves_that_command_only(tmp_path: Path) -> None:
    asked: list[str] = []

    async def ask(item: ToolCall, reason: str) -> Any:
        asked.append(item.id)
        return "always"

    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    runner = ToolRunner(ToolRegistry([BashTool(tmp_path)]), state=state, ask=ask)
    for i, command in enumerate(["touch a", "touch a", "touch b"]):
        assert not (await runner(call(f"c{i}", "bash", command=command))).is_error
    assert asked == ["c0", "c2"]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (
            {"ask": ["bash(cat:*)"]},
            "An ask rule always asks: remove it from permissions.ask",
        ),
        (
            {"allow": ["bash(cat:*)"], "ask": ["bash"]},
            "An ask rule always asks: remove it from permissions.ask",
        ),
    ],
)
async def test_an_ask_rule_with_nobody_to_ask_names_the_rule(
    tmp_path: Path, rules: dict[str, list[str]], expected: str
) -> None:
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    (tmp_path / "f").write_text("x")
    runner = ToolRunner(
        ToolRegistry([BashTool(tmp_path)]),
        state=state,
        permissions=PermissionRules(**rules),
    )
    result = await runner(call("c", "bash", command="cat f"))  # read-only, yet asked
    assert result.is_error and expected in result.text, result.text
    assert "requires approval" in result.text and "permissions.allow" not in result.text


async def test_a_hook_ask_with_nobody_to_ask_says_only_the_hook_can_allow(
    tmp_path: Path,
) -> None:
    hooks = Hooks()
    hooks.pre_tool_use(lambda d: PreToolUseDecision(permission="ask", reason="check"))
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    runner = ToolRunner(ToolRegistry([BashTool(tmp_path)]), state=state, hooks=hooks)
    result = await runner(call("c", "bash", command="pwd"))
    assert result.is_error
    assert "only that hook can allow it" in result.text, result.text


class _Subjects(BaseModel):
    where: str


class _Asker(Tool):
    """A tool that asks without suggesting a rule; its subject varies by input."""

    def __init__(self) -> None:
        super().__init__(name="asker", description="Asks.", input_model=_Subjects)

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        where = str(args["where"])
        if where == "none":
            return None
        return PurePath(where) if where.startswith("/") else where

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        return PermissionCheck("ask", "may I?")

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return "done"


@pytest.mark.parametrize(
    ("where", "suggested"),
    [("none", "asker"), ("/etc/x", "asker(//etc/x)"), ("thing", "asker(thing)")],
)
async def test_a_tool_without_a_rule_gets_one_built_from_its_subject(
    tmp_path: Path, where: str, suggested: str
) -> None:
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    runner = ToolRunner(ToolRegistry([_Asker()]), state=state)
    result = await runner(call("c", "asker", where=where))
    assert result.is_error and f'["{suggested}"]' in result.text, result.text
    allowed = ToolRunner(
        ToolRegistry([_Asker()]),
        state=state,
        permissions=PermissionRules(allow=[suggested]),
    )
    assert (await allowed(call("c", "asker", where=where))).text == "done"


@pytest.mark.parametrize(
    ("spec", "url", "expected"),
    [
        ("domain:example.com", "https://example.com/a", True),
        ("domain:example.com", "http://EXAMPLE.com.:80/", True),
        ("domain:example.com", "https://docs.example.com/", False),
        ("domain:example.com", "https://example.com.evil.org/", False),
        ("domain:example.com", "https://evil.org/?example.com", False),
        ("domain:example.com", "https://example.com@evil.org/", False),
        ("domain:*.example.com", "https://docs.example.com/", True),
        ("domain:*.example.com", "https://a.b.example.com/", True),
        ("domain:*.example.com", "https://example.com/", False),
        ("domain:*.example.com", "https://notexample.com/", False),
        ("domain:example.com", "not a url", False),
        ("domain:example.com", "https://[::1/", False),
    ],
)
def test_domain_rules_match_the_host(spec: str, url: str, expected: bool) -> None:
    rules = PermissionRules(allow=[f"web_fetch({spec})"])
    verdict = rules.match(("web_fetch",), url)
    assert (verdict is not None) is expected


@pytest.mark.parametrize(
    ("command", "suggested"),
    [
        ("cd sub && touch made.txt", ["bash(cd sub)", "bash(touch made.txt)"]),
        ("touch made.txt; touch made.txt", ["bash(touch made.txt)"]),
        ("timeout 5 touch made.txt", ["bash(touch made.txt)"]),
        ('touch "$NAME"', ["bash(touch:*)"]),
    ],
)
async def test_the_suggested_bash_rules_cover_every_command_and_really_allow(
    tmp_path: Path, command: str, suggested: list[str]
) -> None:
    (tmp_path / "sub").mkdir()
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    env = {"NAME": "made.txt", "PATH": "/usr/bin:/bin"}
    bash = BashTool(tmp_path, env=env)
    denied = await ToolRunner(ToolRegistry([bash]), state=state)(
        call("c", "bash", command=command)
    )
    assert denied.is_error and not (tmp_path / "made.txt").exists()
    listed = ", ".join(f'"{rule}"' for rule in suggested)
    assert f"permissions.allow = [{listed}]" in denied.text, denied.text
    allowed = ToolRunner(
        ToolRegistry([bash]), state=state, permissions=PermissionRules(allow=suggested)
    )
    result = await allowed(call("c", "bash", command=command))
    assert not result.is_error, result.text
    assert (tmp_path / "made.txt").exists() or (tmp_path / "sub" / "made.txt").exists()


@pytest.mark.parametrize("command", ["$CMD made.txt", 'eval "$X"', "((x++))"])
async def test_a_command_no_rule_can_cover_says_so(
    tmp_path: Path, command: str
) -> None:
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    runner = ToolRunner(ToolRegistry([BashTool(tmp_path)]), state=state)
    result = await runner(call("c", "bash", command=command))
    assert result.is_error
    assert "No allow rule can cover it" in result.text, result.text
    assert "permissions.allow" not in result.text


@pytest.mark.parametrize("handler", ["absent", "allow"])
async def test_through_the_agent(tmp_path: Path, handler: str) -> None:
    """The library's own path: tw.Agent with the coding tools, default mode."""
    import toolweave as tw
    from toolweave.models import ScriptedModel

    asked: list[str] = []

    async def ask(item: ToolCall, reason: str) -> Any:
        asked.append(reason)
        return "allow"

    model = ScriptedModel(
        [
            tw.ModelResponse(
                [
                    tw.ToolCall("b", "bash", {"command": "echo x > made.txt"}),
                    tw.ToolCall("w", "write", {"path": "w.txt", "content": "y"}),
                ],
                stop_reason=tw.StopReason.TOOL_USE,
            ),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )
    config = tw.AgentConfig(workspace=tmp_path, ask=ask if handler == "allow" else None)
    agent = tw.Agent(model, tw.tools.coding_tools(tmp_path), config=config)
    result = await agent.run("go")
    await agent.aclose()
    results = {
        block.call_id: block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    }
    ran = handler == "allow"
    assert (tmp_path / "made.txt").exists() is ran
    assert (tmp_path / "w.txt").exists() is ran
    assert results["b"].is_error is not ran and results["w"].is_error is not ran
    if ran:
        assert len(asked) == 2
    else:
        assert 'permissions.allow = ["bash(echo x)"]' in results["b"].text
        assert "--permission-mode accept_edits" in results["w"].text
