"""Cost before a run: token estimates from the rendered prompts and a price table the user can edit.

Token estimate: ceil(characters / 4) per message plus 4 tokens of chat framing per message, the
rule of thumb OpenAI documents for English text (no tokenizer download, works for every provider).
It is an estimate: real counts come back from the judge as usage and are stored per item and run.
Output tokens are an upper bound: max_tokens for every reply asked for.

Prices are USD per million tokens. The built-in table is what the providers listed at the time of
writing; prices change, so the user overrides entries, later sources winning: ~/.config/geval/prices.json,
the library setting "prices" (set from the app), then the file named by $GEVAL_PRICES (or passed in).
Format of each: {"openai:gpt-4o": {"input": 2.5, "output": 10, "cached_input": 1.25}}; "cached_input" (the
rate of input tokens the provider read from its prompt cache) is optional: without it cached tokens are priced
at the full input rate and the cost is an upper bound.

Cached input: OpenAI caches prompts of 1,024 tokens and more, a hit covering the longest prefix seen before
in steps of 128 tokens (developers.openai.com/api/docs/guides/prompt-caching); Gemini 2.5 caches implicitly
from a minimum prompt size per model (ai.google.dev/gemini-api/docs/caching). The estimate predicts the hits
from the prompts in the order a run sends them (feed.shared_prefix_first: items sharing their source document
one after another). A prompt enters a cache once the server has read it, so with C requests in flight a request
finds the prompts sent C places before it and earlier: each is compared with that one and with the first sent
(the prompt's fixed text). The providers promise a hit only at best effort, so it is a prediction, and the run
records what the API reported.
"""

from __future__ import annotations

import json
import math
import os
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import prompts
from ..errors import ConfigError
from ..store import Store
from ..types import FrozenPrompt, Item, JudgeRequest, JudgeSettings

if TYPE_CHECKING:
    from ..providers.prompt_cache import CacheRule

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4  # role markers and separators the chat format adds around each message
USER_PRICES = Path("~/.config/geval/prices.json")

# USD per million tokens (input, cached input, output), from openai.com/api/pricing and
# ai.google.dev/gemini-api/docs/pricing (Gemini: the "context caching" rate, prompts up to 200k tokens). Local
# models cost nothing to call.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "openai:gpt-4o": {"input": 2.50, "cached_input": 1.25, "output": 10.00},
    "openai:gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.60},
    "openai:gpt-4.1": {"input": 2.00, "cached_input": 0.50, "output": 8.00},
    "openai:gpt-4.1-mini": {"input": 0.40, "cached_input": 0.10, "output": 1.60},
    "openai:gpt-4.1-nano": {"input": 0.10, "cached_input": 0.025, "output": 0.40},
    "gemini:gemini-2.0-flash": {"input": 0.10, "cached_input": 0.025, "output": 0.40},
    "gemini:gemini-2.5-flash": {"input": 0.30, "cached_input": 0.03, "output": 2.50},
    "gemini:gemini-2.5-flash-lite": {"input": 0.10, "cached_input": 0.01, "output": 0.40},
    "gemini:gemini-2.5-pro": {"input": 1.25, "cached_input": 0.125, "output": 10.00},
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
            if price.get("cached_input") is not None:  # an entry without it leaves the cached rate unknown
                table[key]["cached_input"] = float(price["cached_input"])
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            raise ConfigError(
                f'{where}: entry {key!r} needs numeric "input" and "output" (and optionally "cached_input"), USD '
                "per million tokens"
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


def usd_of(
    price: dict[str, float] | None, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
) -> float | None:
    """USD for the tokens at a price per million (None when the model is unpriced). Cached tokens are part of the
    input tokens, billed at the cached rate, or at the full input rate when the price lists none."""
    if price is None:
        return None
    cached = min(cached_input_tokens, input_tokens)
    rate = price.get("cached_input", price["input"])
    return (
        (input_tokens - cached) * price["input"] + cached * rate + output_tokens * price["output"]
    ) / 1_000_000


def upper_bound(price: dict[str, float] | None, cached_input_tokens: int) -> bool:
    """Whether a cost priced cached tokens at the full input rate (the price lists no cached rate)."""
    return (
        price is not None and cached_input_tokens > 0 and "cached_input" not in price and price["input"] > 0
    )


def estimate_tokens(text: str) -> int:
    """Tokens in a text by the 4-characters rule (see the module docstring)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_request_tokens(messages: tuple[dict[str, str], ...] | list[dict[str, str]]) -> int:
    """Input tokens of one chat request."""
    return sum(estimate_tokens(m["content"]) + TOKENS_PER_MESSAGE for m in messages)


def request_tokens(request: JudgeRequest) -> int:
    """Estimated tokens one request spends: its prompt plus the largest reply it allows (for tpm pacing)."""
    return estimate_request_tokens(request.messages) + request.n * request.max_tokens


def cache_rule(settings: JudgeSettings) -> CacheRule | None:
    """The documented prompt-cache rule of the judge's server (its provider's spec says it), or None when there is
    none to predict by (another server than the provider's own API, a model whose caching is not documented)."""
    from ..providers.registry import find_spec, resolved_base_url

    spec = find_spec(settings.provider)
    if spec is None or spec.prompt_cache is None:
        return None
    return spec.prompt_cache(settings, resolved_base_url(settings))


def shared_tokens(first: tuple[dict[str, str], ...], second: tuple[dict[str, str], ...]) -> int:
    """Tokens of the prefix two requests share, counted as estimate_request_tokens counts them (whole messages,
    then the shared characters of the first message that differs, 4 to a token, rounded down)."""
    total = 0
    for a, b in zip(first, second, strict=False):  # the shorter request ends the shared prefix
        if a["role"] != b["role"]:
            break
        if a["content"] == b["content"]:
            total += estimate_tokens(a["content"]) + TOKENS_PER_MESSAGE
            continue
        return total + TOKENS_PER_MESSAGE + common_chars(a["content"], b["content"]) // CHARS_PER_TOKEN
    return total


def common_chars(a: str, b: str) -> int:
    """Length of the common prefix of two texts (bisection over slice comparisons, which run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class CachePrediction:
    """Cached input tokens of requests taken in the order they are sent, `concurrency` in flight: each finds in
    the cache the one sent `concurrency` places before it (done before it left; its document's earlier item) and
    the first (the prompt's fixed text), the longer share counting. A few prompts kept, not every one sent: a
    100,000-item estimate holds no more than a 10-item one."""

    def __init__(self, rule: CacheRule | None, concurrency: int = 1) -> None:
        self.rule = rule
        self.first: tuple[dict[str, str], ...] | None = None
        self.in_flight: deque[tuple[dict[str, str], ...]] = deque(maxlen=max(1, concurrency))
        self.total = 0

    def add(self, messages: tuple[dict[str, str], ...], tokens: int) -> None:
        """Count one request (its messages and its estimated input tokens)."""
        rule, in_flight = self.rule, self.in_flight
        if rule is None:
            return
        if self.first is not None and len(in_flight) == in_flight.maxlen and tokens >= rule.minimum:
            shared = max(shared_tokens(in_flight[0], messages), shared_tokens(self.first, messages))
            self.total += rule.cached(tokens, shared)
        self.first = self.first or messages
        in_flight.append(messages)


def estimate_cost(
    prompt: FrozenPrompt,
    items: list[Item],
    settings: JudgeSettings | None = None,
    prices: dict[str, dict[str, float]] | None = None,
    store: Store | None = None,
    prefix_order: bool = True,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Estimated input/output tokens, the cached part of the input, and USD of scoring items (usd None when the
    model is unpriced). `prefix_order` and `concurrency` as the run's RunOptions: the order requests go out in
    and how many are in flight decide which find their prefix cached."""
    from .feed import BATCH, shared_prefix_first

    settings = settings or prompt.dimension.judge
    prices = load_prices(store=store) if prices is None else prices
    rule = cache_rule(settings)
    shared = tuple(prompt.dimension.inputs[:-1]) if prefix_order and rule is not None else ()
    # The order the runner's feed sends them in: grouped within each batch it reads.
    order = [
        item
        for start in range(0, len(items), BATCH)
        for item in shared_prefix_first(items[start : start + BATCH], shared)
    ]
    predicted = CachePrediction(rule, concurrency)
    # One request per item carries all n replies: the prompt is billed once, the output n times.
    input_tokens = 0
    for item in order:
        messages = prompts.messages(prompt, item)
        tokens = estimate_request_tokens(messages)
        input_tokens += tokens
        predicted.add(messages, tokens)
    cached = predicted.total
    output_tokens = len(items) * settings.n * settings.max_tokens
    price = price_for(settings, prices)
    return {
        "items": len(items),
        "requests": len(items),
        "input_tokens": input_tokens,
        "cached_input_tokens": cached,
        "cache_predicted": rule is not None,  # False: no documented cache rule, so no figure to show
        "output_tokens": output_tokens,
        "usd": usd_of(price, input_tokens, output_tokens, cached),
        "usd_upper_bound": upper_bound(price, cached),
        "model": settings.judge_id,
        "price": price,
        "note": _note(settings, price, rule, cached, concurrency),
    }


def _note(
    settings: JudgeSettings,
    price: dict[str, float] | None,
    rule: CacheRule | None = None,
    cached: int = 0,
    concurrency: int = 1,
) -> str:
    parts = ["tokens estimated at 4 characters each; output is an upper bound (max_tokens per reply)"]
    if rule is not None:
        parts.append(
            f"of which cached (est.) {cached:,} input tokens by the provider's rule ({rule.source}; "
            f"best effort, with items that share their source sent together, {concurrency} in flight: a "
            f"source's first {concurrency} pay in full)"
        )
    elif price is None or price["input"] > 0:  # a free judge's cache changes no cost
        parts.append(
            f"cached input not predicted for {settings.judge_id}: no documented cache rule for this model "
            "at this server (the run records what the judge reports)"
        )
    if upper_bound(price, cached):
        parts.append(
            f"no cached-input price listed for {settings.judge_id}: cached tokens priced at the full input "
            "rate, so the cost is an upper bound"
        )
    if settings.mode == "auto":
        parts.append("auto mode: items that fall back to sampling cost a second request")
    if price is None:
        parts.append(f"no price listed for {settings.judge_id}: add it to the price file")
    return "; ".join(parts)


def run_totals(
    judgments: list[dict[str, Any]],
    settings: JudgeSettings,
    prices: dict[str, dict[str, float]],
    discount: float = 1.0,
) -> dict[str, Any]:
    """A run's totals from its judgments: tokens and USD paid (cached answers cost nothing), versions, counts.

    `discount` scales the whole price (0.5 for the Batch API), its cached-input rate included: OpenAI's batch
    price list halves the cached rate as it halves the others. The fold a live run keeps (totals.RunTally) is
    the same definition, applied as judgments are written.
    """
    from .totals import RunTally

    return RunTally.of(judgments).fields(settings, prices, discount)
