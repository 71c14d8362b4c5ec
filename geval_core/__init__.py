"""G-Eval Workbench core: scoring, statistics, prompts, judges and the runner (no Streamlit here)."""

from . import errors, lazy

# The package's face, stated once: each public name and the module that defines it. `__all__`, attribute access
# and `dir()` come from this table; type checkers read `__init__.pyi`, which geval_core.lazy writes from it.
# The names load on first use (PEP 562): `geval --help` and `geval runs list` need neither numpy (stats) nor a
# judge's SDK, and `from geval_core.errors import X` should not pay for them either.
_EXPORTS: dict[str, tuple[str, ...]] = {
    ".errors": tuple(errors.__all__),  # the one error tree, every class of it
    ".types": (
        "HAND_WRITTEN",
        "Choice",
        "Dimension",
        "FrozenPrompt",
        "Item",
        "JudgeReply",
        "JudgeRequest",
        "JudgeSettings",
        "Position",
        "Scale",
        "TopLogprob",
        "Usage",
    ),
    ".judgment": ("ItemScore", "Judgment"),
    ".store": ("Store",),
    ".prompts.checks": ("Check",),
    ".prompts.hash": ("content_hash",),
    ".prompts.render": ("default_template", "render"),
    ".prompts.steps": ("DriftReport", "drift", "generate_steps", "parse_steps"),
    ".scoring.weighted": ("SampledScore", "WeightedScore", "sampled_score", "score_reply", "weighted_score"),
    ".stats.agreement": ("AgreementResult", "agreement", "tie_rate"),
    ".files.prompt_files": ("export_prompt", "load_prompt"),
    ".providers": ("get_judge",),
    ".providers.capabilities": ("check_dimension",),
    ".run.options": ("RunOptions", "RunSummary"),
    ".run.cost": ("estimate_cost",),
    ".run.runner": ("run_scoring",),
    ".run.one_item": ("score_item",),
    ".run.many_items": ("score_items",),
    ".diagnostics.drift": ("drift_check", "freeze_watch"),
    ".diagnostics.drift_file": ("drift_check_file",),
    "prompt_library.library": ("open_library",),
    "prompt_library.frames": ("agree_frame", "score_frame"),
}
_MODULE_OF, __getattr__, __dir__ = lazy.lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_MODULE_OF)
