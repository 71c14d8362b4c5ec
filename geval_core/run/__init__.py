"""Running a frozen prompt over items: the runner, its session, one judge call, cost, Batch API files."""

from .cost import estimate_cost
from .options import RunOptions, RunSummary
from .runner import run_scoring

__all__ = ["RunOptions", "RunSummary", "estimate_cost", "run_scoring"]
