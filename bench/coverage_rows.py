"""The rows of bench_coverage: every interval the workbench shows, drawn from one judge family at a time.

Each row function draws `reps` samples of n documents (with replacement) for every n in `sizes`, calls the
workbench's own function and counts, per (row, n, family), the intervals shown, those that covered the
family's value, those shown with a caution (flagged) and those withheld.
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
from coverage_families import Family, draw

from geval_core.diagnostics.compare import _figure, paired_difference
from geval_core.stats import agreement, ppi
from geval_core.stats.bootstrap import CI_METRICS, flagged, near_bound
from geval_core.stats.raters import alpha_intervals, krippendorff_alpha
from geval_core.types import Scale

SCALE = Scale(1, 5)
ALPHAS = ("interval", "ordinal", "nominal")
NEAR_FIGURES = ("spearman", "kendall", "pearson", "kappa_quadratic")
PER_DOC = 16  # items per document drawn one by one for the ungrouped reading (SummEval's 16 summaries)
GROUPED_PPI = (
    ("classic", 10),
    ("ppi++", 30),
    ("classic", 40),
    ("ppi++", 40),
)  # (method, rated): minimums, and 40


class Tally:
    """Shown, covering, flagged and withheld intervals per (row, documents, family)."""

    def __init__(self) -> None:
        self.hits: dict[tuple, int] = defaultdict(int)
        self.shown: dict[tuple, int] = defaultdict(int)
        self.flagged: dict[tuple, int] = defaultdict(int)
        self.withheld: dict[tuple, int] = defaultdict(int)

    def add(self, key: tuple, ci: list[float | None] | None, truth: float, flag: bool = False) -> None:
        """Count one interval (None or [None, None]: withheld; flag: shown with a caution)."""
        if not ci or ci[0] is None:
            self.withheld[key] += 1
            return
        self.shown[key] += 1
        self.flagged[key] += bool(flag)
        self.hits[key] += ci[0] - 1e-12 <= truth <= ci[1] + 1e-12

    def counted(self) -> set[tuple]:
        """Every (row, documents, family) counted."""
        return set(self.shown) | set(self.withheld)

    def cell(self, key: tuple) -> str:
        """'94.5' covered (%), 'f' when most shown intervals were flagged, 'w' shares withheld; '-' unmeasured."""
        n, held = self.shown[key], self.withheld[key]
        if not n:
            return "withheld" if held else "-"
        text = f"{100 * self.hits[key] / n:.1f}"
        if self.flagged[key]:
            share = self.flagged[key] / n
            text += " f" if share == 1 else f" f{int(100 * share)}%"
        if held:
            text += f" w{100 * held / (n + held):.0f}%"
        return text

    def worst_se(self) -> float:
        """The largest binomial standard error of a shown cell (percentage points)."""
        ses = [
            np.sqrt(p * (1 - p) / n)
            for k in self.shown
            if (n := self.shown[k]) and (p := self.hits[k] / n) is not None
        ]
        return 100 * max(ses, default=0.0)


def _few(units: int, unit: str) -> bool:
    return bool(flagged(units, unit or "groups"))


def agreement_rows(fam: Family, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """Group-level and pooled (documents resampled) readings of every figure with an interval."""
    truth = {
        "group-level": agreement(fam.judge, fam.human, fam.doc.tolist(), SCALE),
        "pooled, documents resampled": agreement(fam.judge, fam.human, None, SCALE),
    }
    rng = np.random.default_rng(1)
    for g in sizes:
        for rep in range(reps):
            idx, labels = draw(fam.doc, g, rng)
            x, y, lab = fam.judge[idx], fam.human[idx], labels.tolist()
            for reading, kw in (
                ("group-level", {"groups": lab}),
                ("pooled, documents resampled", {"clusters": lab}),
            ):
                r = agreement(x, y, scale=SCALE, bootstrap=resamples, seed=rep, **kw)
                for m in CI_METRICS:
                    flag = _few(r.ci_units, r.ci_resampled) or m in r.ci_flags
                    tally.add((f"{reading} {m}", g, fam.name), r.ci.get(m), getattr(truth[reading], m), flag)
        print(f"  {fam.name}: agreement, {g} documents", file=sys.stderr, flush=True)


def item_rows(fam: Family, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """Ungrouped data: PER_DOC x n items drawn one by one (i.i.d.), items resampled."""
    truth = agreement(fam.judge, fam.human, None, SCALE)
    rng = np.random.default_rng(2)
    for g in sizes:
        for rep in range(reps):
            idx = rng.integers(0, len(fam.human), size=PER_DOC * g)
            r = agreement(fam.judge[idx], fam.human[idx], None, SCALE, resamples, rep)
            for m in CI_METRICS:
                flag = _few(r.ci_units, r.ci_resampled) or m in r.ci_flags
                tally.add(
                    (f"pooled, {PER_DOC} x n items drawn one by one {m}", g, fam.name),
                    r.ci.get(m),
                    getattr(truth, m),
                    flag,
                )


def near_rows(fam: Family, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """A near-perfect judge (the family's judge on 2% of the items, the people's rating elsewhere)."""
    truth = {
        "group-level": agreement(fam.near, fam.human, fam.doc.tolist(), SCALE),
        "pooled": agreement(fam.near, fam.human, None, SCALE),
    }
    rng = np.random.default_rng(6)
    for g in sizes:
        for rep in range(reps):
            idx, labels = draw(fam.doc, g, rng)
            for reading, kw in (
                ("group-level", {"groups": labels.tolist()}),
                ("pooled", {"clusters": labels.tolist()}),
            ):
                r = agreement(fam.near[idx], fam.human[idx], scale=SCALE, bootstrap=resamples, seed=rep, **kw)
                for m in NEAR_FIGURES:
                    flag = _few(r.ci_units, r.ci_resampled) or m in r.ci_flags
                    tally.add(
                        (f"near-perfect judge, {reading} {m}", g, fam.name),
                        r.ci.get(m),
                        getattr(truth[reading], m),
                        flag,
                    )
            idx = rng.integers(0, len(fam.human), size=PER_DOC * g)
            r = agreement(fam.near[idx], fam.human[idx], None, SCALE, resamples, rep)
            for m in NEAR_FIGURES:
                flag = _few(r.ci_units, r.ci_resampled) or m in r.ci_flags
                tally.add(
                    (f"near-perfect judge, {PER_DOC} x n items drawn one by one {m}", g, fam.name),
                    r.ci.get(m),
                    getattr(truth["pooled"], m),
                    flag,
                )


def alpha_rows(fam: Family, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """The raters' Krippendorff's alpha, documents resampled (the raters: see coverage_families)."""
    truth = {m: krippendorff_alpha(fam.raters, m) for m in ALPHAS}
    rng = np.random.default_rng(4)
    for g in sizes:
        for rep in range(reps):
            idx, labels = draw(fam.raters_doc, g, rng)
            values = fam.raters[idx]
            got = alpha_intervals(values, resamples, rep, ALPHAS, clusters=labels.tolist())
            for m in ALPHAS:
                value = krippendorff_alpha(values, m)
                flag = _few(g, "groups") or bool(value is not None and near_bound(m, value, g))
                tally.add((f"raters' alpha {m}", g, fam.name), got[m], truth[m], flag)


def panel_rows(fam: Family, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """A panel's inter-judge alpha (interval) on its two members' weighted scores, documents resampled."""
    truth = krippendorff_alpha(fam.panel, "interval")
    rng = np.random.default_rng(5)
    for g in sizes:
        for rep in range(reps):
            idx, labels = draw(fam.doc, g, rng)
            got = alpha_intervals(fam.panel[idx], resamples, rep, ("interval",), clusters=labels.tolist())
            value = krippendorff_alpha(fam.panel[idx], "interval")
            flag = _few(g, "groups") or bool(value is not None and near_bound("alpha", value, g))
            tally.add(("panel's inter-judge alpha (interval)", g, fam.name), got["interval"], truth, flag)


def compare_rows(fam: Family, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """`geval compare`: the judge minus the second judge, each figure's paired difference, documents resampled."""
    figures = ("spearman", "kendall", "pearson", "kappa_quadratic")
    truth = {
        f: _figure(f, fam.judge, fam.human, SCALE) - _figure(f, fam.second, fam.human, SCALE) for f in figures
    }
    rng = np.random.default_rng(8)
    for g in sizes:
        for rep in range(reps):
            idx, labels = draw(fam.doc, g, rng)
            out = paired_difference(
                list(fam.second[idx]),
                list(fam.judge[idx]),
                list(fam.human[idx]),
                labels.tolist(),
                resamples,
                seed=rep,
                scale=SCALE,
            )
            for f in figures:
                tally.add(
                    (f"compare: difference of {f}", g, fam.name),
                    out["figures"][f]["interval"],
                    truth[f],
                    bool(out.get("flag")),
                )
        print(f"  {fam.name}: compare, {g} documents", file=sys.stderr, flush=True)


def _rated(rng: np.random.Generator, human: np.ndarray, n: int) -> list[float | None]:
    keep = set(rng.choice(len(human), size=min(n, len(human)), replace=False).tolist())
    return [float(h) if i in keep else None for i, h in enumerate(human)]


def ppi_rows(fam: Family, tally: Tally, sizes: list[int], reps: int) -> None:
    """PPI: items of whole documents (clustered), the same read as independent items (`geval estimate` on a file
    without --group-by: flagged, the command warns), and 400 i.i.d. items with n rated (n = the column)."""
    truth = float(fam.human.mean())
    rng = np.random.default_rng(3)
    for g in sizes:
        for _ in range(reps):
            idx, labels = draw(fam.doc, g, rng)
            for method, rated in GROUPED_PPI:
                human = _rated(rng, fam.human[idx], rated)
                e = ppi.ppi_mean(fam.judge[idx], human, method, labels.tolist())
                tally.add((f"PPI {method}, whole documents, {rated} rated", g, fam.name), e.ci, truth)
                if rated == 40:
                    plain = ppi.ppi_mean(fam.judge[idx], human, method)
                    tally.add(
                        (f"PPI {method}, whole documents read as independent items, 40 rated", g, fam.name),
                        plain.ci,
                        truth,
                        True,
                    )
            tally.add(("human-only mean, whole documents, 40 rated", g, fam.name), e.human_ci, truth)
            idx = rng.integers(0, len(fam.human), size=400)
            human = _rated(rng, fam.human[idx], g)
            for method in ppi.METHODS:
                tally.add(
                    (f"PPI {method}, 400 i.i.d. items, n rated (n = the column)", g, fam.name),
                    ppi.ppi_mean(fam.judge[idx], human, method).ci,
                    truth,
                )
