"""One call's lifecycle: validation, hooks, permissions, timeouts, result budgets.

It also holds the declaration audit (`ToolRunner(audit="warn" | "enforce")`),
which checks each running call's writes, process starts and connects against
its declared concurrency and `Access`; the rules are in `_audit_rules`.
"""

from ._audit import AuditMode as AuditMode
from ._audit import audit_mode_here as audit_mode_here
from ._audit import check_audit_mode as check_audit_mode
from ._audit import outside_audit as outside_audit
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
from ._runner import ToolRunner as ToolRunner
from ._runner_options import LifecycleKeywords as LifecycleKeywords
from ._runner_options import RunnerKeywords as RunnerKeywords
from ._runner_options import RunnerOptions as RunnerOptions
from ._runner_options import StartBarrier as StartBarrier
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
    "LifecycleKeywords",
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
    "RunnerKeywords",
    "RunnerOptions",
    "RunnerStatistics",
    "StartBarrier",
    "StopDecision",
    "StopHook",
    "StopInput",
    "SuspendPoint",
    "ToolOutput",
    "ToolRunner",
    "audit_mode_here",
    "audited",
    "check_audit_mode",
    "classify_call",
    "decide_permission",
    "make_preview",
    "outside_audit",
    "save_result",
]
