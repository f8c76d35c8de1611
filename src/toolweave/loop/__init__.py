"""The agent loop: Agent, its config and result, context, cost, guards, sub-agents, tracing."""

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
from ._loop import NO_MODEL_REACHED as NO_MODEL_REACHED
from ._result import RunResult as RunResult
from ._run import AgentRun as AgentRun
from ._steps import TransitionReason as TransitionReason
from ._subagent import FAILURE_MARKER as FAILURE_MARKER
from ._subagent import ChildAgent as ChildAgent
from ._subagent import SubAgentTool as SubAgentTool
from ._subagent import subagent as subagent
from ._tracing import TracePolicy as TracePolicy
from ._transcript import TRUNCATION_MARKER as TRUNCATION_MARKER
from ._transcript import transcript_problems as transcript_problems
from ._transcript import validate_transcript as validate_transcript

__all__ = [
    "BUILTIN_PRICES",
    "FAILURE_MARKER",
    "NO_MODEL_REACHED",
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
    "ContextKind",
    "ContextProvider",
    "ContextRequest",
    "CostTracker",
    "DirectorySummaryContext",
    "EnvironmentContext",
    "GitContext",
    "ModelCost",
    "ModelPrice",
    "PriceTable",
    "RepeatFailureWatcher",
    "RunResult",
    "StalledIterationGuard",
    "SubAgentTool",
    "TracePolicy",
    "TransitionReason",
    "drop_oldest_rounds",
    "refreshes",
    "subagent",
    "transcript_problems",
    "unpriced_model",
    "validate_transcript",
]
