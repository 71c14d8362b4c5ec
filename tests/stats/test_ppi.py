"""PPI (classic and PPI++): the formulas by hand, coverage by simulation, `geval estimate` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as stats
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.stats.ppi import hold_out, ppi_difference, ppi_mean
from geval_core.types import Item
from prompt_library import Library


def synthetic(rng, n_total, n_rated, bias=0.4):
    """Human ratings 1-5 with a known mean (3.2) and a biased, noisy judge; the first n_rated are rated."""
    probs = np.array([0.1, 0.15, 0.3, 0.3, 0.15])  # mean 3.25
    human = rng.choice(np.arange(1, 6), size=n_total, p=probs).astype(float)
    judge = np.clip(0.6 * human + 1.0 + bias + rng.normal(0, 0.6, n_total), 1, 5)
    shown = [float(h) if i < n_rated else None for i, h in enumerate(human)]
    return judge.tolist(), shown, float(probs @ np.arange(1, 6))


def test_classic_by_hand():
    rng = np.random.default_rng(1)
    judge, human, _ = synthetic(rng, 200, 40)
    e = ppi_mean(judge, human, "classic")
    x, y = np.array(judge[:40]), np.array(human[:40])
    u = np.array(judge[40:])
    theta = u.mean() + (y - x).mean()
    se = np.sqrt(u.var(ddof=1) / len(u) + (y - x).var(ddof=1) / len(y))
    assert e.estimate == pytest.approx(theta) and e.se == pytest.approx(se) and e.lam == 1.0
    t = stats.t.ppf(0.975, 39)  # Student's t with n_rated - 1 df, not the paper's z (coverage at few ratings)
    assert e.ci == pytest.approx([theta - t * se, theta + t * se], abs=1e-12)
    assert (e.n_rated, e.n_total) == (40, 200)
    assert e.judge_mean == pytest.approx(np.mean(judge)) and e.human_mean == pytest.approx(y.mean())


def test_ppi_plus_plus_by_hand():
    rng = np.random.default_rng(2)
    judge, human, _ = synthetic(rng, 300, 50)
    e = ppi_mean(judge, human, "ppi++")
    x, y, u = np.array(judge[:50]), np.array(human[:50]), np.array(judge[50:])
    lam = np.cov(y, x)[0, 1] / ((1 + 50 / 250) * x.var(ddof=1))
    assert 0 < lam < 1 and e.lam == pytest.approx(lam)
    assert e.estimate == pytest.approx(y.mean() + lam * (u.mean() - x.mean()))
    var = (y - lam * x).var(ddof=1) / 50 + lam**2 * u.var(ddof=1) / 250
    assert e.se == pytest.approx(np.sqrt(var))
    assert e.se <= ppi_mean(judge, human, "classic").se + 1e-12  # lambda minimises the variance


def test_uninformative_judge_falls_back_to_the_human_mean():
    human = [1.0, 2.0, 3.0, 4.0, None, None]
    e = ppi_mean([3.0] * 6, human, "ppi++")
    assert e.lam == 0 and e.estimate == pytest.approx(2.5)


@pytest.mark.parametrize("method", ["classic", "ppi++"])
def test_coverage_by_simulation(method):
    rng = np.random.default_rng(7)
    hits = []
    for _ in range(1500):
        judge, human, truth = synthetic(rng, 400, 40)
        lo, hi = ppi_mean(judge, human, method).ci
        hits.append(lo <= truth <= hi)
    assert np.mean(hits) >= 0.93, np.mean(hits)


def test_difference_coverage_by_simulation():
    rng = np.random.default_rng(8)
    hits = []
    for _ in range(1000):
        ja, ha, ta = synthetic(rng, 300, 40, bias=0.2)
        jb, hb, tb = synthetic(rng, 300, 40, bias=0.8)  # same people, a judge biased differently
        d = ppi_difference(ppi_mean(ja, ha), ppi_mean(jb, hb))
        hits.append(d["ci"][0] <= ta - tb <= d["ci"][1])
    assert np.mean(hits) >= 0.93


def test_hold_out_keeps_k_ratings():
    kept = hold_out([1.0, 2.0, None, 4.0, 5.0], 2, seed=3)
    assert sum(v is not None for v in kept) == 2 and kept[2] is None


def test_too_few_rated_is_a_clean_error(tmp_path):
    judge = tmp_path / "j.jsonl"
    judge.write_text('{"id": "a", "score": 3}\n{"id": "b", "score": 4}\n')
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "h": 3}\n{"id": "b", "h": null}\n')
    out = CliRunner().invoke(cli, ["estimate", str(judge), "--data", str(data), "--human", "h"])
    assert out.exit_code == 1 and "at least 2" in out.output and "Traceback" not in out.output


def test_estimate_cli_on_a_library_run(tmp_path):
    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension()).prompt
    rng = np.random.default_rng(0)
    items = [
        Item(
            f"i{k}",
            {"document": "d", "summary": f"s{k}", "system": "A" if k % 2 else "B"},
            {"coherence": float(rng.integers(1, 6))},
        )
        for k in range(60)
    ]
    lib.import_items("gold", items)
    run_id = lib.create_run(prompt.id, "gold", prompt.dimension.judge)
    for item in items:
        lib.save_judgment(
            run_id, Judgment(item.id, score=min(5.0, item.human["coherence"] * 0.8 + 1), mode="logprobs")
        )
    lib.close()
    args = [
        "estimate",
        run_id,
        "--human",
        "coherence",
        "--db",
        str(tmp_path / "lib.db"),
        "--rated",
        "20",
        "--by",
        "system",
        "--diff",
        "A",
        "B",
        "--json",
    ]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert {"estimate", "ci", "judge_mean", "human_mean", "n_rated", "n_total", "method"} <= set(out)
    assert (out["n_rated"], out["n_total"], out["method"]) == (20, 60, "ppi++")
    assert set(out["by"]) == {"A", "B"}
    assert out["difference"]["estimate"] == pytest.approx(
        out["by"]["A"]["estimate"] - out["by"]["B"]["estimate"]
    )
    text = CliRunner().invoke(cli, args[:-1])
    assert text.exit_code == 0 and "PPI estimate" in text.output
    bad = CliRunner().invoke(cli, ["estimate", run_id, "--human", "nope", "--db", str(tmp_path / "lib.db")])
    assert bad.exit_code == 1 and "no human rating 'nope'" in bad.output


def two_system_library(path) -> tuple[str, str, str]:
    """Runs of one prompt on two systems' outputs (different items), people rating every item."""
    lib = Library(path, seed_examples=False)
    prompt = lib.freeze(dimension()).prompt
    rng = np.random.default_rng(1)
    runs = []
    for system, shift in (("A", 0.0), ("B", 1.0)):
        items = [
            Item(
                f"{system}{k}",
                {"document": "d", "summary": f"{system} s{k}"},
                {"coherence": float(min(5, rng.integers(1, 5) + shift))},
            )
            for k in range(50)
        ]
        lib.import_items(f"gold-{system}", items)
        run_id = lib.create_run(prompt.id, f"gold-{system}", prompt.dimension.judge)
        for item in items:
            score = min(5.0, item.human["coherence"] * 0.7 + 1.2 + rng.normal(0, 0.3))
            lib.save_judgment(run_id, Judgment(item.id, score=score, mode="logprobs"))
        runs.append(run_id)
    lib.close()
    return str(path), runs[0], runs[1]


def test_estimate_difference_between_two_runs(tmp_path):
    db, run_a, run_b = two_system_library(tmp_path / "lib.db")
    base = ["estimate", run_a, "--human", "coherence", "--db", db, "--rated", "40"]
    res = CliRunner().invoke(cli, [*base, "--versus", run_b, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    a = json.loads(CliRunner().invoke(cli, [*base, "--json"]).output)  # the same estimate on its own
    b = json.loads(
        CliRunner()
        .invoke(
            cli,
            ["estimate", run_b, "--human", "coherence", "--db", db, "--rated", "40", "--seed", "1", "--json"],
        )
        .output
    )
    assert out["estimate"] == pytest.approx(a["estimate"]) and out["versus"]["estimate"] == pytest.approx(
        b["estimate"]
    )
    d = out["difference"]
    assert (d["a"], d["b"]) == (run_a, run_b) and d["estimate"] == pytest.approx(
        a["estimate"] - b["estimate"]
    )
    se = np.hypot(a["se"], b["se"])  # independent items: variances add
    df = int(se**4 / (a["se"] ** 4 / 39 + b["se"] ** 4 / 39))  # Welch-Satterthwaite
    assert d["se"] == pytest.approx(se) and d["ci"][1] - d["ci"][0] == pytest.approx(
        2 * stats.t.ppf(0.975, df) * se
    )
    assert d["ci"][1] < 0  # B's people rate a whole point higher
    text = CliRunner().invoke(cli, [*base, "--versus", run_b])
    assert text.exit_code == 0 and f"difference {run_a} - {run_b}" in text.output
    same = CliRunner().invoke(cli, [*base, "--versus", run_a])
    assert same.exit_code == 1 and "share 50 items" in same.output and "Traceback" not in same.output
    mixed = CliRunner().invoke(cli, [*base, "--versus", run_b, "--by", "group"])
    assert mixed.exit_code == 2 and "--versus" in mixed.output


def test_a_difference_between_two_runs_names_both_judges_and_cautions_when_they_differ(tmp_path):
    from dataclasses import replace

    from geval_core.run.plan import judge_label

    db, run_a, run_b = two_system_library(tmp_path / "lib.db")
    base = ["estimate", run_a, "--human", "coherence", "--db", db, "--rated", "40", "--versus"]
    same = json.loads(CliRunner().invoke(cli, [*base, run_b, "--json"]).output)["judges"]
    with Library(db) as lib:
        judge = lib.get_prompt(lib.get_run(run_a).prompt_id).dimension.judge
        other = replace(judge, model="another-model", base_url="http://127.0.0.1:9/v1")
        run_c = lib.create_run(lib.get_run(run_b).prompt_id, lib.get_run(run_b).dataset_id, other)
        for row in lib.judgments(run_b):
            lib.save_judgment(run_c, Judgment(row["item_id"], score=row["score"], mode="logprobs"))
    assert (same["a"], same["b"], same["note"]) == (judge_label(judge), judge_label(judge), None)
    out = json.loads(CliRunner().invoke(cli, [*base, run_c, "--json"]).output)
    assert out["judges"]["differ"] == ["model", "base_url"] and judge_label(other) in out["judges"]["note"]
    text = CliRunner().invoke(cli, [*base, run_c]).output
    assert f"judges: {judge_label(judge)} (run {run_a}) and {judge_label(other)} (run {run_c})" in text
    assert "CAUTION: different judges (model, server)" in text


def estimate_files(tmp_path, judge: dict, human: dict, groups: dict | None = None):
    """A judge file (ids under `id`, as `geval score --out` writes) and a data file."""
    j = tmp_path / "j.jsonl"
    j.write_text("".join(json.dumps({"id": k, "score": v}) + "\n" for k, v in judge.items()))
    d = tmp_path / "d.jsonl"
    d.write_text(
        "".join(
            json.dumps({"id": k, "h": v, **({"doc": groups[k]} if groups else {})}) + "\n"
            for k, v in human.items()
        )
    )
    return str(j), str(d)


def estimate(*args):
    return CliRunner().invoke(cli, ["estimate", *args])


def test_few_or_equal_ratings_get_no_interval(tmp_path):
    judge = {f"i{k}": 2.0 + (k % 4) * 0.5 for k in range(60)}
    two = {k: (3.0 + n if n < 2 else None) for n, k in enumerate(judge)}  # ratings 3 and 4
    j, d = estimate_files(tmp_path, judge, two)
    out = json.loads(estimate(j, "--data", d, "--human", "h", "--json").output)
    assert out["n_rated"] == 2 and out["ci"] is None and out["human_ci"] is None
    assert "fewer than 30 for ppi++" in out["warning"]
    text = estimate(j, "--data", d, "--human", "h").output
    assert "no interval" in text and "95% CI" not in text and "random sample" in text
    same = {k: (3.0 if n < 30 else None) for n, k in enumerate(judge)}
    j, d = estimate_files(tmp_path, judge, same)
    out = json.loads(estimate(j, "--data", d, "--human", "h", "--json").output)
    assert out["ci"] is None and "same rating" in out["warning"] and out["estimate"] == pytest.approx(3.0)


def test_estimate_refuses_unknown_ids_and_too_many_rated(tmp_path):
    j, d = estimate_files(tmp_path, {"a": 3.0, "b": 4.0, "zz": 2.0}, {"a": 3.0, "b": 4.0})
    bad = estimate(j, "--data", d, "--human", "h")
    assert bad.exit_code == 1 and "'zz' is not in" in bad.output and "Traceback" not in bad.output
    judge = {f"i{k}": 3.0 + (k % 3) for k in range(30)}
    j, d = estimate_files(tmp_path, judge, {k: float(1 + n % 5) for n, k in enumerate(judge)})
    over = estimate(j, "--data", d, "--human", "h", "--rated", "31")
    assert over.exit_code == 1 and "only 30 items are rated" in over.output
    assert estimate(j, "--data", d, "--human", "h", "--rated", "30").exit_code == 0
    help_text = " ".join(estimate("--help").output.split())
    assert "random sample of the items" in help_text and "[default: id]" in help_text


def test_grouped_items_get_a_cluster_robust_interval(tmp_path):
    rng = np.random.default_rng(4)
    docs = np.repeat(np.arange(15), 8)
    human = np.clip(np.round(3 + np.repeat(rng.normal(0, 0.8, 15), 8) + rng.normal(0, 0.7, 120)), 1, 5)
    judge = human + np.repeat(rng.normal(0, 0.5, 15), 8) + rng.normal(0, 0.6, 120)
    rated = rng.random(120) < 0.4
    ids = [f"i{k}" for k in range(120)]
    j, d = estimate_files(
        tmp_path,
        dict(zip(ids, judge.tolist(), strict=True)),
        {i: (float(h) if r else None) for i, h, r in zip(ids, human, rated, strict=True)},
        {i: f"doc{g}" for i, g in zip(ids, docs, strict=True)},
    )
    out = json.loads(
        estimate(j, "--data", d, "--human", "h", "--group-by", "doc", "--method", "classic", "--json").output
    )
    # Classic PPI by hand: the estimate's influence summed per document, CR1 variance, t with 14 df.
    xr, yr, xu = judge[rated], human[rated], judge[~rated]
    theta = xu.mean() + (yr - xr).mean()
    infl = np.where(
        rated, ((human - judge) - (yr - xr).mean()) / rated.sum(), (judge - xu.mean()) / (~rated).sum()
    )
    sums = np.array([infl[docs == g].sum() for g in range(15)])
    se = np.sqrt(15 / 14 * (sums**2).sum())
    assert out["groups"] == 15 and out["estimate"] == pytest.approx(theta) and out["se"] == pytest.approx(se)
    assert out["ci"] == pytest.approx(
        [theta - stats.t.ppf(0.975, 14) * se, theta + stats.t.ppf(0.975, 14) * se]
    )
    assert "clustered on 15 groups" in estimate(j, "--data", d, "--human", "h", "--group-by", "doc").output


def test_a_difference_of_levels_that_share_documents_is_paired():
    from geval_core.stats.stored import estimate_rows

    rng = np.random.default_rng(6)
    docs = np.repeat(np.arange(30), 2)  # every document has one summary of system A and one of B
    system = np.tile(["A", "B"], 30)
    human = np.clip(np.round(3 + np.repeat(rng.normal(0, 1, 30), 2) + (system == "A") * 0.5), 1, 5)
    judge = human + rng.normal(0, 0.5, 60)
    rated = rng.random(60) < 0.7
    shown = [float(h) if r else None for h, r in zip(human, rated, strict=True)]
    out = estimate_rows(
        judge.tolist(), shown, system.tolist(), "classic", diff=("A", "B"), clusters=[f"d{g}" for g in docs]
    )
    d = out["difference"]
    z_judge, z_human = np.where(system == "A", 2.0, -2.0) * judge, np.where(system == "A", 2.0, -2.0) * human
    theta = z_judge[~rated].mean() + (z_human[rated] - z_judge[rated]).mean()
    assert d["paired"] and d["groups"] == 30 and d["estimate"] == pytest.approx(theta)
    assert d["ci"][0] < d["estimate"] < d["ci"][1]
