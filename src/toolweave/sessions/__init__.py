"""Durable sessions: a store interface, its SQLite default, a recorder and resume.

Layering: this package imports only `toolweave.events`, `toolweave.messages` and
the error tree (import-linter checks it), so every layer above — the loop, the
Ray cluster backend, the CLI — can record and reload sessions without pulling
in each other. It consumes the *event protocol*, not the loop's internals:
`SessionRecorder` works for any loop that emits `toolweave.events`; attached
to a run (`Agent.open_run(..., recorder=...)`) it writes off the event loop and
holds each tool call at a start barrier until its start is durable.
"""

from ._codec import BlobSink as BlobSink
from ._codec import event_to_json as event_to_json
from ._codec import message_from_json as message_from_json
from ._codec import message_to_json as message_to_json
from ._lease import DEFAULT_LEASE_TERM as DEFAULT_LEASE_TERM
from ._lease import SessionLease as SessionLease
from ._owner import current_owner as current_owner
from ._owner import lease_live as lease_live
from ._owner import owner_alive as owner_alive
from ._recorder import AccessDescriber as AccessDescriber
from ._recorder import Pricer as Pricer
from ._recorder import SessionRecorder as SessionRecorder
from ._records import AccessRecord as AccessRecord
from ._records import CallRecord as CallRecord
from ._records import CallState as CallState
from ._records import EventRecord as EventRecord
from ._records import LeaseInfo as LeaseInfo
from ._records import ModelCallRecord as ModelCallRecord
from ._records import RunInfo as RunInfo
from ._records import RunState as RunState
from ._records import SessionInfo as SessionInfo
from ._results_dir import results_dir_beside as results_dir_beside
from ._resume import RESUME_PROMPT as RESUME_PROMPT
from ._resume import ResumePlan as ResumePlan
from ._resume import lost_result as lost_result
from ._resume import prepare_resume as prepare_resume
from ._resume import read_state as read_state
from ._resume import skipped_result as skipped_result
from ._sqlite import DEFAULT_BLOB_THRESHOLD as DEFAULT_BLOB_THRESHOLD
from ._sqlite import DEFAULT_BUSY_TIMEOUT as DEFAULT_BUSY_TIMEOUT
from ._sqlite import SQLiteSessionStore as SQLiteSessionStore
from ._store import RunOutcome as RunOutcome
from ._store import SessionStore as SessionStore
from ._suspension import Suspension as Suspension
from ._suspension import suspension_from_store as suspension_from_store

__all__ = [
    "DEFAULT_BLOB_THRESHOLD",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_LEASE_TERM",
    "RESUME_PROMPT",
    "AccessDescriber",
    "AccessRecord",
    "BlobSink",
    "CallRecord",
    "CallState",
    "EventRecord",
    "LeaseInfo",
    "ModelCallRecord",
    "Pricer",
    "ResumePlan",
    "RunInfo",
    "RunOutcome",
    "RunState",
    "SQLiteSessionStore",
    "SessionInfo",
    "SessionLease",
    "SessionRecorder",
    "SessionStore",
    "Suspension",
    "current_owner",
    "event_to_json",
    "lease_live",
    "lost_result",
    "message_from_json",
    "message_to_json",
    "owner_alive",
    "prepare_resume",
    "read_state",
    "results_dir_beside",
    "skipped_result",
    "suspension_from_store",
]
