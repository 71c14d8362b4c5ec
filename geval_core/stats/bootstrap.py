"""Bootstrap confidence intervals for the agreement figures (95%): studentized over the resampled units.

What is resampled is what is independent: groups (documents) when the data has them, for the
group-level and the dataset-level reading alike (items of one document are not independent:
resampling them alone gave 95% intervals that covered 75-80% of the time on SummEval documents).
Grouped data compute every group's correlation and counts once, and a resample is a vector of group
multiplicities, so B resamples cost matrix products, not B recomputations.

The interval (METHOD) is estimate - q * sqrt(units / (units - 1)) * SD of the resamples, on the figure's own
scale, where q are Student's t(units - 1) quantiles passed through Hall's cubic transformation with the
skewness of the resamples (Hall 1992, "On the removal of skewness by transformation"), clipped to the
figure's range. Why each part: the t quantile and the small-sample factor widen it where few units make the
bootstrap spread too narrow; the skewness correction stretches the side the figure's distribution leans to
(a mean of skewed per-document correlations, a tie rate near 0, alpha); the raw scale cannot explode near
+-1 as Fisher's z did (resamples at exactly 1 were clipped to 1 - 1e-6, so a near-perfect judge got
[0.585, 0.99999]). Percentile, BCa and jackknife intervals covered less on the bench's populations
(bench/bench_coverage.py). Fewer than MIN_UNITS units give no interval (not measured there: withheld); from
MIN_UNITS to FEW_UNITS - 1 the intervals are shown flagged, and so are those the bench found below 93% at
more units (figure_flags: a group-level tie rate from fewer than SETTLED_UNITS groups, a figure near +-1).
A resample where a figure is undefined (a constant side) is counted; when more than 5% of the
resamples are undefined the interval is not shown ([None, None]): the defined ones are a biased subset.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..types import Scale
from .counted import layout, pooled_counted
from .kappa import KAPPA_WEIGHTS, confusions, kappa_from_confusion, kappa_key
from .kernels import GroupStats
from .paired import Paired

CI_METRICS = ("spearman", "kendall", "pearson", "tie_rate", "kappa", "kappa_linear", "kappa_quadratic")
_CELLS = 4_000_000  # resamples x groups held in memory at once
UNDEFINED_LIMIT = 0.05  # above this share of undefined resamples, no interval
MIN_UNITS = 10  # fewer resampled units (groups, or items when ungrouped): no interval
FEW_UNITS = 20  # fewer: intervals shown, flagged
SETTLED_UNITS = (
    50  # from here the bench found even a group-level tie rate and figures near +-1 at 93% or more
)
SETTLED_ITEMS = (
    800  # the same for figures near +-1 when items are resampled (a few items still decide them below)
)
NEAR_BOUND = (
    0.95  # a correlation, kappa or alpha this close to +-1 is flagged (few items decide how far below)
)
SKEW_LIMIT = 3.0  # |skewness| used at most: beyond, the transformation could leave the estimate outside
METHOD = (
    "studentized bootstrap SE: estimate - q x sqrt(units/(units-1)) x SD, q the t(units-1) quantiles "
    "corrected for the resamples' skewness (Hall's cubic transformation), on the figure's own scale "
    "(not Fisher z, which explodes at +-1), clipped to its range"
)
Intervals = tuple[
    dict[str, list[float | None]], dict[str, int]
]  # (intervals, undefined resamples) per figure


def _finite(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    arr = np.array([np.nan if v is None else v for v in values], dtype=float)
    return arr[np.isfinite(arr)]


@functools.lru_cache(maxsize=256)
def t_quantile(level: float, df: int) -> float:
    """The upper (1 + level) / 2 quantile of Student's t with df degrees of freedom."""
    from scipy.stats import t  # imported late: scipy costs ~0.5 s at every CLI start

    return float(t.ppf((1 + level) / 2, df))


def t975(df: int) -> float:
    """The 97.5th percentile of Student's t with df degrees of freedom."""
    return t_quantile(0.95, df)


def skewness(values: np.ndarray) -> float:
    """The sample skewness (third central moment over the cubed SD; 0 when the values do not vary)."""
    sd = float(np.std(values))
    if not len(values) or sd <= 1e-12 * max(1.0, float(np.max(np.abs(values)))):
        return 0.0
    return float(np.mean((values - np.mean(values)) ** 3) / sd**3)


def hall_inverse(q: float, skew: float) -> float:
    """The inverse of Hall's transformation g(T) = T + a T^2 + a^2 T^3 / 3 + a / 2 at q, a = skew / 3 (skew:
    of the resampled estimate, i.e. the data's skewness over sqrt(units))."""
    a = float(np.clip(skew, -SKEW_LIMIT, SKEW_LIMIT)) / 3.0
    if abs(a) < 1e-12:
        return q
    return float((np.cbrt(1.0 + 3.0 * a * (q - a / 2.0)) - 1.0) / a)


def skewed_t_interval(
    values: np.ndarray,
    estimate: float,
    units: int,
    level: float = 0.95,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> list[float]:
    """METHOD's interval from finite resampled values at `level`, clipped to `bounds` and holding the estimate."""
    q = t_quantile(level, units - 1)
    se = float(np.std(values, ddof=1)) * np.sqrt(units / (units - 1))
    skew = skewness(values)
    low, high = estimate - se * hall_inverse(q, skew), estimate - se * hall_inverse(-q, skew)
    return [float(max(bounds[0], min(low, estimate))), float(min(bounds[1], max(high, estimate)))]


def interval(
    values: Sequence[float | None] | np.ndarray, estimate: float | None, units: int, bounded: bool = True
) -> list[float | None]:
    """The 95% interval of METHOD from the resampled values; [None, None] if > 5% are undefined or few units.

    `bounded`: a figure in [-1, 1] (correlation, kappa, alpha); else a share in [0, 1] (the tie rate)."""
    arr = _finite(values)
    if (
        estimate is None
        or units < MIN_UNITS
        or len(arr) < 2
        or len(values) - len(arr) > UNDEFINED_LIMIT * len(values)
    ):
        return [None, None]
    return list(skewed_t_interval(arr, estimate, units, 0.95, (-1.0, 1.0) if bounded else (0.0, 1.0)))


def withheld(units: int, unit: str) -> str:
    """Why there is no interval at this many units ("" when there is one)."""
    if units >= MIN_UNITS:
        return ""
    return (
        f"no intervals: {units} {unit} resampled, fewer than {MIN_UNITS} (coverage below 10 {unit} "
        "was not measured)"
    )


def flagged(units: int, unit: str) -> str:
    """The caution for intervals made from few units ("" from FEW_UNITS up, or when they are withheld)."""
    if not MIN_UNITS <= units < FEW_UNITS:
        return ""
    return (
        f"few {unit}: {units} resampled; at 10 {unit} these 95% intervals covered 90-98% in simulation on "
        "resampled SummEval documents, so read them as a little narrower than promised"
    )


def figure_flags(
    intervals: dict[str, list[float | None]],
    estimates: dict[str, float | None],
    units: int,
    unit: str,
    grouped: bool,
) -> dict[str, str]:
    """Per figure, the caution its shown interval carries where the bench found it below 93% from FEW_UNITS up:
    a group-level tie rate from fewer than SETTLED_UNITS groups (a few documents can hold most ties) and a figure
    near +-1 (a few items decide how far below 1 it is; see near_bound)."""
    out = {}
    for name, ci in intervals.items():
        value = estimates.get(name)
        if not ci or ci[0] is None or value is None:
            continue
        if name == "tie_rate" and grouped and units < SETTLED_UNITS:
            out[name] = (
                f"tie rate from {units} {unit}: below {SETTLED_UNITS} its interval covered as little as "
                "85% (10 groups) and 90% (20) in simulation on resampled SummEval documents when a few "
                "documents hold most ties"
            )
        elif name != "tie_rate" and near_bound(name, value, units, unit):
            out[name] = near_bound(name, value, units, unit)
    return out


def near_bound(name: str, value: float, units: int, unit: str = "groups") -> str:
    """The caution on an interval of a figure near +-1 from fewer than SETTLED_UNITS groups (SETTLED_ITEMS items
    when items are resampled); "" otherwise."""
    settled = SETTLED_ITEMS if unit == "items" else SETTLED_UNITS
    if abs(value) < NEAR_BOUND or units >= settled:
        return ""
    return (
        f"{name.replace('_', ' ')} {value:.3f} is near {1 if value > 0 else -1} with {units} {unit}: there a few "
        f"items decide how far from it the figure is, and below {SETTLED_UNITS} groups ({SETTLED_ITEMS} items) "
        "95% intervals covered as little as 61% (10 groups; 46% from 80 items) and 84% (20 groups) in simulation "
        "on resampled SummEval documents; read the interval as narrower than promised"
    )


def summarise(
    out: dict[str, list[float | None]], estimates: dict[str, float | None], units: dict[str, int] | int
) -> Intervals:
    """Every figure's interval and its count of undefined resamples."""
    per = units if isinstance(units, dict) else dict.fromkeys(out, units)
    return (
        {m: interval(v, estimates.get(m), per[m], m != "tie_rate") for m, v in out.items()},
        {m: len(v) - len(_finite(v)) for m, v in out.items()},
    )


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def bootstrap_ci(
    p: Paired,
    gs: GroupStats,
    scale: Scale,
    grouped: bool,
    resamples: int,
    seed: int,
    estimates: dict[str, float | None],
    clusters: np.ndarray | None = None,
) -> Intervals:
    """95% intervals of every figure in CI_METRICS: groups resampled when grouped (or clusters given)."""
    if grouped:
        return grouped_ci(gs, confusions(p.x, p.y, scale, p.codes, p.n_groups), resamples, seed, estimates)
    return items_ci(p.x, p.y, scale, resamples, seed, estimates, clusters)


def grouped_ci(
    gs: GroupStats,
    tables_per_group: np.ndarray,
    resamples: int,
    seed: int,
    estimates: dict[str, float | None],
) -> Intervals:
    """Resample groups with replacement; tables_per_group is groups x k x k (judge rows, human columns)."""
    rng = np.random.default_rng(seed)
    n_groups, k = tables_per_group.shape[0], tables_per_group.shape[1]
    use = gs.use.astype(float)
    per_group = {
        name: np.where(gs.use, getattr(gs, name), 0.0) for name in ("spearman", "kendall", "pearson")
    }
    flat = tables_per_group.reshape(n_groups, k * k).astype(float)
    out: dict[str, list[float | None]] = {m: [] for m in CI_METRICS}
    chunk = max(1, _CELLS // max(n_groups, 1))
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        picks = rng.integers(0, n_groups, size=(b, n_groups))
        weights = np.zeros((b, n_groups))
        np.add.at(weights, (np.repeat(np.arange(b), n_groups), picks.ravel()), 1.0)
        used = weights @ use
        for name, values in per_group.items():
            out[name].extend(_ratio(weights @ values, used))
        out["tie_rate"].extend(_ratio(weights @ gs.tied_x, weights @ gs.pairs))
        tables = (weights @ flat).reshape(b, k, k)
        for w in KAPPA_WEIGHTS:
            out[kappa_key(w)].extend(kappa_from_confusion(t, w) for t in tables)
    # Correlations average over the used groups only; ties and kappa count every group's items.
    used_groups = int(gs.use.sum())
    units = {m: used_groups if m in ("spearman", "kendall", "pearson") else n_groups for m in CI_METRICS}
    return summarise(out, estimates, units)


def items_ci(
    x: np.ndarray,
    y: np.ndarray,
    scale: Scale,
    resamples: int,
    seed: int,
    estimates: dict[str, float | None],
    clusters: np.ndarray | None = None,
) -> Intervals:
    """Resample items (or whole clusters, given their codes) and recompute every pooled figure.

    A resample is a count per unit (item or cluster): the rank figures are recomputed on its items, the
    others summed from per-unit sums and tables weighted by those counts (no item-level pass for them)."""
    rng = np.random.default_rng(seed)
    n = len(x)
    codes = np.arange(n) if clusters is None else np.unique(clusters, return_inverse=True)[1]
    units = int(codes.max()) + 1 if n else 0
    sums = _unit_sums(x, y, codes, units)
    tables = confusions(x, y, scale, codes, units)
    k = tables.shape[1]
    tables = tables.reshape(units, k * k).astype(float)
    sizes = np.bincount(codes, minlength=units).astype(float)
    out: dict[str, list[float | None]] = {m: [] for m in CI_METRICS}
    lay = layout(x, y)  # once: every resample's rank figures are counted from it, with no sort
    for _ in range(resamples):
        chosen = rng.integers(0, units, size=units)
        drawn = np.bincount(chosen, minlength=units)
        weight = drawn.astype(float)
        p = pooled_counted(lay, drawn[codes])
        fig: dict[str, float | None] = {
            "spearman": p.spearman if p.defined else None,
            "kendall": p.kendall if p.defined else None,
            "pearson": _pearson_of(weight @ sums) if p.defined else None,
        }
        # An item drawn twice would tie with its own copy: leave such pairs out of the tie rate,
        # or the interval sits above the estimate (0 ties, interval [0.07, 0.4] on 6 items).
        copies = float(np.dot(sizes, weight * (weight - 1) / 2))
        pairs = p.n * (p.n - 1) / 2 - copies
        fig["tie_rate"] = (p.tied_x - copies) / pairs if pairs > 0 else None
        table = (weight @ tables).reshape(k, k)
        for w in KAPPA_WEIGHTS:
            fig[kappa_key(w)] = kappa_from_confusion(table, w)
        for m in CI_METRICS:
            out[m].append(fig[m])
    return summarise(out, estimates, units)


def _unit_sums(x: np.ndarray, y: np.ndarray, codes: np.ndarray, units: int) -> np.ndarray:
    """Per unit: the sums of x, y, x*y, x*x and y*y, both sides centred on the whole sample's mean first (a
    shift changes no correlation, and centred sums lose no precision)."""
    dx, dy = x - x.mean(), y - y.mean()
    return np.column_stack(
        [
            np.bincount(codes, weights=v, minlength=units)
            for v in (np.ones(len(x)), dx, dy, dx * dy, dx * dx, dy * dy)
        ]
    )


def _pearson_of(total: np.ndarray) -> float:
    """Pearson's r from the weighted sums of _unit_sums (count first); NaN when a side is constant."""
    count, sx, sy, sxy, sxx, syy = total
    cov, vx, vy = sxy - sx * sy / count, sxx - sx * sx / count, syy - sy * sy / count
    with np.errstate(divide="ignore", invalid="ignore"):
        r = cov / np.sqrt(vx * vy)
    return float(np.clip(r, -1.0, 1.0))
