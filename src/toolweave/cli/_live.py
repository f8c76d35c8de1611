"""Rendering turns with rich: streamed text, then one row per tool call with a time bar."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from ..scheduling import BatchStats, overlapping
from ._audit_view import MARKER
from ._figures import fmt_seconds, stats_notes
from ._turns import CallRow, Turn, call_label

__all__ = ["STATE_STYLES", "render_stats", "render_turn"]

STATE_STYLES = {
    "waiting": "dim",
    "running": "bold yellow",
    "done": "green",
    "error": "bold red",
    "synthetic": "magenta",
}
_ICONS = {"waiting": "·", "running": "▶", "done": "✓", "error": "✗", "synthetic": "⊘"}
_LIVE_TEXT_LINES = 8


def _bounds(turn: Turn, now: float | None) -> tuple[float, float] | None:
    starts = [r.start for r in turn.rows.values() if r.start is not None]
    if not starts:
        return None
    ends = [
        r.end if r.end is not None else now
        for r in turn.rows.values()
        if r.start is not None
    ]
    end = max((e for e in ends if e is not None), default=max(starts))
    return min(starts), max(end, min(starts) + 1e-3)


def _bar(
    row: CallRow, bounds: tuple[float, float] | None, now: float | None, width: int
) -> Text:
    if bounds is None or row.start is None:
        return Text("")
    origin, last = bounds
    scale = width / (last - origin)
    end = row.end if row.end is not None else (now if now is not None else row.start)
    first = min(width - 1, int((row.start - origin) * scale))
    length = max(1, round((end - row.start) * scale))
    text = Text(" " * first)
    text.append("█" * min(length, width - first), style=STATE_STYLES[row.state])
    return text


def _widths(console_width: int) -> tuple[int, int]:
    """Widths of the call label and the time bar that fit `console_width` columns."""
    label = min(36, max(18, (console_width - 40) // 2))
    bar = max(10, min(48, console_width - 38 - label))
    return label, bar


def _elapsed(row: CallRow, now: float | None) -> str:
    if row.start is None:
        return ""
    end = row.end if row.end is not None else now
    return "" if end is None else f"{end - row.start:.2f}s"


def _state_cell(row: CallRow, state: str) -> Text:
    text = Text(f"{_ICONS[state]} {state}", style=STATE_STYLES[state])
    if row.violations:  # the declaration audit saw it do what it did not declare
        text.append(f" {MARKER}", style="bold magenta")
    return text


def render_stats(stats: BatchStats) -> Text:
    """``batch 0.45 s · serial 1.62 s · lower bound 0.42 s · 3.6x faster than serial``."""
    text = Text(f"batch {fmt_seconds(stats.makespan)}", style="bold")
    text.append(
        f" · serial {fmt_seconds(stats.serial)} · lower bound {fmt_seconds(stats.ideal)} · "
    )
    text.append(f"{stats.speedup:.1f}x faster than serial", style="bold cyan")
    notes = stats_notes(stats)
    if notes:
        text.append(notes, style="magenta")
    return text


def _table(turn: Turn, now: float | None, console_width: int) -> Table:
    rows = list(turn.rows.values())
    spans = [r.span() for r in rows]
    bounds = _bounds(turn, now)
    label_width, bar_width = _widths(console_width)
    table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("call", no_wrap=True, width=label_width)
    table.add_column("state", no_wrap=True, min_width=11)
    table.add_column("time", justify="right", no_wrap=True, min_width=5)
    table.add_column("when", no_wrap=True, width=bar_width)
    table.add_column("overlaps", no_wrap=True, style="dim")
    for i, row in enumerate(rows):
        state = row.state
        others = overlapping(spans, i, now=now)
        table.add_row(
            str(i + 1),
            call_label(row.call, label_width),
            _state_cell(row, state),
            _elapsed(row, now),
            _bar(row, bounds, now, bar_width),
            ",".join(str(j + 1) for j in others) or "-",
        )
    return table


def render_turn(
    turn: Turn, *, now: float | None = None, live: bool = False, width: int = 80
) -> RenderableType:
    """One turn: a rule, the model's text, the call table and the batch summary.

    With `live`, only the last lines of the text are shown (the rest scrolls);
    `width` is the console's, which the table is fitted to.
    """
    model = ""
    if turn.model_start is not None:
        end = turn.model_end if turn.model_end is not None else now
        if end is not None:
            model = f" · model {end - turn.model_start:.2f} s"
    parts: list[RenderableType] = [
        Rule(f"iteration {turn.number}{model}", align="left", style="blue")
    ]
    text = turn.text.strip()
    if text:
        if live:
            text = "\n".join(text.splitlines()[-_LIVE_TEXT_LINES:])
        parts.append(Text(text))
    if turn.rows:
        parts.append(_table(turn, now, width))
        if all(r.result is not None for r in turn.rows.values()) and len(turn.rows) > 1:
            parts.append(render_stats(turn.stats()))
    parts.extend(Text(f"! {note}", style="yellow") for note in turn.notes)
    hint = turn.interrupt_hint() if live else None
    if hint is not None:  # only while it can still be acted on
        parts.append(Text(hint, style="dim"))
    return Group(*parts)
