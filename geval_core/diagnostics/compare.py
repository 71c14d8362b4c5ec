"""Two runs on the same items against the same people: the paired difference of each agreement figure, with
an interval that resamples the data's groups (the same draw for both runs, so shared items cancel)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from ..errors import InputError
from ..records import Run
from ..stats.kappa import confusion, kappa_from_confusion
from ..stats.kernels import pooled_pearson
from ..stats.onepass import pooled
from ..types import Scale

FIGURES = ("spearman", "kendall", "pearson")
MIN_GROUPS = 10  # below this the interval is withheld: a bootstrap over so few groups undercovers


def _figure(name: str, a: np.ndarray, b: np.ndarray, scale: Scale | None = None) -> float:
    """One figure of judge `a` against people `b` (NaN when undefined), by `geval agree`'s own functions: ranks
    tie scores equal to 6 decimals (stats.onepass), so float noise in weighted scores is no rank difference."""
    if name == "kappa_quadratic":
        if scale is None:
            raise ValueError("kappa_quadratic needs the rating scale")
        value = kappa_from_confusion(confusion(a, b, scale), "quadratic")
        return float("nan") if value is None else float(value)
    if name == "pearson":
        return pooled_pearson(a, b)
    figures = pooled(a, b)
    return float(figures.spearman if name == "spearman" else figures.kendall)


def paired_difference(
    first: list[float],
    second: list[float],
    human: list[float],
    groups: list[Any],
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    scale: Scale | None = None,
) -> dict[str, Any]:
    """Per figure: the first run's, the second's, their difference (second - first), its interval at `level`
    (group bootstrap, t over groups) and a two-sided p-value for "no difference"; the interval is None with a
    reason below MIN_GROUPS groups. With a scale, quadratic kappa is compared too."""
    a, b, h = (np.asarray(v, dtype=float) for v in (first, second, human))
    codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)[1]
    members = [np.flatnonzero(codes == g) for g in range(int(codes.max()) + 1)]
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"items": len(h), "groups": len(members), "resampled": "groups", "figures": {}}
    draws = (
        [
            np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))])
            for _ in range(resamples)
        ]
        if len(members) >= MIN_GROUPS
        else []
    )
    df = len(members) - 1
    half = float(sps.t.ppf(1 - (1 - level) / 2, df)) if df > 0 else float("nan")
    out["level"] = level
    for name in (*FIGURES, *(("kappa_quadratic",) if scale is not None else ())):
        one, two = _figure(name, a, h, scale), _figure(name, b, h, scale)
        diffs = np.array([_figure(name, b[i], h[i], scale) - _figure(name, a[i], h[i], scale) for i in draws])
        diffs = diffs[np.isfinite(diffs)]
        interval = p_value = None
        if len(diffs) > 1:
            # A bootstrap over G groups estimates the variance (G-1)/G too small: put that factor back.
            sd = float(np.std(diffs, ddof=1)) * math.sqrt(len(members) / max(len(members) - 1, 1))
            interval = [two - one - half * sd, two - one + half * sd]
            p_value = float(2 * sps.t.sf(abs(two - one) / sd, df)) if sd > 0 else (1.0 if two == one else 0.0)
        out["figures"][name] = {
            "first": one,
            "second": two,
            "difference": two - one,
            "interval": interval,
            "p_value": p_value,
        }
    if not draws:
        out["withheld"] = f"fewer than {MIN_GROUPS} groups ({len(members)}): no interval"
    return out


def compare_runs(
    store: Any,
    first: str,
    second: str,
    human: str,
    resamples: int = 1000,
    only: set[str] | None = None,
    level: float = 0.95,
) -> dict[str, Any]:
    """The paired difference of two runs of the same dataset version against the human rating `human`, on the
    items in `only` (a split's side without example items) when given."""
    runs = [store.get_run(first), store.get_run(second)]
    if runs[0].dataset_id != runs[1].dataset_id:
        raise InputError(
            "the two runs scored different dataset versions: a paired comparison needs the same items",
            field="run",
        )
    dataset_id = runs[0].dataset_id
    people = store.human_means(dataset_id, human)
    if not people:
        raise InputError(f"no human rating {human!r} on this dataset", field="human")
    scores = [{r["item_id"]: r["score"] for r in store.judgments(run.id)} for run in runs]
    items = [
        i
        for i in store.dataset_items(dataset_id)
        if i.id in people
        and scores[0].get(i.id) is not None
        and scores[1].get(i.id) is not None
        and (only is None or i.id in only)
    ]
    if len(items) < 3:
        raise InputError(f"only {len(items)} items have both runs' scores and a human rating", field="human")
    scale = store.get_prompt(runs[1].prompt_id).dimension.scale
    result = paired_difference(
        [scores[0][i.id] for i in items],
        [scores[1][i.id] for i in items],
        [people[i.id] for i in items],
        [i.group or i.id for i in items],
        resamples,
        level=level,
        scale=scale,
    )
    if not all(i.group for i in items):
        result["resampled"] = "items (the dataset has no groups)"
    return {"first": runs[0].id, "second": runs[1].id, "human": human, **result, **judges_of(runs)}


def judges_of(runs: list[Run]) -> dict[str, Any]:
    """Both runs' judges, and the caution a difference carries when they are not the same judge (None when they
    are): a comparison of two prompts scored by two judges measures the judges too."""
    from ..run.plan import different_judges_note, judge_label

    settings = [run.judge for run in runs]
    return {
        "judges": [judge_label(s) for s in settings],
        "different_judges": different_judges_note(*settings),
    }
