"""A rich progress bar for ``toolweave batch``: done / running / failed, tokens and cost."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from ..cluster import BatchStatistics, describe_statistics

__all__ = ["batch_progress"]


@contextmanager
def batch_progress(
    console: Console | None = None,
) -> Iterator[Callable[[BatchStatistics], None]]:
    """Show a live progress bar for the block; yield the `on_update` callback to feed it.

    The bar counts sessions with a result (skipped ones included) out of the
    batch's total. Call the callback from one thread (the event loop's).
    """
    progress = Progress(
        TextColumn("[bold]batch"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[summary]}"),
        TimeElapsedColumn(),
        console=console,
    )
    with progress:
        task = progress.add_task("batch", total=None, summary="starting")

        def update(stats: BatchStatistics) -> None:
            progress.update(
                task,
                total=stats.total,
                completed=stats.skipped + stats.finished,
                summary=describe_statistics(stats),
            )

        yield update
