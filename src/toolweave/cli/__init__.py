"""The `toolweave` command."""

from ._app import app as app
from ._app import main as main
from ._batch_command import StoreOpener as StoreOpener
from ._batch_command import make_batch_command as make_batch_command
from ._batch_progress import batch_progress as batch_progress

__all__ = ["StoreOpener", "app", "batch_progress", "main", "make_batch_command"]
