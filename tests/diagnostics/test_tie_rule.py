"""One tie rule for every rank figure: `compare`, the panel's against-people table and `align report` rank scores
equal to 6 decimals, as `geval agree` does, so one run's Spearman is one number wherever it is printed."""

from __future__ import annotations

import numpy as np
import pytest
from runner_helpers import dimension
from scipy import stats as sps

from geval_core.diagnostics.align import align_report
from geval_core.diagnostics.compare import compare_runs, paired_difference
from geval_core.diagnostics.panel_people import panel_against_people
from geval_core.judgment import Judgment
from geval_core.run.splits import make_split
from geval_core.stats import agreement
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def near_ties(n: int = 120, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(first judge, second judge, people, groups): weighted scores on a 0.1 grid with float noise below 1e-6, so
    that scores equal to 6 decimals differ as raw floats (as sums of probabilities times ratings do)."""
    rng = np.random.default_rng(seed)
    human = np.clip(np.round(3 + np.repeat(rng.normal(0, 1, n // 4), 4) + rng.normal(0, 0.7, n)), 1, 5)
    jitter = rng.choice([0.0, 1e-9, -4e-10, 3e-8], size=(2, n))
    first = np.round(np.clip(human + rng.normal(0, 0.8, n), 1, 5), 1) + jitter[0]
    second = np.round(np.clip(human + rng.normal(0, 0.5, n), 1, 5), 1) + jitter[1]
    return first, second, human, np.repeat(np.arange(n // 4), 4)


def agree_figures(judge: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """`geval agree`'s pooled Spearman, Kendall and Pearson of the same scores."""
    r = agreement(judge, human)
    return {"spearman": r.spearman, "kendall": r.kendall, "pearson": r.pearson}


def test_the_scores_have_near_ties_that_raw_floats_rank_apart():
    first, _, human, _ = near_ties()
    raw = sps.spearmanr(first, human).statistic
    assert abs(raw - agree_figures(first, human)["spearman"]) > 1e-4  # the test can tell the two rules apart
    assert agree_figures(first, human)["spearman"] == pytest.approx(
        sps.spearmanr(np.round(first, 6), human).statistic, abs=1e-12
    )


def test_compare_equals_agree_on_near_ties():
    first, second, human, groups = near_ties()
    out = paired_difference(list(first), list(second), list(human), list(groups), resamples=50)
    for name, value in agree_figures(first, human).items():
        assert out["figures"][name]["first"] == value, name
    for name, value in agree_figures(second, human).items():
        assert out["figures"][name]["second"] == value, name


def test_the_panels_table_equals_agree_on_near_ties():
    first, second, human, groups = near_ties()
    panel = (first + second) / 2
    rows = [
        {"id": f"i{k}", "score": float(p), "members": {"a@1": float(a), "b@1": float(b)}, "group": f"g{g}"}
        for k, (a, b, p, g) in enumerate(zip(first, second, panel, groups, strict=True))
    ]

    class People:
        def human_means(self, dataset_id, name):
            return {f"i{k}": float(h) for k, h in enumerate(human)}

    out = panel_against_people(People(), rows, "d", "coherence", resamples=50)
    for who, judge in (("a@1", first), ("b@1", second), ("panel", panel)):
        assert out["figures"][who] == agree_figures(judge, human), who


@pytest.fixture
def split_library(tmp_path):
    """30 documents of 4 items, split dev / test by document; two prompts, each with one finished run whose scores
    are `near_ties`' two judges."""
    first, second, human, groups = near_ties()
    items = [
        Item(
            f"i{k:03d}",
            {"document": f"Document {g}.", "summary": f"Summary {k}."},
            {"coherence": float(h)},
            f"d{g:02d}",
        )
        for k, (h, g) in enumerate(zip(human, groups, strict=True))
    ]
    library = Library(tmp_path / "lib.db", seed_examples=False)
    data = library.import_items("golden", items)
    make_split(library, data["id"], dev=0.6, seed=1)
    prompts, runs = [], []
    for scores, definition in ((first, None), (second, "How well the sentences build a whole.")):
        changes = {"definition": definition} if definition else {}
        prompt = library.freeze(dimension(SCRIPTED, **changes), name="coherence").prompt
        run = library.create_run(prompt.id, data["id"], SCRIPTED)
        for item, score in zip(items, scores, strict=True):
            library.save_judgment(run, Judgment(item.id, score=float(score), mode="logprobs"))
        library.finish_run(run)
        prompts.append(prompt)
        runs.append(run)
    yield (
        library,
        prompts,
        runs,
        dict(zip((i.id for i in items), zip(first, second, human, strict=True), strict=True)),
    )
    library.close()


def test_align_report_and_compare_runs_equal_agree_on_near_ties(split_library):
    library, prompts, runs, values = split_library
    report = align_report(
        library, prompts[0].id, prompts[1].id, "golden", "coherence", side="dev", resamples=50
    )
    dev = [
        values[i.id]
        for i in library.dataset_items(library.get_dataset("golden").id)
        if i.id in set(_dev_ids(library))
    ]
    first, second, human = (np.array(v) for v in zip(*dev, strict=True))
    assert report["items"] == len(dev)
    for name, value in agree_figures(first, human).items():
        assert report["figures"][name]["first"] == value, name
    for name, value in agree_figures(second, human).items():
        assert report["figures"][name]["second"] == value, name
    whole = compare_runs(library, runs[0], runs[1], "coherence", resamples=50)
    assert whole["figures"]["spearman"]["first"] == agree_figures(*_all(values, 0))["spearman"]


def _dev_ids(library) -> list[str]:
    from geval_core.run.splits import get_split

    return get_split(library, library.get_dataset("golden").id)["dev"]


def _all(values: dict, side: int) -> tuple[np.ndarray, np.ndarray]:
    rows = [values[k] for k in sorted(values)]
    return np.array([r[side] for r in rows]), np.array([r[2] for r in rows])
