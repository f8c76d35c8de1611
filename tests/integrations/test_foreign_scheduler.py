"""ForeignScheduler's `recover`: the framework's answer to what its execution raised.

With `recover`, `invoke` may hand back the framework's own awaitable (no
coroutine of the integration around it); the scheduler gives `recover` every
exception that is not a passthrough one, and keeps a passthrough exception
`recover` raises to re-raise after the batch, as one `invoke` raised.

Also the Dispatcher a finished batch leaves idle, lent to the next batch on the
same loop: batches at once still each have their own cap, a cancelled batch
lends nothing, and no Dispatcher crosses event loops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

import anyio.lowlevel
import pytest

from toolweave.integrations._declaration import Declaration
from toolweave.integrations._foreign import ForeignCall, ForeignScheduler, Raised
from toolweave.tools import Concurrency

pytestmark = pytest.mark.anyio


class Bubble(Exception):
    """A framework's control flow (a passthrough type)."""


class Unanswerable(Exception):
    """Raised by `recover` for an error no answer fits (passthrough too)."""


async def _work(args: Mapping[str, Any]) -> str:
    await anyio.lowlevel.checkpoint()
    how = args["how"]
    if how == "ok":
        return f"done {args['n']}"
    if how == "error value":
        return "ERROR: handled by the framework"
    if how == "bubble":
        raise Bubble("interrupt")
    raise ValueError(f"failed {how}")


def _invoke(index: int, args: Mapping[str, Any]) -> Awaitable[str]:
    return _work(args)  # the awaitable itself, as LangGraph's node gives it


def _describe(value: str) -> str | Raised:
    return Raised(value) if value.startswith("ERROR") else value


def _recover(index: int, exc: Exception) -> str:
    if "unanswerable" in str(exc):
        raise Unanswerable(str(exc)) from exc
    return f"ERROR: recovered {type(exc).__name__}: {exc}"


def _calls(*hows: str) -> list[ForeignCall]:
    return [ForeignCall(f"c{i}", "t", {"how": h, "n": i}) for i, h in enumerate(hows)]


def _scheduler() -> ForeignScheduler:
    return ForeignScheduler({"t": Declaration(concurrency=Concurrency.SAFE)})


@pytest.mark.parametrize(
    ("how", "value", "text", "is_error"),
    [
        ("ok", "done 0", "done 0", False),
        ("error value", "ERROR: handled by the framework", None, True),
        ("raises", "ERROR: recovered ValueError: failed raises", None, True),
    ],
)
async def test_recover_answers_what_the_framework_raised(
    how: str, value: str, text: str | None, is_error: bool
) -> None:
    [outcome] = await _scheduler().run(
        _calls(how), _invoke, _describe, passthrough=(Bubble,), recover=_recover
    )
    assert outcome.ran
    assert outcome.value == value
    assert outcome.result.is_error is is_error
    assert outcome.result.text == (value if text is None else text)


async def test_without_recover_a_raise_is_an_error_result_and_no_value() -> None:
    [outcome] = await _scheduler().run(_calls("raises"), _invoke, _describe)
    assert not outcome.ran
    assert outcome.value is None
    assert outcome.result.is_error
    assert outcome.result.text == "ValueError: failed raises"


@pytest.mark.parametrize("how", ["bubble", "unanswerable"])
async def test_a_passthrough_raised_by_the_call_or_by_recover_is_raised_after_all(
    how: str,
) -> None:
    seen: list[int] = []

    def recover(index: int, exc: Exception) -> str:
        seen.append(index)
        return _recover(index, exc)

    expected = Bubble if how == "bubble" else Unanswerable
    with pytest.raises(expected) as caught:
        await _scheduler().run(
            _calls("ok", how, how),
            _invoke,
            _describe,
            passthrough=(Bubble, Unanswerable),
            recover=recover,
        )
    assert "interrupt" in str(caught.value) or "failed unanswerable" in str(
        caught.value
    )
    # a passthrough exception never reaches recover; recover's own is kept
    assert seen == ([] if how == "bubble" else [1, 2])


# -- the Dispatcher a finished batch leaves idle is lent to the next one ----------


class _Inside:
    """Counts calls inside at once; `wait_for(n)` releases them once n are inside."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.enough = anyio.Event()
        self.target = 0

    async def run(self, args: Mapping[str, Any]) -> str:
        self.now += 1
        self.most = max(self.most, self.now)
        if self.now >= self.target:
            self.enough.set()
        try:
            await self.enough.wait()
        finally:
            self.now -= 1
        return f"done {args['n']}"


def _capped(cap: int) -> ForeignScheduler:
    from toolweave.scheduling import ConcurrencyConfig

    return ForeignScheduler(
        {"t": Declaration(concurrency=Concurrency.SAFE)},
        config=ConcurrencyConfig(max_concurrency=cap),
    )


async def test_batches_at_once_each_keep_their_own_cap_after_a_lent_dispatcher() -> (
    None
):
    scheduler = _capped(2)
    first = await scheduler.run(_calls("ok", "ok"), _invoke, _describe)
    assert [o.value for o in first] == ["done 0", "done 1"]
    lent = scheduler._spare  # the first batch's Dispatcher, idle now
    assert lent is not None
    inside = _Inside()
    inside.target = 4  # two batches of two, each under its own cap of 2

    async def batch() -> None:
        outcomes = await scheduler.run(
            _calls("ok", "ok"), lambda i, a: inside.run(a), _describe
        )
        assert [o.value for o in outcomes] == ["done 0", "done 1"]

    with anyio.fail_after(10):  # one shared cap of 2 would never let 4 in
        async with anyio.create_task_group() as tg:
            tg.start_soon(batch)
            tg.start_soon(batch)
    assert inside.most == 4
    # one of the two ran on the lent Dispatcher; the other built its own
    assert scheduler._spare is not None


async def test_the_next_batch_on_a_lent_dispatcher_keeps_the_cap() -> None:
    scheduler = _capped(2)
    await scheduler.run(_calls("ok", "ok"), _invoke, _describe)
    lent = scheduler._spare
    assert lent is not None
    inside = _Inside()
    inside.target = 2
    outcomes = await scheduler.run(
        _calls(*["ok"] * 5), lambda i, a: inside.run(a), _describe
    )
    assert [o.value for o in outcomes] == [f"done {i}" for i in range(5)]
    assert inside.most == 2  # reached, never passed
    assert scheduler._spare is not None and scheduler._spare[1] is lent[1]


async def test_a_cancelled_batch_lends_nothing_and_the_next_runs_whole() -> None:
    scheduler = _capped(2)
    stuck = anyio.Event()

    async def hang(args: Mapping[str, Any]) -> str:
        stuck.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            scheduler.run, _calls("ok", "ok"), lambda i, a: hang(a), _describe
        )
        await stuck.wait()
        tg.cancel_scope.cancel()
    assert scheduler._spare is None
    outcomes = await scheduler.run(_calls("ok", "ok", "ok"), _invoke, _describe)
    assert [o.value for o in outcomes] == ["done 0", "done 1", "done 2"]


def test_a_dispatcher_is_never_lent_to_another_event_loop() -> None:
    import asyncio

    scheduler = _capped(2)

    async def one() -> tuple[list[str | None], object]:
        outcomes = await scheduler.run(_calls("ok", "ok"), _invoke, _describe)
        assert scheduler._spare is not None
        return [o.value for o in outcomes], scheduler._spare[1]

    values_a, dispatcher_a = asyncio.run(one())
    values_b, dispatcher_b = asyncio.run(one())
    assert values_a == values_b == ["done 0", "done 1"]
    assert dispatcher_b is not dispatcher_a
