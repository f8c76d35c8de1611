"""Scheduling: the gate, the policies and the Dispatcher. Knows nothing of models.

Usable on its own: hand `Dispatcher.dispatch` a list of calls, a registry and a
runner (``async (call) -> ToolResult``) from your own agent loop.
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
from ._results import attach_results as attach_results
from ._results import results_of as results_of
from ._stream import SettledCall as SettledCall
from ._stream import ToolStream as ToolStream

__all__ = [
    "CallPlan",
    "ConcurrencyConfig",
    "Dispatcher",
    "DispatcherStatistics",
    "InterruptToken",
    "PolicyName",
    "Runner",
    "SettledCall",
    "StartedWithAccess",
    "ToolStream",
    "attach_results",
    "classify",
    "results_of",
    "starts_early",
    "warm",
]
