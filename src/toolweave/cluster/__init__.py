"""Scaling out: many agent sessions, and heavy tools, on Ray.

`run_batch` runs one session per task, locally with a bounded number at once
or as Ray tasks that stream their events back to the driver, which alone
writes results. `ray_tools` turns tools declared ``placement="ray"`` into
tools whose calls run as Ray tasks, scheduled by the Dispatcher like any other
tool. Ray is imported only when it is used. The command line (``toolweave
batch`` and its progress bar) lives in `toolweave.cli`: this layer imports
neither typer nor rich (an import-linter contract).
"""

from .._exceptions import BatchBusyError as BatchBusyError
from ._batch import run_batch as run_batch
from ._defaults import default_output_path as default_output_path
from ._defaults import describe_statistics as describe_statistics
from ._defaults import open_default_store as open_default_store
from ._journal import BatchJournal as BatchJournal
from ._journal import journal_path as journal_path
from ._liveness import Liveness as Liveness
from ._ray import connect_ray as connect_ray
from ._records import RecordWriter as RecordWriter
from ._records import SessionRecord as SessionRecord
from ._records import SessionStatus as SessionStatus
from ._records import load_records as load_records
from ._scripted import SCRIPTED_PREFIX as SCRIPTED_PREFIX
from ._scripted import model_from_spec as model_from_spec
from ._scripted import scripted_model as scripted_model
from ._scripted import scripted_spec as scripted_spec
from ._session import SessionSettings as SessionSettings
from ._session import ToolsFactory as ToolsFactory
from ._session import build_agent as build_agent
from ._storelink import Resumption as Resumption
from ._tally import BatchStatistics as BatchStatistics
from ._tally import EventSink as EventSink
from ._tasks import BatchTask as BatchTask
from ._tasks import Budget as Budget
from ._tasks import load_tasks as load_tasks
from ._tasks import parse_tasks as parse_tasks
from ._tools import RayTool as RayTool
from ._tools import ray_task_options as ray_task_options
from ._tools import ray_tools as ray_tools

__all__ = [
    "SCRIPTED_PREFIX",
    "BatchBusyError",
    "BatchJournal",
    "BatchStatistics",
    "BatchTask",
    "Budget",
    "EventSink",
    "Liveness",
    "RayTool",
    "RecordWriter",
    "Resumption",
    "SessionRecord",
    "SessionSettings",
    "SessionStatus",
    "ToolsFactory",
    "build_agent",
    "connect_ray",
    "default_output_path",
    "describe_statistics",
    "journal_path",
    "load_records",
    "load_tasks",
    "model_from_spec",
    "open_default_store",
    "parse_tasks",
    "ray_task_options",
    "ray_tools",
    "run_batch",
    "scripted_model",
    "scripted_spec",
]
