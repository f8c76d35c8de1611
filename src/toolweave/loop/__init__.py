"""The agent loop: Agent, its config and result, context, cost, guards, sub-agents, tracing.

Also the shell-hook protocol (`build_shell_hooks`, `load_hook_settings`): the
`toolweave.toml` hooks ``toolweave run`` and ``toolweave batch`` honour, for any agent.
"""

from ._agent import Agent as Agent
from ._budget import BudgetDecision as BudgetDecision
from ._budget import BudgetTracker as BudgetTracker
from ._budget import BudgetVerdict as BudgetVerdict
from ._compaction import Compacted as Compacted
from ._compaction import Compactor as Compactor
from ._compaction import drop_oldest_rounds as drop_oldest_rounds
from ._config import AgentConfig as AgentConfig
from ._context import AssembledContext as AssembledContext
from ._context import ContextAssembler as ContextAssembler
from ._context import ContextBlock as ContextBlock
from ._context import ContextKind as ContextKind
from ._context import ContextProvider as ContextProvider
from ._context import ContextRequest as ContextRequest
from ._context import DirectorySummaryContext as DirectorySummaryContext
from ._context import EnvironmentContext as EnvironmentContext
from ._context import GitContext as GitContext
from ._context import refreshes as refreshes
from ._cost import BUILTIN_PRICES as BUILTIN_PRICES
from ._cost import CostTracker as CostTracker
from ._cost import ModelCost as ModelCost
from ._cost import ModelPrice as ModelPrice
from ._cost import PriceTable as PriceTable
from ._cost import unpriced_model as unpriced_model
from ._guards import RepeatFailureWatcher as RepeatFailureWatcher
from ._guards import StalledIterationGuard as StalledIterationGuard
from ._hook_settings import PROJECT_FILE as PROJECT_FILE
from ._hook_settings import HookCommand as HookCommand
from ._hook_settings import HookSettings as HookSettings
from ._hook_settings import find_project_config as find_project_config
from ._hook_settings import load_hook_settings as load_hook_settings
from ._hook_settings import read_toml as read_toml
from ._hook_settings import settings_files as settings_files
from ._hook_settings import toolweave_home as toolweave_home
from ._hook_settings import user_config_path as user_config_path
from ._loop import NO_MODEL_REACHED as NO_MODEL_REACHED
from ._micro import MicroCompaction as MicroCompaction
from ._result import RunResult as RunResult
from ._run import AgentRun as AgentRun
from ._shell_hooks import build_shell_hooks as build_shell_hooks
from ._shell_hooks import run_hook_command as run_hook_command
from ._shell_verdicts import HookRun as HookRun
from ._steps import TransitionReason as TransitionReason
from ._subagent import FAILURE_MARKER as FAILURE_MARKER
from ._subagent import ChildAgent as ChildAgent
from ._subagent import SubAgentTool as SubAgentTool
from ._subagent import subagent as subagent
from ._suspended import check_decisions as check_decisions
from ._tracing import TracePolicy as TracePolicy
from ._transcript import TRUNCATION_MARKER as TRUNCATION_MARKER
from ._transcript import transcript_problems as transcript_problems
from ._transcript import validate_transcript as validate_transcript
from ._window import ContextGuard as ContextGuard
from ._window import ContextLevel as ContextLevel
from ._window import ContextVerdict as ContextVerdict

__all__ = [
    "BUILTIN_PRICES",
    "FAILURE_MARKER",
    "NO_MODEL_REACHED",
    "PROJECT_FILE",
    "TRUNCATION_MARKER",
    "Agent",
    "AgentConfig",
    "AgentRun",
    "AssembledContext",
    "BudgetDecision",
    "BudgetTracker",
    "BudgetVerdict",
    "ChildAgent",
    "Compacted",
    "Compactor",
    "ContextAssembler",
    "ContextBlock",
    "ContextGuard",
    "ContextKind",
    "ContextLevel",
    "ContextProvider",
    "ContextRequest",
    "ContextVerdict",
    "CostTracker",
    "DirectorySummaryContext",
    "EnvironmentContext",
    "GitContext",
    "HookCommand",
    "HookRun",
    "HookSettings",
    "MicroCompaction",
    "ModelCost",
    "ModelPrice",
    "PriceTable",
    "RepeatFailureWatcher",
    "RunResult",
    "StalledIterationGuard",
    "SubAgentTool",
    "TracePolicy",
    "TransitionReason",
    "build_shell_hooks",
    "check_decisions",
    "drop_oldest_rounds",
    "find_project_config",
    "load_hook_settings",
    "read_toml",
    "refreshes",
    "run_hook_command",
    "settings_files",
    "subagent",
    "toolweave_home",
    "transcript_problems",
    "unpriced_model",
    "user_config_path",
    "validate_transcript",
]
