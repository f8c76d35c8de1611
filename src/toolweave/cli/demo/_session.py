"""`toolweave demo`: a scripted coding session over a real git workspace, then the numbers."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...events import RunFinished
from ...execution import PermissionMode
from ...loop import Agent, AgentConfig, ModelPrice, PriceTable
from ...scheduling import BatchStats, CallSpan, batch_stats
from ...sessions import CallState, SessionRecorder, SessionStore, SQLiteSessionStore
from ...tools import ToolRegistry
from .._build import coding_system_prompt, describe_access
from .._drive import drive_run
from .._figures import fmt_seconds
from .._output import LiveOutput
from .._timeline import write_timeline
from .._turns import TurnTracker
from ._script import DEMO_PROMPT, demo_model
from ._tools import DEMO_LATENCY, demo_tools
from ._workspace import make_workspace, python_command

__all__ = ["DemoResult", "demo_stats", "render_epilogue", "render_summary", "run_demo"]


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What the demo did and where it left it."""

    workspace: Path
    store_path: Path
    session_id: str
    timeline: Path
    stats: list[tuple[int, BatchStats]]
    finished: RunFinished | None


def _intro(workspace: Path) -> RenderableType:
    latency = ", ".join(
        f"{name} {seconds:.2f} s" for name, seconds in DEMO_LATENCY.items()
    )
    return Panel(
        Text.from_markup(
            "[bold]A scripted session[/]: no API key and no model: the model's replies were"
            " written in advance. [bold]Everything else is real[/]: the built-in tools read,"
            " search, edit and run commands in a fresh git repository at"
            f" [cyan]{escape(str(workspace))}[/], and toolweave's scheduler decides what"
            " runs at the same time.\n"
            f"[dim]To make the overlap visible, each call carries added latency ({latency}),"
            " as a remote sandbox would.[/]"
        ),
        title="toolweave demo",
        title_align="left",
        border_style="blue",
    )


def demo_stats(store: SessionStore, session_id: str) -> list[tuple[int, BatchStats]]:
    """Per-iteration batch stats of the session's first run (iterations with calls)."""
    by_iteration: dict[int, list[CallSpan]] = {}
    for record in store.calls(session_id):
        if record.run == 1 and record.state is not CallState.DISCARDED:
            span = CallSpan(record.running_at, record.finished_at, record.access)
            by_iteration.setdefault(record.iteration, []).append(span)
    return [(i, batch_stats(spans)) for i, spans in sorted(by_iteration.items())]


def _summary_row(table: Table, label: str, s: BatchStats, style: str = "") -> None:
    bound = s.makespan / s.ideal if s.ideal else 1.0
    table.add_row(
        label,
        str(s.calls),
        fmt_seconds(s.makespan),
        fmt_seconds(s.serial),
        fmt_seconds(s.ideal),
        f"{s.speedup:.1f}x faster",
        f"{bound:.2f}x the bound",
        style=style,
    )


def render_summary(stats: list[tuple[int, BatchStats]]) -> RenderableType:
    """The per-turn table: wall time against serial and against the lower bound."""
    table = Table(
        title="What parallel execution bought",
        title_justify="left",
        header_style="bold",
    )
    for name in (
        "turn",
        "calls",
        "wall",
        "serial",
        "lower bound",
        "vs serial",
        "vs bound",
    ):
        table.add_column(name, justify="right")
    for iteration, s in stats:
        _summary_row(table, str(iteration), s)
    total = BatchStats(
        calls=sum(s.calls for _, s in stats),
        makespan=sum(s.makespan for _, s in stats),
        serial=sum(s.serial for _, s in stats),
        ideal=sum(s.ideal for _, s in stats),
    )
    _summary_row(table, "all", total, style="bold")
    note = Text(
        "wall: first call's start to last call's end. serial: the same calls one after"
        " another. lower bound: the longest chain of calls that must wait for each other"
        " (an edit after a read of its file, a command that may write anything); no"
        " schedule that keeps the serial transcript can beat it.",
        style="dim",
    )
    return Group(table, note)


async def run_demo(
    console: Console, *, root: Path | None = None, store_path: Path | None = None
) -> DemoResult:
    """Create the workspace, run the scripted session live, print the summary. A checkpoint."""
    root = root or Path(tempfile.mkdtemp(prefix="toolweave-demo-"))
    workspace = (root / "calc").resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    git = make_workspace(workspace)
    store = SQLiteSessionStore(store_path or root / "sessions.db")
    try:
        console.print(_intro(workspace))
        registry = ToolRegistry(demo_tools(workspace))
        describe = describe_access(registry)
        agent = Agent(
            demo_model(python_command(), git=git),
            registry,
            system=coding_system_prompt(workspace, None),
            config=AgentConfig(
                workspace=workspace,
                audit="enforce",  # the built-in tools' declarations are honest
                # The demo's own scripted commands in a temporary workspace it just
                # made: nothing there to ask about (a real run asks by default).
                permission_mode=PermissionMode.BYPASS,
                prices=PriceTable(
                    {"scripted-demo": ModelPrice(0.0, 0.0)}
                ),  # free, and says so
            ),
        )
        session = store.create_session(
            workspace=str(workspace), model="scripted-demo", title=DEMO_PROMPT
        )
        recorder = SessionRecorder(
            store, session.id, model="scripted-demo", describe=describe
        )
        console.print(Text.from_markup(f"[bold cyan]user:[/] {escape(DEMO_PROMPT)}"))
        output = LiveOutput(console, TurnTracker(describe))
        output.audit = "enforce"
        result = await drive_run(
            agent, DEMO_PROMPT, recorder=recorder, output=output, handle_signals=True
        )
        stats = demo_stats(store, session.id)
        timeline, _ = write_timeline(store, session.id, root / "timeline.html")
        return DemoResult(
            workspace, store.path, session.id, timeline, stats, result.finished
        )
    finally:
        store.close()


def render_epilogue(result: DemoResult, *, default: bool = False) -> RenderableType:
    """Where to look next: the timeline page and the stored session.

    `default`: the session is in the default store, so the commands need no
    ``--store``.
    """
    sid = result.session_id[:12]
    where = "" if default else f" --store {escape(str(result.store_path))}"
    return Text.from_markup(
        f"Timeline of what ran in parallel: [bold]file://{escape(str(result.timeline))}[/]\n"
        f"[dim]Session stored in {escape(str(result.store_path))}:"
        f" toolweave show {sid}{where} · toolweave timeline {sid}{where}"
        f" · toolweave sessions{where}\n"
        'Try it on your code: toolweave run "your task" --model anthropic:claude-sonnet-4-5[/]'
    )
