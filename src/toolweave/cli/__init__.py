"""The `toolweave` command."""

from . import _batch_command  # noqa: F401 - registers `toolweave batch` (toolweave.cluster)
from ._app import app as app
from ._app import main as main

__all__ = ["app", "main"]
