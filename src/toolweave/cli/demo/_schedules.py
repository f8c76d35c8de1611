"""`toolweave demo --schedules`: one batch through every schedule, drawn as a timeline."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...scheduling import CallSpan, ConcurrencyConfig, overlapping
from ._simulated import SimCall, Span, lower_bound, run_simulated_batch

__all__ = ["DEMO_BATCH", "run_schedules_demo"]

DEMO_BATCH = [
    SimCall("read", "src/app.py", 0.30),
    SimCall("read", "src/util.py", 0.20),
    SimCall("read", "README.md", 0.15),
    SimCall("edit", "src/app.py", 0.25),
    SimCall("read", "src/util.py", 0.20),
    SimCall("grep", "tests", 0.25),
    SimCall("bash", "pytest -q", 0.30, readonly=False),
]

SCHEDULES: list[tuple[str, ConcurrencyConfig]] = [
    ("sequential", ConcurrencyConfig(enabled=False)),
    ("all_or_nothing", ConcurrencyConfig(policy="all_or_nothing")),
    ("partition", ConcurrencyConfig(policy="partition")),
    ("rwlock", ConcurrencyConfig(policy="rwlock")),
    ("conflict", ConcurrencyConfig(policy="conflict")),
]

WIDTH = 48


def _bar(span: Span, scale: float) -> Text:
    start = round(span.start * scale)
    length = max(1, round((span.end - span.start) * scale))
    text = Text(" " * start)
    text.append("█" * length, style="green")
    return text


def _overlaps(spans: list[Span], i: int) -> str:
    others = overlapping([CallSpan(s.start, s.end) for s in spans], i)
    return ",".join(str(j + 1) for j in others) or "-"


async def run_schedules_demo(console: Console) -> dict[str, float]:
    """Run the demo batch under every schedule; print timelines; return makespans."""
    serial = sum(c.duration for c in DEMO_BATCH)
    ideal = lower_bound(DEMO_BATCH)
    console.print(
        f"[bold]One batch of {len(DEMO_BATCH)} simulated tool calls[/bold] "
        f"(serial {serial:.2f}s, dependency lower bound {ideal:.2f}s)"
    )
    makespans: dict[str, float] = {}
    for name, config in SCHEDULES:
        makespan, spans = await run_simulated_batch(DEMO_BATCH, config)
        makespans[name] = makespan
        scale = WIDTH / serial
        table = Table(
            title=f"{name}: {makespan:.2f}s = {makespan / serial:.2f}x serial, "
            f"{makespan / ideal:.2f}x ideal",
            title_justify="left",
        )
        table.add_column("#", justify="right")
        table.add_column("call", no_wrap=True)
        table.add_column("timeline", no_wrap=True, min_width=WIDTH)
        table.add_column("overlaps")
        for i, (sim, span) in enumerate(zip(DEMO_BATCH, spans, strict=True)):
            table.add_row(str(i + 1), sim.label, _bar(span, scale), _overlaps(spans, i))
        console.print(table)
    return makespans
