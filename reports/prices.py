"""The price table of ``bench report --prices FILE``: USD per 1M tokens per model, and each run's cost from its usage.

The file (YAML or JSON) maps a model name, exactly as traces name it, to its prices::

    gpt-4o-mini: {input: 0.15, output: 0.60, cached_input: 0.075}
    smollm2-135m: {input: 0, output: 0}

``cached_input`` (prompt tokens served from the provider's cache) defaults to ``input``. Reasoning
tokens are part of the completion tokens and billed as output. A model missing from the file is
unpriced: its runs have no cost (NaN), never a cost of zero.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import UserInputError

PER_TOKENS = 1_000_000


class Price(BaseModel):
    """USD per 1M tokens for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="USD per 1M prompt tokens not served from a cache")
    output: float = Field(ge=0, description="USD per 1M completion tokens (reasoning tokens included)")
    cached_input: float | None = Field(
        default=None, ge=0, description="USD per 1M cached prompt tokens; default: input"
    )

    @field_validator("input", "output", "cached_input")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @property
    def cached(self) -> float:
        return self.input if self.cached_input is None else self.cached_input


PriceTable = dict[str, Price]


def load_prices(path: Path) -> PriceTable:
    """Reads and validates a price file; any problem is one line naming the file and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserInputError(f"--prices: {path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise UserInputError(f"--prices: {path}: not valid {kind}{at}") from None
    if not isinstance(data, dict) or not data:
        raise UserInputError(
            f"--prices: {path}: expected a mapping of model name to "
            "{input: USD, output: USD, cached_input: USD} per 1M tokens"
        )
    table: PriceTable = {}
    for model, entry in data.items():
        if not isinstance(model, str):
            raise UserInputError(f"--prices: {path}: model names must be text, got {model!r}")
        try:
            table[model] = Price.model_validate(entry)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"])
            raise UserInputError(f"--prices: {path}: {model}{'.' + field if field else ''}: {error['msg']}") from None
    return table


def run_costs(runs: pd.DataFrame, prices: PriceTable | None) -> pd.Series:
    """USD per run from its outcome's usage; NaN where the run's model has no price (or no table was given)."""
    if prices is None or runs.empty:
        return pd.Series(np.full(len(runs), np.nan), index=runs.index, dtype=float)
    model = runs["model"].astype(object)
    rate_in = model.map({m: p.input for m, p in prices.items()}).astype(float)
    rate_cached = model.map({m: p.cached for m, p in prices.items()}).astype(float)
    rate_out = model.map({m: p.output for m, p in prices.items()}).astype(float)
    prompt = runs["prompt_tokens"].astype(float)
    cached = runs["cached_tokens"].astype(float).clip(lower=0).where(lambda c: c <= prompt, prompt)
    completion = runs["completion_tokens"].astype(float)
    return ((prompt - cached) * rate_in + cached * rate_cached + completion * rate_out) / PER_TOKENS
