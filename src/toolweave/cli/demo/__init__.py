"""The demos: ``toolweave demo`` and ``toolweave demo --schedules``.

``toolweave demo`` runs a scripted coding session over a real git workspace;
``--schedules`` runs one simulated batch through every policy.

The simulated coding-agent tools (honest declarations, fake work) are public so
the scheduling benchmark compares the policies on the same batches:
`random_batch`, `run_simulated_batch`, and `lower_bound` (their dependency
bound, `toolweave.scheduling.dependency_bound`).
"""

from ._schedules import DEMO_BATCH as DEMO_BATCH
from ._schedules import run_schedules_demo as run_schedules_demo
from ._session import DemoResult as DemoResult
from ._session import demo_stats as demo_stats
from ._session import render_epilogue as render_epilogue
from ._session import render_summary as render_summary
from ._session import run_demo as run_demo
from ._simulated import SimCall as SimCall
from ._simulated import Span as Span
from ._simulated import lower_bound as lower_bound
from ._simulated import random_batch as random_batch
from ._simulated import run_simulated_batch as run_simulated_batch
from ._simulated import sim_registry as sim_registry

__all__ = [
    "DEMO_BATCH",
    "DemoResult",
    "SimCall",
    "Span",
    "demo_stats",
    "lower_bound",
    "random_batch",
    "render_epilogue",
    "render_summary",
    "run_demo",
    "run_schedules_demo",
    "run_simulated_batch",
    "sim_registry",
]
