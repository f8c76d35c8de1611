"""The typer application behind the `toolweave` command."""

from __future__ import annotations

import anyio
import typer
from rich.console import Console

from ._demo_schedules import run_schedules_demo

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolweave",
    help="An agent runtime whose heart is safe parallel tool execution.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command()
def demo() -> None:
    """Run a scripted batch of simulated tools through every schedule (no API key needed)."""
    console = Console()
    anyio.run(run_schedules_demo, console)


@app.callback()
def _root() -> None:
    """An agent runtime whose heart is safe parallel tool execution."""


def main() -> None:
    """Console-script entry point."""
    app()
