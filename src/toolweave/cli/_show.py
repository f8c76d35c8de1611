"""`toolweave sessions` and `toolweave show`: stored sessions as tables and transcripts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..messages import Message, Thinking, ToolCall, ToolResult
from ..messages import Text as TextBlock
from ..sessions import (
    CallState,
    RunInfo,
    RunState,
    SessionInfo,
    SessionStore,
    owner_alive,
    suspension_from_store,
)
from ._audit_view import MARKER, stored_violations, violation_line
from ._turns import call_label

__all__ = ["render_sessions", "render_transcript", "run_state"]

_STATUS_STYLES = {
    "completed": "green",
    "running": "yellow",
    "crashed": "bold red",
    "error": "red",
    "suspended": "bold yellow",
}
_PREVIEW_LINES = 6


def run_state(run: RunInfo, session: SessionInfo | None = None) -> str:
    """How a run ended, or ``running`` / ``crashed (its process died)``.

    With its `session`, a run still RUNNING is live only if it is the session's
    last and the session reads ``running`` (its lease binds: see `lease_live`);
    without, only if its owner may be alive.
    """
    if run.state is RunState.RUNNING:
        if session is not None:
            live = run.run == session.runs and session.status == "running"
        else:
            live = owner_alive(run.owner)
        return "running" if live else "crashed (its process died)"
    return str(run.reason.value if run.reason is not None else run.state.value)


def _ago(wall: float) -> str:
    seconds = max(0.0, time.time() - wall)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


_WIDE = 120
"""Below this many columns, `sessions` shows only what identifies a session."""


def render_sessions(
    sessions: list[SessionInfo], *, width: int = _WIDE
) -> RenderableType:
    """A table of sessions, newest first, fitted to `width` columns.

    Narrow terminals get the id prefix (enough for `show`/`resume`), age,
    status and the title; the title, never the id, is what gets cut.
    """
    if not sessions:
        return Text(
            'No sessions yet. Try `toolweave demo` or `toolweave run "a task"`.'
        )
    wide = width >= _WIDE
    headers = ["id", "updated", "status"]
    if wide:
        headers += ["runs", "msgs", "tokens", "cost", "model"]
    rows = [_session_cells(s, wide=wide) for s in sessions]
    table = Table(show_edge=False, header_style="bold")
    for index, name in enumerate(headers):
        longest = max(len(name), *(len(str(row[index])) for row in rows))
        table.add_column(name, no_wrap=True, min_width=longest)
    table.add_column("title", no_wrap=True, overflow="ellipsis")
    for row, s in zip(rows, sessions, strict=True):
        table.add_row(*row, " ".join(s.title.split()))
    return table


def _session_cells(s: SessionInfo, *, wide: bool) -> list[str | Text]:
    cells: list[str | Text] = [
        s.id[:12] if wide else s.id[:8],
        _ago(s.updated_wall),
        Text(s.status, style=_STATUS_STYLES.get(s.status, "")),
    ]
    if wide:
        cells += [
            str(s.runs),
            str(s.messages),
            f"{s.usage.total_tokens:,}",
            f"${s.cost:.4f}",
            s.model,
        ]
    return cells


def _preview(text: str, full: bool) -> str:
    lines = text.splitlines() or [""]
    if full or len(lines) <= _PREVIEW_LINES:
        return "\n".join(lines)
    return "\n".join(
        [*lines[:_PREVIEW_LINES], f"… ({len(lines) - _PREVIEW_LINES} more lines)"]
    )


def _result_line(result: ToolResult, lost: list[ToolResult], full: bool) -> Text:
    if result in lost:
        mark, style = "? interrupted, outcome unknown", "bold yellow"
    elif result.synthetic:
        mark, style = "⊘ synthetic", "magenta"
    elif result.is_error:
        mark, style = "✗ error", "red"
    else:
        mark, style = "✓", "green"
    text = Text(f"  ↳ {result.call_id} ", style="dim")
    text.append(mark, style=style)
    body = _preview(result.text, full)
    text.append(
        "\n" + "\n".join("      " + line for line in body.splitlines()), style="dim"
    )
    return text


def _message(
    message: Message, lost: list[ToolResult], full: bool
) -> Iterator[RenderableType]:
    who = "user" if message.role == "user" else "assistant"
    style = "bold cyan" if who == "user" else "bold green"
    texts = [
        b.text for b in message.blocks if isinstance(b, TextBlock) and b.text.strip()
    ]
    if texts or not message.tool_results:
        yield Text(f"{who}:", style=style)
        for text in texts:
            yield Text("  " + _preview(text, full).replace("\n", "\n  "))
    for block in message.blocks:
        if isinstance(block, Thinking) and block.text:
            yield Text(f"  (thinking) {_preview(block.text, full)}", style="dim italic")
        elif isinstance(block, ToolCall):
            yield Text.from_markup(
                f"  [bold]⚙ {escape(call_label(block, 80))}[/] [dim]{escape(block.id)}[/]"
            )
        elif isinstance(block, ToolResult):
            yield _result_line(block, lost, full)


def _violations(store: SessionStore, session_id: str) -> Iterator[RenderableType]:
    """The declaration audit's findings, one line each (nothing when there are none)."""
    found = stored_violations(store, session_id)
    if not found:
        return
    yield Text(f"declaration violations: {len(found)}", style="bold magenta")
    for v in found:
        yield Text(f"  {MARKER} run {v.run} · {v.call_id} · {violation_line(v)}")


def _ran_from_discarded(store: SessionStore, session_id: str) -> Iterator[Text]:
    """Calls that ran from a response the gateway retried: in no message, but real."""
    for c in store.calls(session_id):
        if c.state is not CallState.DISCARDED or c.running_at is None:
            continue
        outcome = _first_line(c.result.text) if c.result is not None else "no result"
        yield Text(
            f"ran from a discarded (retried) response, run {c.run}:"
            f" {call_label(c.call, 60)} -> {outcome}",
            style="yellow",
        )


def _first_line(text: str, width: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no output)"
    return line if len(line) <= width else line[: width - 1] + "…"


def render_transcript(
    store: SessionStore, session_id: str, *, full: bool = False
) -> Iterator[RenderableType]:
    """The session's header, runs and messages, tool results shortened unless `full`."""
    session = store.find_session(session_id)
    yield Text.from_markup(
        f"[bold]{escape(session.title)}[/]\n[dim]session {session.id} · {escape(session.model)}"
        f" · {escape(session.workspace)}[/]"
    )
    for run in store.runs(session.id):
        yield Text(
            f"run {run.run}: {run_state(run, session)} · {run.usage.total_tokens:,} tokens"
            f" · ${run.cost:.4f}" + (f" · {run.detail}" if run.detail else ""),
            style="dim",
        )
    # The stored answers of lost calls (not their ids: models repeat ids).
    lost = [
        c.result
        for c in store.calls(session.id)
        if c.state is CallState.LOST and c.result is not None
    ]
    for message in store.messages(session.id):
        yield from _message(message, lost, full)
    yield from _ran_from_discarded(store, session.id)
    yield from _violations(store, session.id)
    yield from _waiting(store, session)
    yield Text(
        f"status: {session.status}", style=_STATUS_STYLES.get(session.status, "bold")
    )


def _waiting(store: SessionStore, session: SessionInfo) -> Iterator[RenderableType]:
    """What a suspended session waits for: each call, its input, why, and how to decide."""
    suspension = suspension_from_store(store, session.id, store.messages(session.id))
    if suspension is None:
        return
    lines = [f"waiting for a decision ({len(suspension.pending)}):"]
    for item in suspension.pending:
        shown = json.dumps(dict(item.input), ensure_ascii=False, default=str)
        if len(shown) > 300:
            shown = shown[:300] + "…"
        lines.append(f"  {item.key}  {item.tool} {shown}")
        lines.append(f"      why: {item.reason}")
        if item.rules:
            allow = ", ".join(json.dumps(r) for r in item.rules)
            lines.append(
                f"      allowed without asking by: permissions.allow = [{allow}]"
            )
    held = [
        c.ref
        for c in suspension.waiting
        if c.ref not in {p.key for p in suspension.pending}
    ]
    if held:
        lines.append(f"  held behind them, not started: {', '.join(held)}")
    sid = session.id[:12]
    lines.append(
        f"  decide: toolweave resume {sid} --approve KEY | --approve-always KEY"
        " | --deny KEY (one per waiting call)"
    )
    yield Text("\n".join(lines), style="yellow")
