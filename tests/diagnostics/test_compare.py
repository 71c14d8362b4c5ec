"""geval compare: paired differences of two runs against people, figures equal to scipy on the same items,
groups resampled for both runs at once, the interval withheld under 10 groups."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from geval_core.cli import cli
from geval_core.diagnostics.compare import paired_difference
from geval_core.judgment import Judgment
from geval_core.types import Item, JudgeSettings
from prompt_library import Library


def population(groups: int, per_group: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    effect = np.repeat(rng.normal(0, 1, groups), per_group)
    human = np.clip(np.round(3 + effect + rng.normal(0, 0.7, groups * per_group)), 1, 5)
    good = human + rng.normal(0, 0.5, len(human))  # a judge close to people
    noisy = human + rng.normal(0, 2.0, len(human))  # a judge far from them
    return human, good, noisy, np.repeat(np.arange(groups), per_group)


def test_figures_equal_scipy_and_a_better_judge_is_seen(tmp_path):
    human, good, noisy, groups = population(40)
    result = paired_difference(list(noisy), list(good), list(human), list(groups), resamples=300)
    spearman = result["figures"]["spearman"]
    assert spearman["first"] == pytest.approx(sps.spearmanr(noisy, human).statistic)
    assert spearman["second"] == pytest.approx(sps.spearmanr(good, human).statistic)
    assert result["figures"]["kendall"]["first"] == pytest.approx(sps.kendalltau(noisy, human).statistic)
    low, high = spearman["interval"]
    assert 0 < low < spearman["difference"] < high and result["groups"] == 40


def test_a_run_against_itself_differs_by_zero_and_few_groups_withhold_the_interval():
    human, good, _, groups = population(40)
    same = paired_difference(list(good), list(good), list(human), list(groups), resamples=200)
    assert same["figures"]["pearson"]["difference"] == 0 and same["figures"]["pearson"]["interval"] == [
        0.0,
        0.0,
    ]
    human, good, noisy, groups = population(6)
    few = paired_difference(list(noisy), list(good), list(human), list(groups), resamples=200)
    assert few["figures"]["spearman"]["interval"] is None and "fewer than 10 groups (6)" in few["withheld"]


def test_geval_compare_two_stored_runs(tmp_path):
    human, good, noisy, groups = population(12)
    library = Library(tmp_path / "lib.db")
    items = [
        Item(f"i{k}", {"document": "d", "summary": "s"}, {"coherence": float(h)}, f"g{g}")
        for k, (h, g) in enumerate(zip(human, groups, strict=True))
    ]
    dataset = library.import_items("paired", items)
    runs = []
    for scores in (noisy, good):
        run = library.create_run("coherence", dataset["id"], JudgeSettings())
        for item, score in zip(items, scores, strict=True):
            library.save_judgment(run, Judgment(item.id, score=float(score), mode="logprobs"))
        runs.append(run)
    library.close()
    done = CliRunner().invoke(
        cli,
        [
            "compare",
            *runs,
            "--human",
            "coherence",
            "--json",
            "--resamples",
            "200",
            "--db",
            str(tmp_path / "lib.db"),
        ],
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["groups"] == 12 and data["resampled"] == "groups"
    assert data["figures"]["spearman"]["second"] == pytest.approx(sps.spearmanr(good, human).statistic)
