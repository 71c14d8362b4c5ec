"""Drift watch: the test's figures against an independent computation (scipy ranks, numpy products), its false-alarm
rate over 30 repeated checks of an unchanged judge by simulation (a noisy judge and one that repeats itself to the
digit), where the naive paired-difference test that reuses the reference fails; its power against a shifted judge;
and the Python API end to end with the scripted judge: an unchanged judge says no drift, a shifted one raises the
alarm, the e-value carried over equals a replay of the stored checks, and a seeded sample is the same draw."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from runner_helpers import dimension
from scipy import stats

from geval_core.diagnostics.drift import (
    drift_check,
    freeze_watch,
    get_watch,
    sample_ids,
    watch_checks,
)
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.eprocess import ALPHA, LOCATION_BETS, SPREAD_BETS, Wealth, conformal_p, step
from geval_core.stats.shift import tv_distance
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def p_by_ranks(history: list[float], new: float, u: float, kind: str) -> float:
    """The smoothed conformal p-value from scipy's ranks (max and min rank give the greater and tied counts)."""
    bag = np.round(np.array([*history, new]), 6)
    if kind == "spread":
        bag = np.round(np.abs(bag - np.median(bag)), 6)
    top, low = stats.rankdata(bag, "max")[-1], stats.rankdata(bag, "min")[-1]
    return float((len(bag) - top + u * (top - low + 1)) / len(bag))


def test_p_values_match_scipy_ranks():
    rng = np.random.default_rng(3)
    for _ in range(200):
        history = list(rng.integers(1, 4, size=rng.integers(1, 6)).astype(float))
        new, u = float(rng.integers(1, 4)), float(rng.random())
        for kind in ("location", "spread"):
            assert conformal_p(history, new, u, kind) == pytest.approx(p_by_ranks(history, new, u, kind))
    assert conformal_p([3.0], 4.0, 0.5, "location") == pytest.approx(0.25)  # the higher of two: p = u / 2


def ons_by_hand(ps: list[float], low: float) -> float:
    """The online Newton bet's wealth, step by step as Shekhar & Ramdas (2023, Alg. 1) write it."""
    wealth, size, curvature = 1.0, 0.0, 1.0
    for p in ps:
        z = 1 - 2 * p
        wealth *= 1 + size * z
        g = z / (1 + size * z)
        curvature += g * g
        size = min(0.5, max(low, size + 2 / (2 - math.log(3)) * g / curvature))
    return wealth


def test_the_e_value_is_the_product_of_bets_by_hand():
    rng = np.random.default_rng(5)
    observations = [
        (list(rng.normal(3, 0.3, size=k % 4 + 1)), float(rng.normal(3.2, 0.3))) for k in range(25)
    ]
    after, info = step(Wealth(), observations, np.random.default_rng(11))
    draws = np.random.default_rng(11).random(len(observations))
    p_loc = [p_by_ranks(h, x, u, "location") for (h, x), u in zip(observations, draws, strict=True)]
    p_spread = [
        p_by_ranks(h, x, u, "spread") for (h, x), u in zip(observations, draws, strict=True) if len(h) >= 2
    ]
    loc = 0.5 * np.mean(
        [math.prod(1 + b * (1 - 2 * p) for p in p_loc) for b in LOCATION_BETS]
    ) + 0.5 * ons_by_hand(p_loc, -0.5)
    spread = 0.5 * np.mean([math.prod(1 + b * (1 - 2 * p) for p in p_spread) for b in SPREAD_BETS]) + (
        0.5 * ons_by_hand(p_spread, 0.0)
    )
    assert after.location_e == pytest.approx(loc) and after.spread_e == pytest.approx(spread)
    assert after.e_value == pytest.approx(0.5 * max(loc, spread))
    assert info["bets"] == 25 and info["spread_bets"] == len(p_spread)
    again, _ = step(after, observations[:3], np.random.default_rng(0))  # the wealth carries over
    assert Wealth.from_dict(after.to_dict()) == after and again.e_value != after.e_value


def test_tv_distance_by_hand():
    p, q = {1: 0.2, 2: 0.8}, {"2": 0.5, "3": 0.5}
    assert tv_distance(p, q) == pytest.approx(0.5 * (0.2 + 0.3 + 0.5))
    assert tv_distance(p, p) == 0 and tv_distance(None, p) is None


def simulate(
    rng: np.random.Generator,
    checks: int,
    shift: float = 0.0,
    repeat_sd: float = 0.2,
    n: int = 40,
    k: int = 10,
    naive: bool = False,
) -> int | None:
    """One watch of a judge whose scores are people's rating plus the judge's own error per item (fixed) plus a
    repeat noise per call; the check (1-based) that raised the alarm, or None."""
    human = rng.integers(1, 6, size=n).astype(float)
    judge = np.clip(human + rng.normal(0, 0.7, size=n), 1, 5)

    def draw(i: int) -> float:
        return (
            float(np.clip(judge[i] + shift + rng.normal(0, repeat_sd), 1, 5))
            if repeat_sd
            else judge[i] + shift
        )

    history = [
        [float(np.clip(judge[i] + rng.normal(0, repeat_sd), 1, 5)) if repeat_sd else judge[i]]
        for i in range(n)
    ]
    wealth = Wealth()
    for t in range(checks):
        ids = rng.choice(n, size=k, replace=False)
        new = [draw(i) for i in ids]
        # The naive test bets on the new score against the reference alone (the same reference every check).
        seen = [(history[i][:1] if naive else list(history[i]), x) for i, x in zip(ids, new, strict=True)]
        wealth, _ = step(wealth, seen, rng)
        for i, x in zip(ids, new, strict=True):
            history[i].append(x)
        if wealth.e_value >= 1 / ALPHA:
            return t + 1
    return None


@pytest.mark.parametrize("repeat_sd", [0.2, 0.0])
def test_false_alarms_over_30_checks_of_an_unchanged_judge_stay_below_alpha(repeat_sd):
    rng = np.random.default_rng(2026)
    watches = 200
    alarms = sum(simulate(rng, 30, repeat_sd=repeat_sd) is not None for _ in range(watches))
    assert alarms / watches <= ALPHA, alarms


def test_the_naive_paired_test_would_raise_false_alarms():
    """The same bets on the new score against the reference alone: every check reuses the reference's own noise,
    so an unchanged noisy judge is flagged far more often than alpha (what the test above guards against)."""
    rng = np.random.default_rng(7)
    watches = 100
    alarms = sum(simulate(rng, 30, repeat_sd=0.3, k=40, naive=True) is not None for _ in range(watches))
    assert alarms / watches > 2 * ALPHA, alarms


def test_a_shifted_judge_is_found():
    rng = np.random.default_rng(9)
    found = [simulate(rng, 10, shift=0.4, k=20) for _ in range(40)]
    assert sum(f is not None for f in found) >= 38


# --- the Python API with the scripted judge -----------------------------------------------------------------


def script(shift: int = 0):
    def answer(request):
        text = "".join(m["content"] for m in request.messages)
        rating = int(text.split("[h=")[1][0])
        point = min(5, rating + shift)
        return {str(point): 0.7, str(point - 1 if point > 1 else 2): 0.3}

    return answer


@pytest.fixture
def watched(tmp_path):
    library = Library(tmp_path / "lib.db", seed_examples=False)
    items = [
        Item(
            f"i{k:02d}",
            {"document": f"Document {k}.", "summary": f"Summary {k} [h={1 + k % 4}]."},
            {"coherence": float(1 + k % 4)},
            f"d{k // 4}",
        )
        for k in range(32)
    ]
    library.import_items("golden", items)
    prompt = library.freeze(dimension(SCRIPTED), name="coherence").prompt
    run_id = library.create_run(prompt.id, library.get_dataset("golden").id, SCRIPTED)
    run_scoring(prompt, items, ScriptedJudge(script()), library, run_id, RunOptions(settings=SCRIPTED))
    watch, created = freeze_watch(library, "coh", prompt.id, "golden", [run_id])
    assert created and len(watch["items"]) == 32
    yield library, watch
    library.close()


def test_unchanged_then_shifted_judge_through_the_api(watched):
    library, watch = watched
    for _ in range(2):
        report = drift_check(library, "coh", judge_for=ScriptedJudge(script()))
        assert report["verdict"] == "no drift"
        assert report["checks"][-1]["shift"]["mean_tv"] == 0
    report = drift_check(library, "coh", judge_for=ScriptedJudge(script(shift=1)))
    assert report["verdict"] == "drift" and report["alarm_at"] == 3
    checks = watch_checks(library, get_watch(library, "coh"))
    replayed = Wealth()
    history = {i: list(v) for i, v in watch["reference"].items()}
    for check in checks:  # the stored e-value is a replay of the stored scores
        seed = int(
            hashlib.sha256(
                json.dumps(
                    {k: watch[k] for k in ("dataset", "items", "prompt", "runs")},
                    sort_keys=True,
                    separators=(",", ":"),
                ).encode()
            ).hexdigest()[:15],
            16,
        )
        rng = np.random.default_rng([seed, check["seq"], 1])
        replayed, _ = step(replayed, [(list(history[i]), check["scores"][i]) for i in check["items"]], rng)
        for i in check["items"]:
            history[i].append(check["scores"][i])
        assert check["e_value"] == pytest.approx(replayed.e_value)
    runs = [library.get_run(c["run"]) for c in checks]
    assert all(r.extra["drift"]["watch"] == watch["id"] for r in runs) and len({r.id for r in runs}) == 3


def test_a_sample_is_a_seeded_draw_of_the_anchors(watched):
    _library, watch = watched
    first = sample_ids(watch, 1, 10)
    assert first == sample_ids(watch, 1, 10) and len(first) == 10 and set(first) <= set(watch["items"])
    assert first != sample_ids(watch, 2, 10) and sample_ids(watch, 1, None) == watch["items"]
