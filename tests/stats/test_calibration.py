"""Calibration: reliability bins and ECE by hand, the human-rating rule, `geval calibration` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.stats.calibration import calibrated_ece, calibration, observed_shares, rater_ratings
from geval_core.types import Item, Scale
from prompt_library import Library

S = Scale(1, 5)


def test_mean_rounds_halves_up_and_raters_give_shares():
    assert observed_shares([3.5], S).tolist() == [0, 0, 0, 1, 0]
    assert observed_shares([2.5], S).tolist() == [0, 0, 1, 0, 0]
    assert observed_shares([3.67], S).tolist() == [0, 0, 0, 1, 0]
    assert observed_shares([2, 3, 3], S).tolist() == pytest.approx([0, 1 / 3, 2 / 3, 0, 0])
    assert rater_ratings(
        {"coherence": 2.67, "coherence.0": 2, "coherence.1": 3, "coherence.2": 3}, "coherence"
    ) == [2, 3, 3]
    assert rater_ratings({"coherence": 2.67, "fluency.0": 1}, "coherence") == [2.67]
    assert rater_ratings({"fluency": 1}, "coherence") == []


def by_hand(dists, ratings, bins):
    """Loop version: every (item, rating) pair into its bin, ECE as the weighted gap."""
    cells = {}
    for d, r in zip(dists, ratings, strict=True):
        total = sum(d.values())
        for point in S.points:
            p = d.get(point, 0) / total
            obs = sum(int(np.floor(x + 0.5)) == point for x in r) / len(r)
            b = min(int(p * bins), bins - 1)
            cells.setdefault(b, []).append((p, obs))
    ece = sum(len(v) * abs(np.mean([a for a, _ in v]) - np.mean([o for _, o in v])) for v in cells.values())
    return ece / sum(len(v) for v in cells.values()), cells


def test_reliability_and_ece_match_a_loop():
    rng = np.random.default_rng(3)
    dists, ratings = [], []
    for _ in range(80):
        p = rng.dirichlet(np.ones(5) * 0.7)
        dists.append({r: float(q) for r, q in zip(S.points, p, strict=True)})
        ratings.append(list(rng.integers(1, 6, size=rng.integers(1, 4)).astype(float)))
    out = calibration(dists, ratings, S, bins=10)
    ece, cells = by_hand(dists, ratings, 10)
    assert out["ece"] == pytest.approx(ece)
    assert [b["count"] for b in out["bins"]] == [len(cells[k]) for k in sorted(cells)]
    for b, k in zip(out["bins"], sorted(cells), strict=True):
        assert b["predicted"] == pytest.approx(np.mean([a for a, _ in cells[k]]))
        assert b["observed"] == pytest.approx(np.mean([o for _, o in cells[k]]))
    assert sum(out["expected"]) == pytest.approx(80) and sum(out["observed"]) == pytest.approx(80)


def test_a_calibrated_judge_has_a_small_ece():
    rng = np.random.default_rng(4)
    dists, ratings = [], []
    for _ in range(3000):
        p = rng.dirichlet(np.ones(5))
        dists.append(dict(zip(S.points, p.tolist(), strict=True)))
        ratings.append([float(rng.choice(S.points, p=p))])  # people draw from the judge's own distribution
    assert calibration(dists, ratings, S)["ece"] < 0.02
    overconfident = [{r: (1.0 if r == max(d, key=d.get) else 0.0) for r in S.points} for d in dists]
    assert calibration(overconfident, ratings, S)["ece"] > 0.1


def test_score_bins():
    out = calibration(
        [{1: 1.0}, {4: 1.0}, {4: 0.5, 5: 0.5}], [[1.0], [3.0], [5.0]], S, scores=[1.0, 4.0, 4.5]
    )
    assert out["score_bins"] == [
        {"point": 1, "count": 1, "judge_mean": 1.0, "human_mean": 1.0},
        {"point": 4, "count": 1, "judge_mean": 4.0, "human_mean": 3.0},
        {"point": 5, "count": 1, "judge_mean": 4.5, "human_mean": 5.0},
    ]


def test_calibration_cli(tmp_path):
    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension()).prompt
    items = [
        Item(
            f"i{k}",
            {"document": "d", "summary": f"s{k}"},
            {
                "coherence": 1 + k % 5,
                **({"coherence.0": 1 + k % 5, "coherence.1": 1 + (k + 1) % 5} if k % 2 else {}),
            },
        )
        for k in range(20)
    ]
    lib.import_items("gold", items)
    run_id = lib.create_run(prompt.id, "gold", prompt.dimension.judge)
    for k, item in enumerate(items):
        dist = {r: (0.6 if r == 1 + k % 5 else 0.1) for r in S.points}
        lib.save_judgment(
            run_id, Judgment(item.id, score=float(1 + k % 5), distribution=dist, mode="logprobs")
        )
    lib.close()
    res = CliRunner().invoke(
        cli, ["calibration", run_id, "--human", "coherence", "--db", str(tmp_path / "lib.db"), "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    ratings = [rater_ratings(i.human, "coherence") for i in items]
    ref = calibration(
        [{r: (0.6 if r == 1 + k % 5 else 0.1) for r in S.points} for k in range(20)], ratings, S
    )
    assert out["ece"] == pytest.approx(ref["ece"]) and out["per_rater"] is True
    assert all({"predicted", "observed", "count"} <= set(b) for b in out["bins"])
    text = CliRunner().invoke(
        cli, ["calibration", run_id, "--human", "coherence", "--db", str(tmp_path / "lib.db")]
    )
    assert text.exit_code == 0 and "ECE" in text.output
    null = out["ece_calibrated"]
    assert f"a perfectly calibrated judge on these items: {null['mean']:.3f} on average" in text.output
    # 20 items: this ECE is within a calibrated judge's, and the command says it cannot tell.
    assert (out["ece"] <= null["q95"]) == ("cannot tell miscalibration from noise" in text.output)
    bad = CliRunner().invoke(
        cli, ["calibration", "nope", "--human", "coherence", "--db", str(tmp_path / "lib.db")]
    )
    assert bad.exit_code == 1 and "Traceback" not in bad.output


def test_observed_rows_in_one_pass_equal_the_per_item_shares():
    from geval_core.stats.calibration import _observed

    rng = np.random.default_rng(4)
    ratings = [list(rng.uniform(0.5, 5.5, rng.integers(1, 5))) for _ in range(300)]
    keep = sorted(rng.choice(300, 200, replace=False).tolist())
    rows = _observed(ratings, keep, S)
    by_hand = []  # halves up, clipped into 1-5, counted per item
    for i in keep:
        points = [min(5, max(1, int(np.floor(v + 0.5)))) for v in ratings[i]]
        by_hand.append([points.count(p) / len(points) for p in range(1, 6)])
    assert np.allclose(rows, np.array(by_hand), atol=1e-15)


@pytest.mark.parametrize(("items", "raters"), [(16, 1), (60, 3), (300, 1)])
def test_the_calibrated_judges_ece_bound_holds_95_percent_for_calibrated_judges(items, raters):
    """Coverage by simulation: judges calibrated by construction (people draw from the judge's own
    probabilities, Dirichlet-spread, few items as well as many) show an ECE at or below the bound ~95% of the
    time; a judge that puts its mass one point too high is flagged on 300 items every time."""
    rng = np.random.default_rng(items * 10 + raters)
    held, flagged = 0, 0
    checks = 150
    for _ in range(checks):
        p = rng.dirichlet(np.ones(5) * 0.7, size=items)
        ratings = [list(rng.choice(S.points, size=raters, p=row).astype(float)) for row in p]
        dists = [dict(zip(S.points, row.tolist(), strict=True)) for row in p]
        out = calibration(dists, ratings, S)
        held += out["ece"] <= out["ece_calibrated"]["q95"]
        shifted = [dict(zip(S.points, np.roll(row, 1).tolist(), strict=True)) for row in p]
        wrong = calibration(shifted, ratings, S)
        flagged += wrong["ece"] > wrong["ece_calibrated"]["q95"]
    assert 0.91 <= held / checks <= 0.99, held / checks
    if items >= 300:
        assert flagged == checks


def test_calibrated_ece_is_the_mean_of_hand_drawn_ratings():
    # One item, p = (0.8, 0.2, 0, 0, 0), five (p, observed) pairs. People give 1 (chance 0.8): gaps 0.2 at 0.8
    # and 0.2 at 0.2, ECE 0.4 / 5 = 0.08; they give 2 (chance 0.2): gaps 0.8 and 0.8, ECE 0.32.
    null = calibrated_ece(np.array([[0.8, 0.2, 0, 0, 0]]), [1], bins=10)
    assert null["mean"] == pytest.approx(0.8 * 0.08 + 0.2 * 0.32, abs=0.025)  # 200 draws: SE ~0.007
    assert null["q95"] == pytest.approx(0.32)
