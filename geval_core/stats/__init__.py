"""Agreement statistics, in layers (each module imports only those above it):

onepass     the pooled (one-group) codes, ranks, ties, Spearman and Kendall tau-b in one pass
kernels     per-group ranks, tie blocks, Spearman, Kendall tau-b, Pearson (vectorised)
paired      judge/human scores as float arrays, missing pairs dropped, groups as codes
kappa       Cohen's kappa: scale points, weights, confusion tables, the inferred scale
figures     the figures of one reading from per-group stats and a confusion table
bootstrap   95% intervals, resampling groups (or items when ungrouped)
agreement   AgreementResult, agreement, spearman/kendall/pearson/tie_rate, replies_curve
ties        per-item ties and the largest tied clusters
raters      Krippendorff's alpha, pairwise kappa, rater spread (items x raters tables)
ceiling     the human ceiling: each rater against the others, the judge beside them
confidence  the judge's own certainty per item (entropy, spread, margin)
calibration reliability bins and ECE of the judge's rating probabilities
ppi         prediction-powered estimates of the human mean (classic, PPI++)
bias        length and per-system bias, perturbation sensitivity
stored                          the figures of stored runs and datasets, read through a Store
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from ..lazy import lazy_exports

# Loaded on first use (PEP 562): `import geval_core.stats.repeatability` (no numpy) must not load numpy through
# this package, and neither must `geval --help`. `from geval_core.stats import X` works as before.
_EXPORTS = {
    ".agreement": (
        "AgreementResult",
        "agreement",
        "kendall",
        "pearson",
        "replies_curve",
        "spearman",
        "tie_rate",
    ),
    ".stored": ("agreement_inputs_from_run", "judgment_rows", "run_agreement"),
    ".kappa": ("cohen_kappa",),
    ".ties": ("item_ties", "judgment_ties", "reply_agreement", "tie_clusters", "with_ties"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agreement import (
        AgreementResult,
        agreement,
        kendall,
        pearson,
        replies_curve,
        spearman,
        tie_rate,
    )
    from .kappa import cohen_kappa
    from .stored import agreement_inputs_from_run, judgment_rows, run_agreement
    from .ties import item_ties, judgment_ties, reply_agreement, tie_clusters, with_ties


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it on the package; `agreement` stays the function (as when it was
        # imported eagerly here), never the module geval_core.stats.agreement.
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "AgreementResult",
    "agreement",
    "agreement_inputs_from_run",
    "cohen_kappa",
    "item_ties",
    "judgment_rows",
    "judgment_ties",
    "kendall",
    "pearson",
    "replies_curve",
    "reply_agreement",
    "run_agreement",
    "spearman",
    "tie_clusters",
    "tie_rate",
    "with_ties",
]
