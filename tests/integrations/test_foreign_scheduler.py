"""ForeignScheduler's `recover`: the framework's answer to what its execution raised.

With `recover`, `invoke` may hand back the framework's own awaitable (no
coroutine of the integration around it); the scheduler gives `recover` every
exception that is not a passthrough one, and keeps a passthrough exception
`recover` raises to re-raise after the batch, as one `invoke` raised.
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
