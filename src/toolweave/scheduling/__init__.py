"""Scheduling: the gate, the policies and the Dispatcher. Knows nothing of models.

Usable on its own: hand `Dispatcher.dispatch` a list of calls, a registry and a
runner (``async (call) -> ToolResult``) from your own agent loop. `batch_stats`
and `dependency_bound` say what a batch took against what it must take.
"""

from ._calls import Runner as Runner
from ._calls import StartedWithAccess as StartedWithAccess
from ._config import ConcurrencyConfig as ConcurrencyConfig
from ._config import PolicyName as PolicyName
from ._dispatcher import Dispatcher as Dispatcher
from ._dispatcher import DispatcherStatistics as DispatcherStatistics
from ._gate import CallPlan as CallPlan
from ._gate import classify as classify
from ._gate import starts_early as starts_early
from ._gate import warm as warm
from ._interrupt import InterruptToken as InterruptToken
from ._makespan import BatchStats as BatchStats
from ._makespan import CallSpan as CallSpan
from ._makespan import DeclaredKeys as DeclaredKeys
from ._makespan import Interval as Interval
from ._makespan import batch_stats as batch_stats
from ._makespan import dependency_bound as dependency_bound
from ._makespan import overlapping as overlapping
from ._results import attach_results as attach_results
from ._results import results_of as results_of
from ._stream import SettledCall as SettledCall
from ._stream import ToolStream as ToolStream

__all__ = [
    "BatchStats",
    "CallPlan",
    "CallSpan",
    "ConcurrencyConfig",
    "DeclaredKeys",
    "Dispatcher",
    "DispatcherStatistics",
    "InterruptToken",
    "Interval",
    "PolicyName",
    "Runner",
    "SettledCall",
    "StartedWithAccess",
    "ToolStream",
    "attach_results",
    "batch_stats",
    "classify",
    "dependency_bound",
    "overlapping",
    "results_of",
    "starts_early",
    "warm",
]
