"""Result budgets: the per-tool threshold and the per-batch aggregate (as in Claude Code)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from pathlib import Path

import anyio.to_thread

from ..messages import ToolResult
from ._output import content_size, content_text
from ._persist import ReplacementLedger, replacement_text

__all__ = ["enforce_batch_budget", "persist_if_large", "sticky"]


def sticky(
    result: ToolResult, ledger: ReplacementLedger, key: str | None = None
) -> ToolResult:
    """`result` with the replacement it was given before, if any (prompt-cache stable).

    `key` is the call's key in `ledger` (default: the result's `call_id`).
    """
    text = ledger.get(result.call_id if key is None else key)
    if text is None or result.content == text:
        return result
    return dataclasses.replace(result, content=text)


async def persist_if_large(
    result: ToolResult,
    threshold: int | float | None,
    *,
    ledger: ReplacementLedger,
    results_dir: Path | None,
    preview_chars: int,
    key: str | None = None,
) -> ToolResult:
    """Persist `result` if its text exceeds `threshold` (None = never); else return it.

    The file is written on a worker thread (a checkpoint). Results holding an
    image are never persisted. The replacement is recorded in `ledger` under
    `key` (the call's `ToolCall.ref`; default: the result's `call_id`).
    """
    content = result.content
    if threshold is None or (isinstance(content, str) and len(content) <= threshold):
        return result
    text = content_text(content)
    if text is None or len(text) <= threshold:
        return result
    replacement, _ = await anyio.to_thread.run_sync(
        replacement_text, results_dir, result.call_id, text, preview_chars, key or ""
    )
    ledger.record(result.call_id if key is None else key, replacement)
    return dataclasses.replace(result, content=replacement)


def _largest(sizes: list[int], skip: set[int]) -> int | None:
    best: int | None = None
    for index, size in enumerate(sizes):
        if index not in skip and (best is None or size > sizes[best]):
            best = index
    return best


def enforce_batch_budget(
    results: Sequence[ToolResult],
    budget: int,
    *,
    ledger: ReplacementLedger,
    results_dir: Path | None,
    preview_chars: int,
    keys: Sequence[str] | None = None,
    exempt: Collection[int] = (),
) -> list[ToolResult]:
    """Apply sticky replacements, then persist the largest results until under `budget`.

    `keys` are the calls' keys in `ledger`, one per result (default: each
    result's `call_id`); pass them whenever ids may repeat. Results at the
    positions in `exempt` (tools with ``max_result_chars=None``, such as `read`,
    which pages instead) are never persisted, though they count toward the total.

    Order of persistence: largest first, the earlier call on a tie. A result
    already replaced, holding an image, or whose replacement would not be
    shorter is left alone; if nothing is left to shrink the batch stays over
    budget. Writes files synchronously (blocking I/O, only when over budget).
    """
    refs = [r.call_id for r in results] if keys is None else list(keys)
    out = [sticky(r, ledger, k) for r, k in zip(results, refs, strict=True)]
    sizes = [content_size(r.content) for r in out]
    total = sum(sizes)
    skip = {i for i, k in enumerate(refs) if k in ledger} | set(exempt)
    while total > budget:
        index = _largest(sizes, skip)
        if index is None:
            break
        skip.add(index)
        result = out[index]
        text = content_text(result.content)
        if text is None or len(text) <= preview_chars:
            continue
        replacement, _ = replacement_text(
            results_dir, result.call_id, text, preview_chars, refs[index]
        )
        if len(replacement) >= sizes[index]:
            continue
        ledger.record(refs[index], replacement)
        out[index] = dataclasses.replace(result, content=replacement)
        total -= sizes[index] - len(replacement)
        sizes[index] = len(replacement)
    return out
