"""One item, one road to its Judgment: the request, the call and its retries, the check of the reply, the
auto-mode fallback to sampling, the score and every token the item cost.

The runner's session (live runs and batch collect), the stability check and `score_item` all turn replies
into judgments here, so they cannot disagree about what a reply scores; `AutoFallback` is the one driver of
the auto-mode fallback, for `judge_item` and the session alike.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, replace

from ..errors import JudgeError, LogprobsUnavailableError
from ..judgment import ItemScore, Judgment
from ..prompts import messages, placeholders, template_of
from ..prompts.inputs import require_inputs
from ..scoring import score_reply
from ..types import FrozenPrompt, Item, Judge, JudgeReply, JudgeSettings, Scale, ScoredMode
from .calls import build_request, call_with_retries, context_problem, server_id
from .cost import CHARS_PER_TOKEN, estimate_request_tokens
from .pacing import Gate

DEFAULT_FLOOR = JudgeSettings().valid_mass_floor

__all__ = [
    "AutoFallback",
    "Spent",
    "error_judgment",
    "judge_item",
    "judgment_of",
    "length_budget",
    "no_rating",
    "reply_start",
    "overlong_items",
    "overlong_warning",
    "score_item",
    "server_of",
]


@dataclass(frozen=True)
class Spent:
    """What earlier requests for the same item cost (the logprobs attempt before an auto-mode fallback)."""

    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    cached_input_tokens: int = 0

    @classmethod
    def of(cls, reply: JudgeReply | None, seconds: float = 0.0) -> Spent:
        """What one reply cost (nothing when there was none)."""
        if reply is None:
            return cls(0, 0, seconds)
        return cls(
            reply.usage.input_tokens, reply.usage.output_tokens, seconds, reply.usage.cached_input_tokens
        )

    def plus(self, other: Spent) -> Spent:
        """What both cost."""
        return Spent(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.seconds + other.seconds,
            self.cached_input_tokens + other.cached_input_tokens,
        )


def server_of(settings: JudgeSettings) -> str:
    """Who answers these settings' requests: the resolved server address (no credentials), or the provider."""
    from ..providers.registry import resolved_base_url

    return server_id(resolved_base_url(settings), settings.provider)


def length_budget(prompt: FrozenPrompt, settings: JudgeSettings) -> tuple[int, Counter, int] | None:
    """(the judge's context, how often each input appears in the prompt, the characters of inputs that fit:
    weighted by those counts), or None when the context is not known. An item fits when its inputs'
    weighted length is at most the budget."""
    from ..providers.context import context_window

    window = context_window(settings)
    if window is None:
        return None
    # Lengths only, not 20,000 rendered prompts: the fixed text once, then each input as often as it appears.
    uses = Counter(placeholders(template_of(prompt.dimension)))
    fixed = estimate_request_tokens(messages(prompt, {name: "" for name in prompt.dimension.inputs}))
    return window, uses, (window - settings.max_tokens - fixed) * CHARS_PER_TOKEN


def overlong_items(
    prompt: FrozenPrompt, items: list[Item], settings: JudgeSettings
) -> tuple[int | None, list[str]]:
    """(the judge's context, the ids of the items whose prompt does not fit in it), before anything is sent."""
    budget = length_budget(prompt, settings)
    if budget is None:
        return None, []
    window, uses, chars = budget
    return window, [
        item.id for item in items if sum(uses[name] * len(item.fields.get(name, "")) for name in uses) > chars
    ]


def overlong_warning(window: int | None, ids: list[str], total: int) -> str | None:
    """The sentence listing the items that will not be sent, or None when every item fits."""
    if not ids:
        return None
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return (
        f"{len(ids)} of {total} items do not fit in the judge's context of {window} tokens (estimated at 4 "
        f"characters a token): {shown}. They are recorded as errors and never sent; shorten them or use a "
        "judge with a longer context"
    )


@dataclass
class AutoFallback:
    """The auto-mode fallback, the one rule every road from items to judgments follows (the runner's `Session`
    for a run; `judge_item`, and through it score_item, score_items and the stability check).

    Auto mode asks for log-probabilities first. When the judge answers that request without them, the same item
    is asked again for sampled replies: its judgment says `fallback` and counts what the first request cost.
    From then on the judge is known to give none, so every later item of the same driver (a run has one) goes
    straight to sampling, still marked `fallback`, without paying for a request whose answer cannot be
    weighted; a request already in flight then falls back on its own. `judge_item` without a driver judges a
    run of one item (score_item; each row of score_items, which scores a row exactly as score_item does).
    Other modes ask once, in their own mode, and never fall back.
    """

    mode: str  # the settings' mode: logprobs, sampling or auto
    sampling_only: bool = False  # auto mode has seen this judge answer without log-probabilities

    def first(self) -> tuple[ScoredMode, bool]:
        """(the mode of an item's first request, whether that request is already the fallback)."""
        if self.mode == "sampling":
            return "sampling", False
        if self.mode == "auto" and self.sampling_only:
            return "sampling", True
        return "logprobs", False

    def after_no_logprobs(self, mode: str) -> bool:
        """Whether an item whose `mode` request came back without log-probabilities is asked again for sampled
        replies (auto mode, a logprobs request); later items then start in sampling mode."""
        if self.mode != "auto" or mode != "logprobs":
            return False
        self.sampling_only = True  # a judge without logprobs will not grow them on the next item
        return True


def judgment_of(
    item_id: str,
    reply: JudgeReply,
    scale: Scale,
    mode: str,
    reducer: str = "mean",
    *,
    floor: float = DEFAULT_FLOOR,
    fallback: bool = False,
    spent: Spent = Spent(),
    seconds: float = 0.0,
    cached: bool = False,
    server: str | None = None,
    source: str = "live",
) -> Judgment:
    """The Judgment of one reply; LogprobsUnavailableError when logprobs mode got none to weight.

    A logprobs reply with less than `floor` of its probability on the allowed ratings has no score; every
    answered item without a score says why in `note`.
    """
    scored = score_reply(reply, scale, mode, reducer)
    note = None
    if scored.mode == "logprobs" and scored.score is not None and (scored.valid_mass or 0.0) < floor:
        note = (
            f"the judge put {scored.valid_mass:.1%} of the probability on the ratings (the floor is "
            f"{floor:.0%}); its reply began {reply_start(reply)!r}"
        )
        scored = replace(scored, score=None, raw_score=None)
    elif scored.score is None:
        note = no_rating(scored, reply, scale)
    return Judgment.from_score(
        item_id,
        scored,
        fallback=fallback,
        model_version=reply.model_version,
        input_tokens=spent.input_tokens + reply.usage.input_tokens,
        output_tokens=spent.output_tokens + reply.usage.output_tokens,
        cached_input_tokens=spent.cached_input_tokens + reply.usage.cached_input_tokens,
        latency_s=0.0 if cached else spent.seconds + seconds,
        cached=cached,
        note=note,
        server=server,
        source=source,
    )


def reply_start(reply: JudgeReply, width: int = 40) -> str:
    """The first characters of the first reply, on one line (for a note a person reads)."""
    text = next((t for t in reply.texts if t.strip()), "")
    return " ".join(text.split())[:width]


def no_rating(scored: ItemScore, reply: JudgeReply, scale: Scale) -> str:
    """Why an answered item has no rating at all."""
    if not any(t.strip() for t in reply.texts):
        return "the judge's reply was empty"
    if scored.mode == "sampling":
        return (
            f"none of the {len(reply.texts)} replies is a rating on the {scale} scale; the first began "
            f"{reply_start(reply)!r}"
        )
    return f"no rating on the {scale} scale in the reply; it began {reply_start(reply)!r}"


def error_judgment(
    item_id: str,
    exc: BaseException,
    mode: str,
    *,
    fallback: bool = False,
    reply: JudgeReply | None = None,
    spent: Spent = Spent(),
    server: str | None = None,
) -> Judgment:
    """The Judgment of an item that could not be scored: no score, the error and what it cost."""
    attempts = exc.attempts if isinstance(exc, JudgeError) else 1
    where = f" after {attempts} attempts" if attempts > 1 else ""
    return Judgment(
        item_id,
        replies=reply.texts if reply else [],
        mode=mode,
        fallback=fallback,
        model_version=reply.model_version if reply else None,
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cached_input_tokens=spent.cached_input_tokens,
        latency_s=spent.seconds,
        error=f"{type(exc).__name__}{where}: {exc}",
        server=server,
    )


@dataclass(frozen=True)
class CallPolicy:
    """How an item's calls are made: the seed, how sampled replies reduce, how many attempts, and what may stop
    (`cancel`) or pace (`gate`) them. One value, passed whole from the caller to the call."""

    seed: int | None = None
    reducer: str = "mean"
    max_attempts: int = 5
    cancel: threading.Event | None = None
    gate: Gate | None = None


def judge_item(
    prompt: FrozenPrompt,
    item: Item,
    judge: Judge,
    settings: JudgeSettings | None = None,
    *,
    policy: CallPolicy = CallPolicy(),
    errors: str = "raise",
    fallback: AutoFallback | None = None,
) -> Judgment:
    """Judge one item now, its calls made by `policy`. A judge that fails for good raises its JudgeError
    (errors="raise") or gives an error Judgment (errors="judgment"); auto mode falls back to sampled replies by
    `fallback`'s rule (items judged with one driver share what it learnt; a new driver for this item alone when
    none is given)."""
    settings = settings or prompt.dimension.judge
    driver = fallback or AutoFallback(settings.mode)
    mode, fell_back = driver.first()
    try:
        return _ask(prompt, item, judge, settings, mode, fell_back, policy, Spent())
    except _NoLogprobs as missing:
        if not driver.after_no_logprobs(mode):
            return _failed(item.id, missing.error, mode, fell_back, missing.spent, errors)
        try:
            return _ask(prompt, item, judge, settings, "sampling", True, policy, missing.spent)
        except _NoLogprobs as again:  # cannot happen in sampling mode; kept as an error, never a score
            return _failed(item.id, again.error, "sampling", True, again.spent, errors)
        except JudgeError as exc:
            return _failed(item.id, exc, "sampling", True, missing.spent, errors)
    except JudgeError as exc:
        return _failed(item.id, exc, mode, fell_back, Spent(), errors)


class _NoLogprobs(Exception):
    """A logprobs request the judge answered without log-probabilities (its cost is kept)."""

    def __init__(self, error: LogprobsUnavailableError, spent: Spent) -> None:
        super().__init__(str(error))
        self.error, self.spent = error, spent


def _ask(
    prompt: FrozenPrompt,
    item: Item,
    judge: Judge,
    settings: JudgeSettings,
    mode: str,
    fallback: bool,
    policy: CallPolicy,
    spent: Spent,
) -> Judgment:
    from ..providers.context import context_window

    request = build_request(prompt, item, settings, mode, seed=policy.seed)
    too_long = context_problem(request, context_window(settings))
    if too_long is not None:
        raise too_long
    try:
        reply, _, seconds = call_with_retries(
            judge, request, policy.max_attempts, policy.cancel, gate=policy.gate
        )
    except LogprobsUnavailableError as exc:
        raise _NoLogprobs(exc, spent) from exc
    try:
        return judgment_of(
            item.id,
            reply,
            prompt.dimension.scale,
            mode,
            policy.reducer,
            floor=settings.valid_mass_floor,
            fallback=fallback,
            spent=spent,
            seconds=seconds,
            server=server_of(settings),
        )
    except LogprobsUnavailableError as exc:
        raise _NoLogprobs(exc, spent.plus(Spent.of(reply, seconds))) from exc


def _failed(item_id: str, exc: JudgeError, mode: str, fallback: bool, spent: Spent, errors: str) -> Judgment:
    if errors == "raise":
        raise exc
    return error_judgment(item_id, exc, mode, fallback=fallback, spent=spent)


def score_item(
    prompt: FrozenPrompt,
    fields: dict[str, str],
    judge: Judge | str | None = None,
    base_url: str | None = None,
) -> Judgment:
    """Score one item with a frozen prompt, as a run would: retries, auto-mode fallback, checked replies.

    The judge is the prompt's own or the one `judge` names ("openai:MODEL"); the server is `base_url` (an
    OpenAI-compatible server), else the environment's (OPENAI_BASE_URL), else the provider's own API; never one
    named by the prompt. A missing or non-text input is refused before the call. A judge that fails for good
    raises its JudgeError.
    """
    from ..prompts.inputs import rows_as_fields
    from .many_items import planned_judge

    require_inputs(prompt, [fields], "the fields given to score_item")  # a misspelled key is no empty input
    row = rows_as_fields([fields], prompt.dimension.inputs)[0]
    planned, judge = planned_judge(prompt, judge, base_url)
    return judge_item(prompt, Item("item", row), judge, planned.settings)
