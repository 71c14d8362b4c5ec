"""Agreement among human raters: Krippendorff's alpha, pairwise weighted kappa, raters and spread per item.

Ratings are a units x raters matrix (NaN where a rater gave no rating). Alpha follows Krippendorff's
coincidence-matrix form: every unit with m >= 2 ratings adds each ordered pair of its ratings with
weight 1/(m-1); alpha = 1 - (n-1) * sum(o_ck d_ck) / sum(n_c n_k d_ck) over the n pairable values.
Distances: nominal (c != k), interval ((c-k)^2) and ordinal (the squared count of values between
the two ranks, from the marginals n_g; Krippendorff 2011, "Computing Krippendorff's alpha-reliability").
The interval metric needs only each unit's count, sum and sum of squares (sum of (a-b)^2 over its ordered pairs
is 2(m s2 - s1^2)), so it is computed from those: a panel's weighted scores are nearly all distinct, and tables
over distinct values grow with their square.
The bootstrap resamples groups (documents) when every unit has one, units (items) otherwise, with
replacement; each resample's coincidences are a weighted sum of per-group (or per-unit) tables, so B
resamples cost one matrix product. Intervals are bootstrap.METHOD's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from ..types import Item, Scale
from .bootstrap import METHOD, flagged, interval, near_bound, withheld
from .kappa import cohen_kappa

METRICS = ("nominal", "ordinal", "interval")
_CELLS = 20_000_000  # resamples x values^2 held in memory at once


@dataclass(frozen=True)
class RaterMatrix:
    """Ratings as units x raters (NaN: no rating), with the item ids, groups and rater labels."""

    values: np.ndarray
    ids: list[str]
    groups: list[str | None]
    raters: list[str]


def rater_keys(names: Iterable[str], name: str) -> list[str]:
    """The per-rater rating names NAME.0, NAME.1, ... among `names`, in rater order."""
    pattern = re.compile(re.escape(name) + r"\.(\d+)")
    found = [(int(m[1]), k) for k in names if (m := pattern.fullmatch(k))]
    return [k for _, k in sorted(found)]


def base_name(name: str) -> str:
    """'coherence' for 'coherence.2' (a per-rater rating), else the name itself."""
    return re.sub(r"\.\d+$", "", name)


def rater_matrix(items: Sequence[Item], name: str) -> RaterMatrix:
    """The matrix of per-rater ratings NAME.k of the items; the mean NAME alone is one rater when no NAME.k."""
    keys = rater_keys({k for i in items for k in i.human}, name) or [name]
    values = np.array([[_float_or_nan(i.human.get(k)) for k in keys] for i in items], dtype=float).reshape(
        len(items), len(keys)
    )
    return RaterMatrix(values, [i.id for i in items], [i.group for i in items], keys)


def _float_or_nan(value: Any) -> float:
    return np.nan if value is None else float(value)


def unit_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, units x values counts) of a ratings matrix."""
    finite = values[np.isfinite(values)]
    levels = np.unique(finite)
    counts = np.zeros((values.shape[0], len(levels)))
    rows, cols = np.nonzero(np.isfinite(values))
    np.add.at(counts, (rows, np.searchsorted(levels, values[rows, cols])), 1.0)
    return levels, counts


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence tables (units x k x k); units with fewer than 2 ratings add nothing."""
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    k = counts.shape[1]
    pairs[:, np.arange(k), np.arange(k)] -= counts
    scale = np.where(m >= 2, 1.0 / np.where(m >= 2, m - 1, 1), 0.0)
    return pairs * scale[:, None, None]


def distances(levels: np.ndarray, marginals: np.ndarray, metric: str) -> np.ndarray:
    """Squared distances between values (k x k), or one table per row of marginals (B x k x k) for ordinal."""
    if metric == "nominal":
        return 1.0 - np.eye(len(levels))
    if metric == "interval":
        return np.subtract.outer(levels, levels) ** 2
    if metric != "ordinal":
        raise ValueError(f"alpha metric must be one of {', '.join(METRICS)}, got {metric!r}")
    cum = np.cumsum(marginals, axis=-1)
    lo = np.minimum.outer(np.arange(len(levels)), np.arange(len(levels)))
    hi = np.maximum.outer(np.arange(len(levels)), np.arange(len(levels)))
    between = cum[..., hi] - cum[..., lo] + marginals[..., lo]  # n_lo + ... + n_hi
    d = between - (marginals[..., :, None] + marginals[..., None, :]) / 2.0
    return d**2


def alpha_of_tables(tables: np.ndarray, levels: np.ndarray, metric: str) -> np.ndarray:
    """Alpha of coincidence tables (... x k x k); NaN where undefined (no pairs, or no expected disagreement)."""
    marg = tables.sum(axis=-1)
    n = marg.sum(axis=-1)
    d = distances(levels, marg, metric)
    observed = (tables * d).sum(axis=(-2, -1))
    expected = (marg[..., :, None] * marg[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((expected > 0) & (n > 1), 1.0 - (n - 1) * observed / expected, np.nan)


def interval_moments(values: np.ndarray) -> np.ndarray:
    """Per unit (units x 4): pairable values, the unit's observed disagreement sum(d)/(m-1), and the sum and sum
    of squares of its values, centred. For the interval metric these are all alpha needs: a pass over the values
    where the coincidence tables grow with the square of the distinct values (weighted scores are all distinct)."""
    finite = np.isfinite(values)
    centred = np.where(finite, values - (values[finite].mean() if finite.any() else 0.0), 0.0)
    m = finite.sum(axis=1).astype(float)
    s1, s2 = centred.sum(axis=1), (centred**2).sum(axis=1)
    pairable = m >= 2
    with np.errstate(
        divide="ignore", invalid="ignore"
    ):  # sum over ordered pairs of (a - b)^2 = 2 (m s2 - s1^2)
        observed = np.where(pairable, 2.0 * (m * s2 - s1**2) / np.where(pairable, m - 1, 1.0), 0.0)
    return np.column_stack(
        [np.where(pairable, m, 0.0), observed, np.where(pairable, s1, 0.0), np.where(pairable, s2, 0.0)]
    )


def alpha_of_moments(sums: np.ndarray) -> np.ndarray:
    """Interval alpha of summed moments (... x 4); NaN where undefined, as alpha_of_tables."""
    n, observed, s1, s2 = (sums[..., j] for j in range(4))
    expected = 2.0 * (n * s2 - s1**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            (expected > 1e-12 * np.maximum(n * s2, 1.0)) & (n > 1),
            1.0 - (n - 1) * observed / expected,
            np.nan,
        )


def krippendorff_alpha(values: np.ndarray, metric: str = "interval") -> float | None:
    """Krippendorff's alpha of a units x raters matrix (NaN = missing); None when undefined."""
    values = np.asarray(values, dtype=float)
    if metric == "interval":
        value = float(alpha_of_moments(interval_moments(values).sum(axis=0)))
        return None if np.isnan(value) else value
    levels, counts = unit_counts(values)
    if len(levels) == 0:
        return None
    value = float(alpha_of_tables(unit_coincidences(counts).sum(axis=0), levels, metric))
    return None if np.isnan(value) else value


def alpha_intervals(
    values: np.ndarray,
    resamples: int,
    seed: int = 0,
    metrics: Sequence[str] = METRICS,
    clusters: Sequence[Any] | None = None,
) -> dict[str, list[float | None]]:
    """95% intervals of alpha per metric, resampling the clusters (e.g. documents) when given, else units."""
    values = np.asarray(values, dtype=float)
    if not values.shape[0] or not np.isfinite(values).any() or resamples <= 0:
        return {m: [None, None] for m in metrics}
    tabled = [m for m in metrics if m != "interval"]
    per_unit = [interval_moments(values)]
    if tabled:  # the coincidence tables only for the metrics that need them
        levels, counts = unit_counts(values)
        per_unit.append(unit_coincidences(counts).reshape(len(values), -1))
    if clusters is not None:  # a cluster's sums are the sums of its units'
        codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1]
        per_unit = [_summed(codes, table) for table in per_unit]
    units, cells = per_unit[-1].shape
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {m: [] for m in metrics}
    chunk = max(1, min(_CELLS // max(units, cells), resamples))
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        weights = np.zeros((b, units))
        np.add.at(weights, (np.repeat(np.arange(b), units), rng.integers(0, units, size=b * units)), 1.0)
        if "interval" in out:
            out["interval"].extend(alpha_of_moments(weights @ per_unit[0]).tolist())
        if tabled:
            tables = (weights @ per_unit[1]).reshape(b, len(levels), len(levels))
            for m in tabled:
                out[m].extend(alpha_of_tables(tables, levels, m).tolist())
    return {m: interval(v, krippendorff_alpha(values, m), units) for m, v in out.items()}


def _summed(codes: np.ndarray, per_unit: np.ndarray) -> np.ndarray:
    summed = np.zeros((int(codes.max()) + 1, per_unit.shape[1]))
    np.add.at(summed, codes, per_unit)
    return summed


def _resampled(matrix: RaterMatrix) -> tuple[list[str | None] | None, str, int]:
    """(clusters, unit, how many) the alpha bootstrap resamples: the groups when every unit has one."""
    rated = np.isfinite(matrix.values).sum(axis=1) >= 2
    if matrix.groups and all(g is not None for g in matrix.groups):
        return matrix.groups, "groups", len({g for g, r in zip(matrix.groups, rated, strict=True) if r})
    return None, "items", int(rated.sum())


def pairwise_kappa(
    matrix: RaterMatrix, scale: Scale, weights: str | None = "quadratic"
) -> list[dict[str, Any]]:
    """Cohen's kappa (quadratic by default) of every pair of raters over the items both rated."""
    out = []
    for a, b in combinations(range(len(matrix.raters)), 2):
        x, y = matrix.values[:, a], matrix.values[:, b]
        both = int((np.isfinite(x) & np.isfinite(y)).sum())
        kappa = cohen_kappa(x, y, scale, weights) if both >= 2 else None
        out.append({"a": matrix.raters[a], "b": matrix.raters[b], "items": both, "kappa": kappa})
    return out


def raters_per_item(values: np.ndarray) -> dict[int, int]:
    """How many items have 0, 1, 2, ... ratings."""
    counts = np.isfinite(values).sum(axis=1)
    return {int(c): int((counts == c).sum()) for c in np.unique(counts)}


def item_spread(matrix: RaterMatrix) -> list[dict[str, Any]]:
    """Per item with 2+ ratings: how many, their mean, standard deviation (population) and range; widest first."""
    out = []
    for item_id, row in zip(matrix.ids, matrix.values, strict=True):
        got = row[np.isfinite(row)]
        if len(got) >= 2:
            out.append(
                {
                    "item": item_id,
                    "ratings": len(got),
                    "mean": float(got.mean()),
                    "sd": float(got.std()),
                    "range": float(got.max() - got.min()),
                }
            )
    return sorted(out, key=lambda r: (-r["sd"], r["item"]))


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def rater_agreement(matrix: RaterMatrix, scale: Scale, bootstrap: int = 0, seed: int = 0) -> dict[str, Any]:
    """Alpha (nominal, ordinal, interval) with intervals, pairwise kappa, raters per item and pairable values."""
    v = matrix.values
    per_item = np.isfinite(v).sum(axis=1)
    result: dict[str, Any] = {f"alpha_{m}": krippendorff_alpha(v, m) for m in METRICS}
    kappas = pairwise_kappa(matrix, scale)
    result.update(
        {
            "items": int((per_item >= 2).sum()),
            "items_rated": int((per_item >= 1).sum()),
            "items_total": len(v),
            "raters": int((np.isfinite(v).sum(axis=0) > 0).sum()),
            "pairable_values": int(per_item[per_item >= 2].sum()),
            "raters_per_item": {str(k): n for k, n in raters_per_item(v).items()},
            "pairwise_kappa_quadratic": kappas,
            "kappa_quadratic_mean": _mean([p["kappa"] for p in kappas if p["kappa"] is not None]),
            "scale": str(scale),
            "bootstrap": int(bootstrap),
            "seed": int(seed),
        }
    )
    clusters, unit, units = _resampled(matrix)
    result["ci"] = (
        {f"alpha_{m}": ci for m, ci in alpha_intervals(v, bootstrap, seed, clusters=clusters).items()}
        if bootstrap
        else {}
    )
    flags = {
        k: near_bound(k, result[k], units, unit)
        for k, ci in result["ci"].items()
        if ci[0] is not None and result[k] is not None and near_bound(k, result[k], units, unit)
    }
    result.update(
        {
            "ci_resampled": unit if bootstrap else "",
            "ci_units": units if bootstrap else 0,
            "ci_method": METHOD if bootstrap else "",
            "ci_warning": withheld(units, unit) if bootstrap else "",
            "ci_flag": "; ".join(filter(None, [flagged(units, unit) if bootstrap else "", *flags.values()])),
            "ci_flags": flags,
        }
    )
    return result
