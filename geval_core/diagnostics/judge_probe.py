"""What a judge can do, measured with a few cheap requests before it is trusted (`geval probe`).

Reported: whether it answers at all, the model version it names, whether it gives log-probabilities and
how many alternatives per position, whether every rating of the scale comes back as one token (a judge
that writes "10" as "1", "0" cannot be weighted over a 1-10 scale), whether one call honours n, and the
latency and cost of one rating request. The result is kept per judge and server in the library; the
pre-freeze checks and runs read the latest one.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from .. import prompts
from ..errors import JudgeError, LogprobsUnavailableError, UnreachableError
from ..run.calls import probe_key, server_id
from ..run.cost import load_prices, price_for
from ..run.one_item import reply_start
from ..scoring.weighted import position_score
from ..types import FrozenPrompt, Judge, JudgeReply, JudgeRequest, JudgeSettings, Scale

TOP_ASKED = 20  # the most any API gives; the probe reports how many came back
SAMPLE_TEXT = "The committee met on Monday and agreed to publish the annual report next week."
KEEP = 10  # probes kept per judge in the library
_NUMBER = re.compile(r"-?\d+")


def latest_probe(store: Any, settings: JudgeSettings) -> dict[str, Any] | None:
    """The newest probe of this judge on this server, or None when it was never probed."""
    history = store.get_setting(probe_key(settings)) or []
    return history[-1] if history else None


def save_probe(store: Any, settings: JudgeSettings, result: dict[str, Any]) -> None:
    """Append a probe to the judge's history in the library (the last KEEP are kept)."""
    history = store.get_setting(probe_key(settings)) or []
    store.set_setting(probe_key(settings), [*history, result][-KEEP:])


def _messages(prompt: FrozenPrompt | None, scale: Scale) -> tuple[dict[str, str], ...]:
    """The prompt itself on a sample item when given (its cost is a real item's), else a short question."""
    if prompt is not None:
        return prompts.messages(prompt, {f: SAMPLE_TEXT for f in prompt.dimension.inputs})
    return (
        {
            "role": "user",
            "content": f"Rate the fluency of this sentence from {scale.min} to {scale.max}. "
            f"Reply with the number only.\n\n{SAMPLE_TEXT}",
        },
    )


def _ask(judge: Judge, request: JudgeRequest, errors: list[str]) -> JudgeReply | None:
    """One probe request; a refusal is noted in `errors`, not raised (UnreachableError is)."""
    try:
        return judge.judge(request)
    except UnreachableError:
        raise
    except JudgeError as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        return None


def probe_judge(
    judge: Judge, settings: JudgeSettings, prompt: FrozenPrompt | None = None, store: Any = None
) -> dict[str, Any]:
    """Probe a judge with a few requests; the JSON-ready facts (see the module docstring)."""
    scale = prompt.dimension.scale if prompt is not None else Scale(1, 5)
    errors: list[str] = []
    out: dict[str, Any] = {
        "judge": settings.judge_id,
        "server": server_id(settings.base_url, settings.provider),
        "reachable": False,
        "model_version": None,
        "logprobs": None,
        "top_logprobs_max": None,
        "single_token_ratings": None,
        "split_ratings": [],
        "n_honoured": None,
        "latency_s": None,
        "usd_per_item": None,
        "errors": errors,
        "probed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    base = JudgeRequest(
        _messages(prompt, scale),
        settings.model,
        max_tokens=settings.max_tokens,
        logprobs=True,
        top_logprobs=TOP_ASKED,
        ratings=tuple(scale.points),
        reasoning_effort=settings.reasoning_effort,
        temperature=1.0 if settings.mode == "sampling" else 0.0,
    )
    try:
        _logprobs_facts(judge, base, out, errors)
        reply = _sampled(judge, base, out, errors)
        if reply is not None or out["reachable"]:
            _token_facts(judge, base, scale, out, errors)
    except UnreachableError as exc:
        errors.append(f"UnreachableError: {exc}")
        return out
    _cost(out, settings, store)
    return out


def _logprobs_facts(judge: Judge, base: JudgeRequest, out: dict[str, Any], errors: list[str]) -> None:
    """Reachable, version, logprobs and their cap, latency and usage from one rating request."""
    try:
        reply = judge.judge(base)
    except LogprobsUnavailableError as exc:
        out["logprobs"] = False
        out["reachable"] = exc.status is not None  # a server that refused them answered
        return
    except UnreachableError:
        raise
    except JudgeError as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        out["reachable"] = exc.status is not None
        return
    positions = [p for c in reply.choices for p in (c.positions or ())]
    if positions:  # how much of the rating position's probability this judge puts on the ratings at all
        weighted, _, _ = position_score(
            reply.choices[0].positions or (), Scale(min(base.ratings), max(base.ratings))
        )
        out["valid_mass"] = round(weighted.valid_mass, 4)
        out["reply_start"] = reply_start(reply)
    out.update(
        reachable=True,
        model_version=reply.model_version,
        logprobs=bool(positions),
        top_logprobs_max=max((len(p.top) for p in positions), default=0) if positions else None,
        latency_s=round(reply.latency_s, 3),
        usage=[reply.usage.input_tokens, reply.usage.output_tokens],
    )


def _sampled(judge: Judge, base: JudgeRequest, out: dict[str, Any], errors: list[str]) -> JudgeReply | None:
    """Whether one call gives n replies: ask for 2 without logprobs (hosted judges top up when it does not)."""
    from dataclasses import replace

    reply = _ask(
        judge, replace(base, logprobs=False, top_logprobs=0, n=2, temperature=1.0, seed=None), errors
    )
    if reply is None:
        return None
    out["reachable"] = True
    out["model_version"] = out["model_version"] or reply.model_version
    out.setdefault("usage", [reply.usage.input_tokens, reply.usage.output_tokens])
    out["latency_s"] = out["latency_s"] if out["latency_s"] is not None else round(reply.latency_s, 3)
    topped_up = isinstance(reply.raw, dict) and "responses" in reply.raw
    out["n_honoured"] = len(reply.choices) == 2 and not topped_up
    return reply


def _token_facts(
    judge: Judge, base: JudgeRequest, scale: Scale, out: dict[str, Any], errors: list[str]
) -> None:
    """Whether each rating is one token: single digits always are; longer ones are read from returned tokens."""
    long = [r for r in scale.points if not 0 <= r <= 9]
    if not long:
        out["single_token_ratings"] = True
        return
    if not out["logprobs"]:
        return  # no tokens come back: unknown
    from dataclasses import replace

    ask = f"Count from {scale.min} to {scale.max}, the numbers separated by spaces and nothing else."
    reply = _ask(
        judge,
        replace(
            base,
            messages=({"role": "user", "content": ask},),
            top_logprobs=1,
            max_tokens=4 * len(scale.points) + 8,
        ),
        errors,
    )
    if reply is None or not reply.choices[0].positions:
        return
    split, single = split_numbers([p.token for p in reply.choices[0].positions])
    wanted = {str(r) for r in long}
    out["split_ratings"] = sorted(wanted & split, key=int)
    seen = wanted & (split | single)
    out["single_token_ratings"] = False if out["split_ratings"] else (True if seen == wanted else None)


def split_numbers(tokens: list[str]) -> tuple[set[str], set[str]]:
    """(numbers written over several tokens, numbers written as one token) in a token sequence."""
    split: set[str] = set()
    single: set[str] = set()
    run: list[str] = []

    def starts(core: str) -> bool:  # a number, or the minus sign a number may follow
        return core == "-" or core.lstrip("-").isdigit()

    for token in [*tokens, " "]:
        core = token.strip()
        if core and core.isdigit() and run and token == core:
            run.append(core)  # a digit token glued to the previous one continues the number
            continue
        number = "".join(run)
        if run and number.lstrip("-").isdigit():
            (split if len(run) > 1 else single).add(number)
        run = [core] if core and starts(core) else []
    return split, single


def _cost(out: dict[str, Any], settings: JudgeSettings, store: Any) -> None:
    """USD of the rating request at the listed price (None when unpriced or it failed)."""
    usage = out.pop("usage", None)
    price = price_for(settings, load_prices(store=store))
    if usage and price is not None:
        out["usd_per_item"] = (usage[0] * price["input"] + usage[1] * price["output"]) / 1_000_000
