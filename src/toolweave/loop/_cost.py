"""Cost: a price table per model and the per-model accounting of a run."""

from __future__ import annotations

import contextvars
import json
import tomllib
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, final

from .._exceptions import ConfigError
from ..messages import Usage

__all__ = [
    "BUILTIN_PRICES",
    "CostTracker",
    "ModelCost",
    "ModelPrice",
    "PriceTable",
    "enclosing_costs",
    "unpriced_model",
]

_UNPRICED = "no price known for model {model!r}; its cost is counted as $0"


def unpriced_model(message: str) -> str | None:
    """The model a `Warning` of an unpriced model names, or None for other warnings.

    Lets a front end (the CLI) say it in its own words, or not at all for
    models that cost nothing (scripted, local).
    """
    head, sep, rest = message.partition("no price known for model ")
    if head or not sep:
        return None
    name, quote, _ = rest[1:].partition(rest[:1])
    return name if quote and rest[:1] in "'\"" else None


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What one model costs, in USD per million tokens."""

    input: float
    """Per million uncached input tokens."""
    output: float
    """Per million output tokens (reasoning included)."""
    _: KW_ONLY
    cache_read: float = 0.0
    """Per million input tokens served from the prompt cache."""
    cache_write: float = 0.0
    """Per million input tokens written to the prompt cache."""

    def cost(self, usage: Usage) -> float:
        """USD for `usage` at this price."""
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000


def _anthropic(inp: float, out: float) -> ModelPrice:
    # Anthropic: cache writes (5 min) cost 1.25x input, cache reads 0.1x input.
    return ModelPrice(inp, out, cache_read=inp / 10, cache_write=inp * 1.25)


def _openai(inp: float, out: float, cached: float) -> ModelPrice:
    # OpenAI bills cached input at a discount and has no separate cache-write price.
    return ModelPrice(inp, out, cache_read=cached, cache_write=inp)


BUILTIN_PRICES: Mapping[str, ModelPrice] = {
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-3-5-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-haiku": _anthropic(0.25, 1.25),
    "claude-3-opus": _anthropic(15.0, 75.0),
    "gpt-5.1": _openai(1.25, 10.0, 0.125),
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.40, 0.005),
    "gpt-4.1": _openai(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
    "gpt-4o": _openai(2.50, 10.0, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "o1": _openai(15.0, 60.0, 7.50),
    "o3": _openai(2.0, 8.0, 0.50),
    "o3-mini": _openai(1.10, 4.40, 0.55),
    "o4-mini": _openai(1.10, 4.40, 0.275),
}
"""Published list prices (USD per million tokens) of current Anthropic and OpenAI models.

Keys are model families; dated snapshots (``claude-sonnet-4-5-20250929``,
``gpt-4o-2024-08-06``) resolve to their family by longest prefix.
"""

_PROVIDER_PREFIXES = (
    "anthropic:",
    "openai:",
    "openai-compatible:",
    "openai-responses:",
)


def _price_from_mapping(model: str, raw: Any) -> ModelPrice:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"price of {model!r} must be a table, got {raw!r}")
    unknown = set(raw) - {"input", "output", "cache_read", "cache_write"}
    if unknown or not {"input", "output"} <= set(raw):
        raise ConfigError(
            f"price of {model!r} needs input and output (and optionally cache_read,"
            f" cache_write) in USD per million tokens; got keys {sorted(raw)}"
        )
    try:
        values = {key: float(value) for key, value in raw.items()}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"price of {model!r} has a non-numeric value: {exc}") from exc
    if any(v < 0 for v in values.values()):
        raise ConfigError(f"price of {model!r} has a negative value")
    return ModelPrice(
        values["input"],
        values["output"],
        cache_read=values.get("cache_read", 0.0),
        cache_write=values.get("cache_write", 0.0),
    )


@final
class PriceTable:
    """Looks up the price of a model by name. Read-only once built.

    Lookup strips a provider prefix (``anthropic:``), then tries the exact name,
    then the longest family key the name starts with followed by ``-`` (dated
    snapshots). Entries given here take precedence over the built-in table.
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice] | None = None,
        *,
        include_builtin: bool = True,
    ) -> None:
        self._prices: dict[str, ModelPrice] = (
            dict(BUILTIN_PRICES) if include_builtin else {}
        )
        self._prices.update(prices or {})
        self._by_length = sorted(self._prices, key=len, reverse=True)

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, include_builtin: bool = True
    ) -> PriceTable:
        """Build from ``{model: {input, output, cache_read?, cache_write?}}``.

        Raises:
            ConfigError: if an entry is malformed.
        """
        prices = {model: _price_from_mapping(model, raw) for model, raw in data.items()}
        return cls(prices, include_builtin=include_builtin)

    @classmethod
    def from_file(cls, path: str | Path, *, include_builtin: bool = True) -> PriceTable:
        """Load a ``.json`` or ``.toml`` file shaped like `from_mapping` wants.

        A TOML file may put the table under a ``[prices]`` key.

        Raises:
            ConfigError: if the file cannot be read or parsed, or an entry is malformed.
        """
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
            data = tomllib.loads(text) if file.suffix == ".toml" else json.loads(text)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load price table {file}: {exc}") from exc
        if isinstance(data, Mapping) and isinstance(data.get("prices"), Mapping):
            data = data["prices"]
        if not isinstance(data, Mapping):
            raise ConfigError(f"price table {file} must be a mapping of model to price")
        return cls.from_mapping(data, include_builtin=include_builtin)

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of `model`, or None if the table does not know it."""
        name = model
        for prefix in _PROVIDER_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        exact = self._prices.get(name)
        if exact is not None:
            return exact
        for key in self._by_length:
            if name.startswith(key + "-"):
                return self._prices[key]
        return None


@dataclass(frozen=True, slots=True)
class ModelCost:
    """Tokens and USD spent on one model during a run."""

    usage: Usage = field(default_factory=Usage)
    """Tokens used."""
    cost: float = 0.0
    """USD, 0.0 if the model is not priced."""
    _: KW_ONLY
    priced: bool = True
    """False if the price table did not know the model (its cost is counted as zero)."""


@final
class CostTracker:
    """Accumulates usage and cost per model for one run.

    Not thread-safe: the loop calls it from its own task only. An unknown model
    costs zero; `add` reports it once per model so the loop can warn once.
    """

    def __init__(self, table: PriceTable) -> None:
        self._table = table
        self._by_model: dict[str, ModelCost] = {}
        self._prices: dict[str, ModelPrice | None] = {}
        self.cost = 0.0
        """Total USD across models."""
        self.total_tokens = 0
        """Total tokens (input, cached, output) across models."""

    def _price(self, model: str) -> ModelPrice | None:
        try:
            return self._prices[model]
        except KeyError:
            price = self._prices[model] = self._table.price_of(model)
            return price

    def add(self, model: str, usage: Usage) -> str | None:
        """Count `usage` against `model`; return a warning text the first time it is unpriced."""
        price = self._price(model)
        before = self._by_model.get(model)
        cost = price.cost(usage) if price is not None else 0.0
        self.cost += cost
        self.total_tokens += usage.total_tokens
        if before is None:
            self._by_model[model] = ModelCost(usage, cost, priced=price is not None)
            if price is None:
                return _UNPRICED.format(model=model) + " (add it to AgentConfig.prices)"
            return None
        self._by_model[model] = ModelCost(
            before.usage + usage, before.cost + cost, priced=before.priced
        )
        return None

    def merge(self, other: CostTracker) -> None:
        """Add everything `other` counted (a sub-agent's run) to this tracker."""
        self.cost += other.cost
        self.total_tokens += other.total_tokens
        for model, entry in other._by_model.items():
            before = self._by_model.get(model)
            if before is None:
                self._by_model[model] = entry
            else:
                self._by_model[model] = ModelCost(
                    before.usage + entry.usage,
                    before.cost + entry.cost,
                    priced=before.priced and entry.priced,
                )

    @property
    def by_model(self) -> Mapping[str, ModelCost]:
        """Usage and cost per model, in first-use order (a copy)."""
        return dict(self._by_model)

    @property
    def usage(self) -> Usage:
        """Total usage across models."""
        total = Usage()
        for entry in self._by_model.values():
            total = total + entry.usage
        return total


enclosing_costs: contextvars.ContextVar[CostTracker | None] = contextvars.ContextVar(
    "toolweave_enclosing_costs", default=None
)
"""The cost tracker of the run whose tool is executing; a sub-agent's run adds to it.

Set by each run's loop task; tool tasks inherit it, so a child agent started by
a tool folds its usage and cost into its parent's when it finishes.
"""
