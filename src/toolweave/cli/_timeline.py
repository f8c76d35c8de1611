"""`toolweave timeline`: a self-contained HTML page of what ran in parallel.

One section per iteration: the model's streaming interval on top, then one lane
per tool call with a bar from its start to its end, coloured by outcome (the
wait before it started drawn as a dashed box, a wait for the user's permission
as a violet one), and the batch's makespan against serial execution and the
dependency lower bound (time waiting for permission is shown as such and left
out of the makespan). The legend explains every
mark. Inline SVG, CSS and a few lines of JS; it loads nothing from the network.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from pathlib import Path

from ..sessions import RunInfo, SessionInfo, SessionStore
from ._audit_view import MARKER
from ._figures import fmt_seconds, stats_notes
from ._show import run_state
from ._timeline_data import CallBar, IterationGroup, load_groups, outcome_of
from ._turns import call_label

__all__ = ["render_timeline", "write_timeline"]

LABEL_W, CHART_W, LANE_H, BAR_H, AXIS_H = 340, 760, 24, 14, 26
_MIN_BAR = 3.0

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#212529;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:22px 0 4px}
.meta{color:#495057;margin-bottom:12px}
.stats{color:#495057;font-weight:normal;margin-left:10px} .stats b{color:#1864ab}
svg{display:block} text{font:12px ui-monospace,Menlo,Consolas,monospace;fill:#343a40}
.axis line{stroke:#dee2e6} .axis text{fill:#868e96;font-size:10px}
.model{fill:#748ffc} .first-chunk{stroke:#364fc7;stroke-width:2}
.wait{fill:none;stroke:#adb5bd;stroke-dasharray:3 2}
.ask{fill:#e5dbff;stroke:#7048e8;stroke-dasharray:1 2}
.bar{stroke:#0003;stroke-width:1} .ok{fill:#2f9e44} .error{fill:#e03131}
.synthetic,.skipped{fill:#adb5bd;stroke-dasharray:2 2} .lost{fill:#f08c00;stroke-dasharray:4 2}
.discarded{fill:#e9ecef} .running,.waiting{fill:#fab005}
.bar.focus{stroke:#000;stroke-width:2} .bar.hl{stroke:#1c7ed6;stroke-width:3}
.legend span.entry{display:inline-block;margin:0 14px 4px 0}
.legend svg{display:inline-block;margin-right:4px;vertical-align:middle}
.legend .hint{color:#868e96;display:block;margin-top:2px}
table.runs{border-collapse:collapse;margin:8px 0}
table.runs td,table.runs th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
"""

_JS = """
document.querySelectorAll('rect.bar').forEach(function(bar){
  bar.addEventListener('mouseenter',function(){
    bar.classList.add('focus');
    (bar.dataset.overlaps||'').split(' ').forEach(function(key){
      if(!key)return;
      var other=document.querySelector('rect.bar[data-key="'+key+'"]');
      if(other)other.classList.add('hl');});});
  bar.addEventListener('mouseleave',function(){
    document.querySelectorAll('rect.bar.hl,rect.bar.focus').forEach(function(e){
      e.classList.remove('hl','focus');});});});
"""

_LEGEND = (
    ("bar ok", "succeeded"),
    ("bar error", "failed"),
    (
        "wait",
        "waiting to start: admitted, held back by a call it conflicts with, a cap,"
        " or its checks and hooks",
    ),
    (
        "ask",
        "waiting for the user's answer to a permission ask (not counted in the"
        " batch's wall time)",
    ),
    ("bar running", "still running or waiting when the session was last seen"),
    ("bar synthetic", "synthetic result: never started, or cut short (dashed)"),
    ("bar lost", "interrupted, outcome unknown (the process died)"),
    (
        "bar discarded",
        "discarded attempt: its response was retried (a bar: it ran all the same)",
    ),
    ("model", "model streaming its response"),
    ("first-chunk", "the model's first chunk arrived"),
)
"""Every mark the page draws, drawn with the page's own classes, and what it means."""


def _legend_entry(css_class: str, text: str) -> str:
    if css_class == "first-chunk":
        mark = '<line class="first-chunk" x1="7" y1="0" x2="7" y2="12"/>'
    else:
        mark = f'<rect class="{css_class}" x="1" y="1" width="24" height="10"/>'
    return (
        f'<span class="entry"><svg width="26" height="12">{mark}</svg>{_e(text)}</span>'
    )


_LANE_NOTES = {
    "lost": "outcome unknown",
    "skipped": "never started",
    "discarded": "discarded attempt",
}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _ticks(span: float) -> list[float]:
    raw = span / 6
    step = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 5, 10):
        if step * factor >= raw:
            step *= factor
            break
    return [i * step for i in range(int(span / step) + 1)]


class _Scale:
    def __init__(self, bounds: tuple[float, float]) -> None:
        self.t0, self.t1 = bounds

    def x(self, t: float) -> float:
        return LABEL_W + (t - self.t0) / (self.t1 - self.t0) * CHART_W


def _axis(scale: _Scale, height: float) -> Iterator[str]:
    yield '<g class="axis">'
    for tick in _ticks(scale.t1 - scale.t0):
        x = scale.x(scale.t0 + tick)
        yield f'<line x1="{x:.1f}" y1="{AXIS_H - 6}" x2="{x:.1f}" y2="{height:.1f}"/>'
        yield f'<text x="{x + 2:.1f}" y="{AXIS_H - 10}">+{tick:.3g} s</text>'
    yield "</g>"


def _model_lane(group: IterationGroup, scale: _Scale) -> Iterator[str]:
    model = group.model
    y = AXIS_H
    yield f'<text x="4" y="{y + 16}">model · {_e(model.model if model else "?")}</text>'
    if model is None:
        return
    end = model.finished_at if model.finished_at is not None else scale.t1
    x0, x1 = scale.x(model.started_at), scale.x(end)
    yield (
        f'<rect class="model" x="{x0:.1f}" y="{y + 5}" width="{max(x1 - x0, _MIN_BAR):.1f}"'
        f' height="{BAR_H}"><title>model call {end - model.started_at:.3f} s'
        f" · {_e(model.stop_reason or 'unfinished')}</title></rect>"
    )
    if model.first_chunk_at is not None:
        xc = scale.x(model.first_chunk_at)
        yield f'<line class="first-chunk" x1="{xc:.1f}" y1="{y + 3}" x2="{xc:.1f}" y2="{y + 21}"/>'


def _tooltip(bar: CallBar, outcome: str) -> str:
    r = bar.record
    ran = (
        f"ran {bar.end - bar.start:.3f} s"
        if bar.start is not None and bar.end is not None
        else "never ran"
    )
    waited = ""
    if r.admitted_at is not None and r.running_at is not None:
        waited = f" · waited {r.running_at - r.admitted_at:.3f} s"
    asked = sum(hi - lo for lo, hi in bar.waits)
    if bar.waits:
        waited += f" (of which {asked:.3f} s for permission)"
    text = r.result.text[:300] if r.result is not None else ""
    audit = "".join(f"\n{MARKER}: {line}" for line in bar.violations)
    return _e(f"{call_label(r.call, 80)}\n{outcome} · {ran}{waited}{audit}\n{text}")


def _call_lane(
    bar: CallBar, row: int, group: IterationGroup, scale: _Scale
) -> Iterator[str]:
    r = bar.record
    outcome = outcome_of(r)
    y = AXIS_H + (row + 1) * LANE_H
    label = f"#{r.index + 1} {call_label(r.call, 40)}"
    if r.attempt > 1 or outcome == "discarded":
        label += f" (attempt {r.attempt})"
    if outcome in _LANE_NOTES:
        label += f" — {_LANE_NOTES[outcome]}"
        if outcome == "discarded" and r.running_at is not None:
            label += ", but it ran"
    if bar.violations:
        label += f" {MARKER}"
    yield f'<text x="4" y="{y + 16}">{_e(label)}</text>'
    anchor = (
        bar.start
        if bar.start is not None
        else (r.admitted_at if r.admitted_at is not None else scale.t1)
    )
    if r.admitted_at is not None and anchor > r.admitted_at:
        xa, xs = scale.x(r.admitted_at), scale.x(anchor)
        yield (
            f'<rect class="wait" x="{xa:.1f}" y="{y + 5}" width="{xs - xa:.1f}"'
            f' height="{BAR_H}"/>'
        )
    for lo, hi in bar.waits:
        xa, xs = scale.x(lo), scale.x(hi)
        yield (
            f'<rect class="ask" x="{xa:.1f}" y="{y + 5}" width="{max(xs - xa, 1.0):.1f}"'
            f' height="{BAR_H}"><title>waited {hi - lo:.3f} s for permission</title></rect>'
        )
    x0 = scale.x(anchor)
    x1 = scale.x(bar.end) if bar.start is not None and bar.end is not None else x0
    width = max(x1 - x0, _MIN_BAR)
    x0 = min(x0, LABEL_W + CHART_W - width)
    overlaps = " ".join(group.bars[i].key for i in bar.overlaps)
    yield (
        f'<rect class="bar {outcome}" data-call-id="{_e(r.call.id)}" data-key="{_e(bar.key)}"'
        f' data-outcome="{outcome}" data-overlaps="{_e(overlaps)}"'
        f' data-violations="{len(bar.violations)}" x="{x0:.1f}" y="{y + 5}"'
        f' width="{width:.1f}" height="{BAR_H}"><title>{_tooltip(bar, outcome)}</title></rect>'
    )


def _section(
    group: IterationGroup, multiple_runs: bool, span: float | None = None
) -> Iterator[str]:
    s = group.stats
    title = (
        f"Run {group.run} · iteration {group.iteration}"
        if multiple_runs
        else f"Iteration {group.iteration}"
    )
    stats = ""
    if group.bars:
        stats = (
            f"{s.calls} calls · batch <b>{fmt_seconds(s.makespan)}</b> · serial"
            f" {fmt_seconds(s.serial)} · lower bound {fmt_seconds(s.ideal)}"
            f" · <b>{s.speedup:.1f}x</b> faster than serial"
        ) + _e(stats_notes(s))
    yield (
        f'<section class="iteration" data-run="{group.run}" data-iteration="{group.iteration}">'
        f'<h2>{_e(title)}<span class="stats">{stats}</span></h2>'
    )
    start, end = group.bounds
    scale = _Scale((start, end if span is None else start + span))
    height = AXIS_H + (len(group.bars) + 1) * LANE_H + 6
    yield (
        f'<svg width="{LABEL_W + CHART_W + 20}" height="{height}" role="img"'
        f' data-span="{scale.t1 - scale.t0:.6f}">'
    )
    yield from _axis(scale, height)
    yield from _model_lane(group, scale)
    for row, bar in enumerate(group.bars):
        yield from _call_lane(bar, row, group, scale)
    yield "</svg></section>"


def _runs_table(runs: list[RunInfo], session: SessionInfo) -> str:
    rows = "".join(
        f"<tr><td>{r.run}</td>"
        f"<td>{_e(run_state(r, session) if r.reason is None else r.state.value)}</td>"
        f"<td>{_e(r.reason.value if r.reason else '')}</td><td>{r.usage.total_tokens:,}</td>"
        f"<td>${r.cost:.4f}</td><td>{_e(r.prompt[:100])}</td></tr>"
        for r in runs
    )
    return (
        '<table class="runs"><tr><th>run</th><th>state</th><th>ended</th><th>tokens</th>'
        f"<th>cost</th><th>prompt</th></tr>{rows}</table>"
    )


def render_timeline(
    session: SessionInfo,
    runs: list[RunInfo],
    groups: list[IterationGroup],
    *,
    same_scale: bool = False,
) -> str:
    """The HTML page (a string); see the module docstring.

    `same_scale` draws every iteration with the same seconds per pixel (the
    longest iteration fills the width), so their lengths can be compared;
    otherwise each iteration fills the width.
    """
    busy = [g for g in groups if g.bars]
    asked = sum(g.stats.permission_wait for g in busy)
    asked_note = f"; waited {fmt_seconds(asked)} for permission" if asked else ""
    wall = sum(g.stats.makespan for g in busy)
    serial = sum(g.stats.serial for g in busy)
    ideal = sum(g.stats.ideal for g in busy)
    calls = sum(len(g.bars) for g in groups)
    span = max((g.bounds[1] - g.bounds[0] for g in groups), default=None)
    span = span if same_scale else None
    scale_note = (
        "every iteration is drawn on one time scale"
        if same_scale
        else "each iteration fills the width (--same-scale: one time scale for all)"
    )
    legend = "".join(_legend_entry(c, t) for c, t in _LEGEND) + (
        '<span class="hint">hover a bar to outline the calls it overlapped · '
        f"{_e(MARKER)} after a call: it touched what it did not declare"
        f" (declaration audit) · {scale_note}</span>"
    )
    body = "".join(part for g in groups for part in _section(g, len(runs) > 1, span))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>toolweave timeline · {_e(session.title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{_e(session.title)}</h1>"
        f'<div class="meta">session {_e(session.id)} · {_e(session.model)}'
        f" · {_e(session.workspace)}"
        f" · {_e(session.status)} · {calls} tool calls · tool time {fmt_seconds(wall)} wall"
        f" vs {fmt_seconds(serial)} serial (lower bound {fmt_seconds(ideal)})"
        f"{_e(asked_note)}</div>"
        f'<div class="legend" id="legend">{legend}</div>{_runs_table(runs, session)}{body}'
        f"<script>{_JS}</script></body></html>"
    )


def write_timeline(
    store: SessionStore, session_id: str, path: Path, *, same_scale: bool = False
) -> tuple[Path, int]:
    """Write the timeline of a session to `path`; returns the path and the number of bars.

    Raises:
        StoreError: if the session cannot be read.
        OSError: if the file cannot be written.
    """
    session = store.find_session(session_id)
    groups = load_groups(store, session.id)
    page = render_timeline(
        session, store.runs(session.id), groups, same_scale=same_scale
    )
    path.write_text(page, encoding="utf-8")
    return path, sum(len(g.bars) for g in groups)
