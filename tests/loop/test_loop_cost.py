"""Prices, per-model cost accounting, and the one warning for unpriced models."""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_support import add, call, config, run_collect, say, scripted, use

from toolweave._exceptions import ConfigError
from toolweave.events import CompletionReason, Warning
from toolweave.loop import BUILTIN_PRICES, Agent, CostTracker, ModelPrice, PriceTable
from toolweave.messages import Usage


def test_lookup_by_family_snapshot_and_prefix() -> None:
    table = PriceTable()
    sonnet = BUILTIN_PRICES["claude-sonnet-4-5"]
    assert table.price_of("claude-sonnet-4-5") == sonnet
    assert table.price_of("claude-sonnet-4-5-20250929") == sonnet
    assert table.price_of("anthropic:claude-sonnet-4-5") == sonnet
    assert table.price_of("gpt-4o-mini-2024-07-18") == BUILTIN_PRICES["gpt-4o-mini"]
    assert table.price_of("gpt-4o-2024-08-06") == BUILTIN_PRICES["gpt-4o"]
    assert table.price_of("openai:o3") == BUILTIN_PRICES["o3"]
    assert table.price_of("o3-mini") == BUILTIN_PRICES["o3-mini"]
    assert table.price_of("gpt-4ox") is None
    assert table.price_of("llama-3") is None


def test_cost_arithmetic() -> None:
    price = ModelPrice(3.0, 15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        1_000_000, 100_000, cache_read_tokens=2_000_000, cache_write_tokens=400_000
    )
    assert price.cost(usage) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)


def test_tables_load_from_json_and_toml(tmp_path: Path) -> None:
    json_file = tmp_path / "prices.json"
    json_file.write_text('{"my-model": {"input": 1, "output": 2, "cache_read": 0.1}}')
    table = PriceTable.from_file(json_file)
    assert table.price_of("my-model") == ModelPrice(1.0, 2.0, cache_read=0.1)
    assert table.price_of("gpt-4o") is not None  # the built-in table is kept

    toml_file = tmp_path / "prices.toml"
    toml_file.write_text('[prices."gpt-4o"]\ninput = 9\noutput = 9\n')
    only = PriceTable.from_file(toml_file, include_builtin=False)
    assert only.price_of("gpt-4o") == ModelPrice(9.0, 9.0)
    assert only.price_of("claude-sonnet-4-5") is None


@pytest.mark.parametrize(
    "text",
    [
        '{"m": {"input": 1}}',
        '{"m": {"input": 1, "output": "x"}}',
        '{"m": {"input": -1, "output": 1}}',
        "[1]",
        "{",
    ],
)
def test_malformed_tables_are_config_errors(tmp_path: Path, text: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(ConfigError):
        PriceTable.from_file(bad)


def test_tracker_warns_once_per_unpriced_model_and_merges() -> None:
    tracker = CostTracker(PriceTable())
    assert tracker.add("mystery", Usage(5, 5)) is not None
    assert tracker.add("mystery", Usage(5, 5)) is None
    assert tracker.add("gpt-4o", Usage(1_000_000, 0)) is None
    child = CostTracker(PriceTable())
    child.add("gpt-4o", Usage(1_000_000, 0))
    tracker.merge(child)
    assert tracker.by_model["gpt-4o"].cost == pytest.approx(5.0)
    assert tracker.by_model["mystery"].usage == Usage(10, 10)
    assert not tracker.by_model["mystery"].priced
    assert tracker.cost == pytest.approx(5.0)


@pytest.mark.anyio
async def test_run_reports_cost_per_model_and_one_warning() -> None:
    model = scripted(
        use(call("a", "add", a=1, b=1), usage=Usage(1_000_000, 100_000)),
        say("2", usage=Usage(1_000_000, 0)),
        name="gpt-4o",
    )
    table = PriceTable({"gpt-4o": ModelPrice(2.0, 10.0)})
    result, events = await run_collect(Agent(model, [add], config=config(prices=table)))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.cost == pytest.approx(2.0 + 1.0 + 2.0)
    assert not [e for e in events if isinstance(e, Warning)]

    unpriced = scripted(use(call("a", "add", a=1, b=1)), say("2"), name="homebrew-7b")
    result, events = await run_collect(Agent(unpriced, [add]))
    assert result.cost == 0.0
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert len(warnings) == 1 and "homebrew-7b" in warnings[0]
