"""One call's lifecycle: validation, hooks, permissions, timeouts, result budgets.

It also holds the declaration audit (`ToolRunner(audit="warn" | "enforce")`),
which checks each running call's writes, process starts and connects against
its declared concurrency and `Access`; the rules are in `_audit_rules`.
"""

from ._audit import AuditMode as AuditMode
from ._audit_runner import audited as audited
from ._authorize import AskAnswer as AskAnswer
from ._authorize import AskHandler as AskHandler
from ._config import ExecutionConfig as ExecutionConfig
from ._decision import CallKind as CallKind
from ._decision import HookVerdict as HookVerdict
from ._decision import PermissionDecision as PermissionDecision
from ._decision import PermissionMode as PermissionMode
from ._decision import classify_call as classify_call
from ._decision import decide_permission as decide_permission
from ._hooks import HookPermission as HookPermission
from ._hooks import Hooks as Hooks
from ._hooks import PostToolUseDecision as PostToolUseDecision
from ._hooks import PostToolUseFailureHook as PostToolUseFailureHook
from ._hooks import PostToolUseFailureInput as PostToolUseFailureInput
from ._hooks import PostToolUseHook as PostToolUseHook
from ._hooks import PostToolUseInput as PostToolUseInput
from ._hooks import PreToolUseDecision as PreToolUseDecision
from ._hooks import PreToolUseHook as PreToolUseHook
from ._hooks import PreToolUseInput as PreToolUseInput
from ._hooks import StopDecision as StopDecision
from ._hooks import StopHook as StopHook
from ._hooks import StopInput as StopInput
from ._output import ToolOutput as ToolOutput
from ._persist import make_preview as make_preview
from ._persist import save_result as save_result
from ._rules import PermissionRule as PermissionRule
from ._rules import PermissionRules as PermissionRules
from ._rules import RuleVerdict as RuleVerdict
from ._run_deadline import RunDeadline as RunDeadline
from ._run_start import RunStartDecision as RunStartDecision
from ._run_start import RunStartHook as RunStartHook
from ._run_start import RunStartInput as RunStartInput
from ._run_start import RunStartOutcome as RunStartOutcome
from ._runner import RunnerStatistics as RunnerStatistics
from ._runner import StartBarrier as StartBarrier
from ._runner import ToolRunner as ToolRunner
from ._signals import BatchSignals as BatchSignals
from ._suspend import Decision as Decision
from ._suspend import SuspendPoint as SuspendPoint

__all__ = [
    "AskAnswer",
    "AskHandler",
    "AuditMode",
    "BatchSignals",
    "CallKind",
    "Decision",
    "ExecutionConfig",
    "HookPermission",
    "HookVerdict",
    "Hooks",
    "PermissionDecision",
    "PermissionMode",
    "PermissionRule",
    "PermissionRules",
    "PostToolUseDecision",
    "PostToolUseFailureHook",
    "PostToolUseFailureInput",
    "PostToolUseHook",
    "PostToolUseInput",
    "PreToolUseDecision",
    "PreToolUseHook",
    "PreToolUseInput",
    "RuleVerdict",
    "RunDeadline",
    "RunStartDecision",
    "RunStartHook",
    "RunStartInput",
    "RunStartOutcome",
    "RunnerStatistics",
    "StartBarrier",
    "StopDecision",
    "StopHook",
    "StopInput",
    "SuspendPoint",
    "ToolOutput",
    "ToolRunner",
    "audited",
    "classify_call",
    "decide_permission",
    "make_preview",
    "save_result",
]
