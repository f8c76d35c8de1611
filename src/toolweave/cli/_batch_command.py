"""Registers ``toolweave batch`` (the command itself lives in `toolweave.cluster`).

Imported by `_app` once `app` exists; ``--store`` resolves exactly as for
``toolweave run`` (the option, else the settings, else the default database).
"""

from __future__ import annotations

from pathlib import Path

from ..cluster import make_batch_command
from ..sessions import SessionStore
from ._app import app
from ._help import Command
from ._session_run import open_store
from ._settings import load_settings

__all__ = ["open_batch_store"]


def open_batch_store(store: str | None) -> SessionStore:
    """The store named by ``--store``, else by the settings, else the default."""
    return open_store(store or load_settings(Path.cwd()).settings.store)


app.command("batch", cls=Command)(make_batch_command(open_batch_store))
