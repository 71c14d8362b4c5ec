"""Cost before a run: token estimates from the rendered prompts and a price table the user can edit.

Token estimate: ceil(characters / 4) per message plus 4 tokens of chat framing per message, the
rule of thumb OpenAI documents for English text (no tokenizer download, works for every provider).
It is an estimate: real counts come back from the judge as usage and are stored per item and run.
Output tokens are an upper bound: max_tokens for every reply asked for.

Prices are USD per million tokens. The built-in table is what the providers listed at the time of
writing; prices change, so the user overrides entries, later sources winning: ~/.config/geval/prices.json,
the library setting "prices" (set from the app), then the file named by $GEVAL_PRICES (or passed in).
Format of each: {"openai:gpt-4o": {"input": 2.5, "output": 10}}.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .. import prompts
from ..errors import ConfigError
from ..store import Store
from ..types import FrozenPrompt, Item, JudgeRequest, JudgeSettings

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4  # role markers and separators the chat format adds around each message
USER_PRICES = Path("~/.config/geval/prices.json")

# USD per million tokens (input, output). Local models cost nothing to call.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "openai:gpt-4o": {"input": 2.50, "output": 10.00},
    "openai:gpt-4o-mini": {"input": 0.15, "output": 0.60},
    "openai:gpt-4.1": {"input": 2.00, "output": 8.00},
    "openai:gpt-4.1-mini": {"input": 0.40, "output": 1.60},
    "openai:gpt-4.1-nano": {"input": 0.10, "output": 0.40},
    "gemini:gemini-2.0-flash": {"input": 0.10, "output": 0.40},
    "gemini:gemini-2.5-flash": {"input": 0.30, "output": 2.50},
    "gemini:gemini-2.5-flash-lite": {"input": 0.10, "output": 0.40},
    "gemini:gemini-2.5-pro": {"input": 1.25, "output": 10.00},
}


def _read_price_file(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"price file {file} does not exist; create it or unset GEVAL_PRICES") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"price file {file} is not valid JSON: {exc}") from exc


def _merge(table: dict[str, dict[str, float]], data: Any, where: str) -> None:
    if not isinstance(data, dict):
        raise ConfigError(f'{where} must map "provider:model" to {{"input": x, "output": y}}')
    for key, price in data.items():
        try:
            table[key] = {"input": float(price["input"]), "output": float(price["output"])}
        except (TypeError, KeyError, ValueError) as exc:
            raise ConfigError(
                f'{where}: entry {key!r} needs numeric "input" and "output" (USD per million tokens)'
            ) from exc


def load_prices(path: str | Path | None = None, store: Store | None = None) -> dict[str, dict[str, float]]:
    """The price table: built-in < ~/.config/geval/prices.json < library setting "prices" < $GEVAL_PRICES / path."""
    table = {k: dict(v) for k, v in DEFAULT_PRICES.items()}
    user = USER_PRICES.expanduser()
    if user.exists():
        _merge(table, _read_price_file(user), f"price file {user}")
    if store is not None:
        stored = store.get_setting("prices")
        if stored:
            _merge(table, stored, 'library setting "prices"')
    env = os.environ.get("GEVAL_PRICES")
    file = Path(path).expanduser() if path else Path(env).expanduser() if env else None
    if file is not None:
        _merge(table, _read_price_file(file), f"price file {file}")
    return table


def price_for(settings: JudgeSettings, prices: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """The price of a judge: exact model, else the longest listed prefix (dated versions), else None."""
    from ..providers.registry import find_spec

    spec = find_spec(settings.provider)
    if spec is not None and spec.free:  # it runs on this machine
        return {"input": 0.0, "output": 0.0}
    key = f"{settings.provider}:{settings.model}"
    if key in prices:
        return prices[key]
    # "gpt-4o-2024-08-06" is priced as "gpt-4o"; the longest prefix keeps it off "gpt-4".
    matches = [k for k in prices if key.startswith(k + "-")]
    return prices[max(matches, key=len)] if matches else None


def usd_of(price: dict[str, float] | None, input_tokens: int, output_tokens: int) -> float | None:
    """USD for the tokens at a price per million (None when the model is unpriced)."""
    if price is None:
        return None
    return (input_tokens * price["input"] + output_tokens * price["output"]) / 1_000_000


def estimate_tokens(text: str) -> int:
    """Tokens in a text by the 4-characters rule (see the module docstring)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_request_tokens(messages: tuple[dict[str, str], ...] | list[dict[str, str]]) -> int:
    """Input tokens of one chat request."""
    return sum(estimate_tokens(m["content"]) + TOKENS_PER_MESSAGE for m in messages)


def request_tokens(request: JudgeRequest) -> int:
    """Estimated tokens one request spends: its prompt plus the largest reply it allows (for tpm pacing)."""
    return estimate_request_tokens(request.messages) + request.n * request.max_tokens


def estimate_cost(prompt: FrozenPrompt, items: list[Item], settings: JudgeSettings | None = None,
                  prices: dict[str, dict[str, float]] | None = None, store: Store | None = None) -> dict[str, Any]:
    """Estimated input/output tokens and USD of scoring items (usd None when the model is unpriced)."""
    settings = settings or prompt.dimension.judge
    prices = load_prices(store=store) if prices is None else prices
    # One request per item carries all n replies: the prompt is billed once, the output n times.
    input_tokens = sum(estimate_request_tokens(prompts.messages(prompt, item)) for item in items)
    output_tokens = len(items) * settings.n * settings.max_tokens
    price = price_for(settings, prices)
    return {
        "items": len(items),
        "requests": len(items),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "usd": usd_of(price, input_tokens, output_tokens),
        "model": settings.judge_id,
        "price": price,
        "note": _note(settings, price),
    }


def _note(settings: JudgeSettings, price: dict[str, float] | None) -> str:
    parts = ["tokens estimated at 4 characters each; output is an upper bound (max_tokens per reply)"]
    if settings.mode == "auto":
        parts.append("auto mode: items that fall back to sampling cost a second request")
    if price is None:
        parts.append(f"no price listed for {settings.judge_id}: add it to the price file")
    return "; ".join(parts)


def run_totals(judgments: list[dict[str, Any]], settings: JudgeSettings,
               prices: dict[str, dict[str, float]], discount: float = 1.0) -> dict[str, Any]:
    """A run's totals from its judgments: tokens and USD paid (cached answers cost nothing), versions, counts.

    `discount` scales the price (0.5 for the Batch API). The fold a live run keeps (totals.RunTally) is
    the same definition, applied as judgments are written.
    """
    from .totals import RunTally

    return RunTally.of(judgments).fields(settings, prices, discount)
