"""The permission decision table: rule x hook x mode x tool check x call kind, exhaustively."""

from __future__ import annotations

import itertools
from typing import Literal, cast

import pytest

from toolweave.execution import (
    CallKind,
    HookVerdict,
    PermissionMode,
    RuleVerdict,
    decide_permission,
)
from toolweave.tools import PermissionCheck

Opinion = Literal["allow", "ask", "deny"] | None
Check = Literal["allow", "ask", "deny", "passthrough"]

RULES: list[Opinion] = [None, "allow", "ask", "deny"]
HOOKS: list[Opinion] = [None, "allow", "ask", "deny"]
CHECKS: list[Check] = ["passthrough", "allow", "ask", "deny"]
MODES = list(PermissionMode)
KINDS = list(CallKind)
ALL = list(itertools.product(RULES, HOOKS, CHECKS, MODES, KINDS))
STRICTNESS = {None: 0, "passthrough": 0, "allow": 0, "ask": 1, "deny": 2}
OUTCOME_RANK = {"allow": 0, "ask": 1, "deny": 2}


def decide(
    rule: Opinion, hook: Opinion, check: Check, mode: PermissionMode, kind: CallKind
) -> tuple[str, str]:
    decision = decide_permission(
        rule=None if rule is None else RuleVerdict(rule, f"Tool({rule})"),
        hook=None if hook is None else HookVerdict(hook, f"hook {hook}"),
        check=PermissionCheck(check, f"tool {check}"),
        mode=mode,
        kind=kind,
    )
    return decision.behavior, decision.source


def oracle(
    rule: Opinion, hook: Opinion, check: Check, mode: PermissionMode, kind: CallKind
) -> tuple[str, str]:
    """The decision table, written as "who may say what" rather than as a chain."""
    plan_blocks = mode is PermissionMode.PLAN and kind is not CallKind.READ_ONLY
    deniers = [
        s for s, v in (("rule", rule), ("hook", hook), ("tool", check)) if v == "deny"
    ]
    deniers += ["mode"] if plan_blocks else []
    if deniers:
        return "deny", deniers[0]
    if rule == "ask":
        return "ask", "rule"  # an ask rule is never waived
    if mode is PermissionMode.BYPASS:
        return "allow", "mode"
    if hook == "ask":
        return "ask", "hook"
    waivers = [
        source
        for source, waives in (
            ("hook", hook == "allow"),
            ("rule", rule == "allow"),
            ("mode", mode is PermissionMode.ACCEPT_EDITS and kind is CallKind.EDIT),
        )
        if waives
    ]
    if check == "ask":
        return ("allow", waivers[0]) if waivers else ("ask", "tool")
    approvers = [
        s
        for s, ok in (
            ("hook", hook == "allow"),
            ("tool", check == "allow"),
            ("rule", rule == "allow"),
        )
        if ok
    ]
    return "allow", approvers[0] if approvers else "default"


def test_the_table_has_every_combination() -> None:
    assert len(ALL) == 4 * 4 * 4 * 4 * 3 == 768


def test_every_row_matches_the_table() -> None:
    mismatches = [
        (row, decide(*row), oracle(*row)) for row in ALL if decide(*row) != oracle(*row)
    ]
    assert mismatches == []


# A readable excerpt of the table: (rule, hook, tool check, mode, kind) -> (outcome, source)
Row = tuple[Opinion, Opinion, Check, PermissionMode, CallKind]
NAMED: dict[str, tuple[Row, tuple[str, str]]] = {
    "hook allow + deny rule = deny": (
        ("deny", "allow", "passthrough", PermissionMode.DEFAULT, CallKind.READ_ONLY),
        ("deny", "rule"),
    ),
    "hook allow + deny rule = deny, even in bypass": (
        ("deny", "allow", "allow", PermissionMode.BYPASS, CallKind.READ_ONLY),
        ("deny", "rule"),
    ),
    "hook allow + ask rule = ask": (
        ("ask", "allow", "passthrough", PermissionMode.DEFAULT, CallKind.OTHER),
        ("ask", "rule"),
    ),
    "ask rule holds in bypass": (
        ("ask", None, "passthrough", PermissionMode.BYPASS, CallKind.OTHER),
        ("ask", "rule"),
    ),
    "allow rule cannot beat a hook's deny": (
        ("allow", "deny", "passthrough", PermissionMode.DEFAULT, CallKind.OTHER),
        ("deny", "hook"),
    ),
    "allow rule cannot beat the tool's deny": (
        ("allow", None, "deny", PermissionMode.BYPASS, CallKind.OTHER),
        ("deny", "tool"),
    ),
    "nobody objects": (
        (None, None, "passthrough", PermissionMode.DEFAULT, CallKind.OTHER),
        ("allow", "default"),
    ),
    "tool asks": (
        (None, None, "ask", PermissionMode.DEFAULT, CallKind.EDIT),
        ("ask", "tool"),
    ),
    "allow rule waives the tool's ask": (
        ("allow", None, "ask", PermissionMode.DEFAULT, CallKind.OTHER),
        ("allow", "rule"),
    ),
    "hook allow waives the tool's ask": (
        (None, "allow", "ask", PermissionMode.DEFAULT, CallKind.OTHER),
        ("allow", "hook"),
    ),
    "accept-edits waives the tool's ask for an edit": (
        (None, None, "ask", PermissionMode.ACCEPT_EDITS, CallKind.EDIT),
        ("allow", "mode"),
    ),
    "accept-edits does not waive it for other calls": (
        (None, None, "ask", PermissionMode.ACCEPT_EDITS, CallKind.OTHER),
        ("ask", "tool"),
    ),
    "accept-edits does not waive a hook's ask": (
        (None, "ask", "passthrough", PermissionMode.ACCEPT_EDITS, CallKind.EDIT),
        ("ask", "hook"),
    ),
    "bypass waives a hook's ask": (
        (None, "ask", "ask", PermissionMode.BYPASS, CallKind.OTHER),
        ("allow", "mode"),
    ),
    "plan denies an edit": (
        (None, "allow", "allow", PermissionMode.PLAN, CallKind.EDIT),
        ("deny", "mode"),
    ),
    "plan denies undeclared access": (
        ("allow", None, "passthrough", PermissionMode.PLAN, CallKind.OTHER),
        ("deny", "mode"),
    ),
    "plan runs a read-only call": (
        (None, None, "passthrough", PermissionMode.PLAN, CallKind.READ_ONLY),
        ("allow", "default"),
    ),
    "plan still asks when the tool asks": (
        (None, None, "ask", PermissionMode.PLAN, CallKind.READ_ONLY),
        ("ask", "tool"),
    ),
    "a deny rule is reported before a hook's deny": (
        ("deny", "deny", "deny", PermissionMode.PLAN, CallKind.OTHER),
        ("deny", "rule"),
    ),
}


@pytest.mark.parametrize("name", list(NAMED))
def test_named_rows(name: str) -> None:
    inputs, expected = NAMED[name]
    assert decide(*inputs) == expected


def test_a_deny_or_ask_rule_is_never_weakened() -> None:
    for rule, hook, check, mode, kind in ALL:
        outcome, _ = decide(rule, hook, check, mode, kind)
        if rule == "deny":
            assert outcome == "deny"
        if rule == "ask":
            assert outcome in ("ask", "deny")


def test_any_deny_denies_and_plan_runs_only_read_only_calls() -> None:
    for rule, hook, check, mode, kind in ALL:
        outcome, _ = decide(rule, hook, check, mode, kind)
        if "deny" in (rule, hook, check):
            assert outcome == "deny"
        if mode is PermissionMode.PLAN and kind is not CallKind.READ_ONLY:
            assert outcome == "deny"


def test_nobody_is_asked_unless_someone_asked() -> None:
    for rule, hook, check, mode, kind in ALL:
        outcome, _ = decide(rule, hook, check, mode, kind)
        if outcome == "ask":
            assert "ask" in (rule, hook, check)
            assert mode is not PermissionMode.BYPASS or rule == "ask"


@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_stricter_input_never_gives_a_more_permissive_outcome(position: int) -> None:
    """Fail closed: raising any one input's strictness never loosens the decision."""
    for row in ALL:
        for stricter in (RULES, HOOKS, CHECKS)[position]:
            current = cast("str | None", row[position])
            if STRICTNESS[stricter] <= STRICTNESS[current]:
                continue
            changed = cast("Row", (*row[:position], stricter, *row[position + 1 :]))
            before, _ = decide(*row)
            after, _ = decide(*changed)
            assert OUTCOME_RANK[after] >= OUTCOME_RANK[before], (row, changed)


def test_accept_edits_differs_from_default_only_for_edits() -> None:
    for rule, hook, check, _, kind in ALL:
        default = decide(rule, hook, check, PermissionMode.DEFAULT, kind)
        edits = decide(rule, hook, check, PermissionMode.ACCEPT_EDITS, kind)
        if default != edits:
            assert kind is CallKind.EDIT
            assert default == ("ask", "tool") and edits == ("allow", "mode")
