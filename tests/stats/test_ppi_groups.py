"""PPI on grouped data: the interval's precision rests on the groups that hold a rating (degrees of freedom and the
small-sample factor from them), and `geval estimate` cautions when grouped-looking data is read without groups."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as stats
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.stats.ppi import ppi_difference, ppi_mean
from geval_core.types import Item
from prompt_library import Library


def grouped(seed: int = 4, groups: int = 20, per: int = 8, rated_in: int = 6, each: int = 2):
    """(judge, human shown, human, document, rated) with ratings only on `each` items of each of the first
    `rated_in` groups."""
    rng = np.random.default_rng(seed)
    docs = np.repeat(np.arange(groups), per)
    human = np.clip(
        np.round(3 + np.repeat(rng.normal(0, 0.8, groups), per) + rng.normal(0, 0.7, len(docs))), 1, 5
    )
    judge = human + np.repeat(rng.normal(0, 0.5, groups), per) + rng.normal(0, 0.6, len(docs))
    rated = (docs < rated_in) & (np.arange(len(docs)) % per < each)
    return judge, [float(h) if r else None for h, r in zip(human, rated, strict=True)], human, docs, rated


def test_classic_ppi_clusters_on_the_rated_groups_by_hand():
    judge, shown, human, docs, rated = grouped()
    e = ppi_mean(judge, shown, "classic", [f"d{g}" for g in docs])
    xr, yr, xu = judge[rated], human[rated], judge[~rated]
    theta = xu.mean() + (yr - xr).mean()
    infl = np.where(
        rated, ((human - judge) - (yr - xr).mean()) / rated.sum(), (judge - xu.mean()) / (~rated).sum()
    )
    sums = np.array([infl[docs == g].sum() for g in range(20)])
    se = np.sqrt(6 / 5 * (sums**2).sum())  # the 6 groups that hold a rating, not all 20
    t = stats.t.ppf(0.975, 5)
    assert (e.groups, e.rated_groups) == (20, 6)
    assert e.estimate == pytest.approx(theta) and e.se == pytest.approx(se)
    assert e.ci == pytest.approx([theta - t * se, theta + t * se])
    assert e.human_ci[1] - e.human_ci[0] == pytest.approx(
        2
        * t
        * np.sqrt(6 / 5 * sum(((yr[docs[rated] == g] - yr.mean()) / len(yr)).sum() ** 2 for g in range(6)))
    )


def test_ratings_in_fewer_than_five_groups_get_no_interval():
    judge, shown, _, docs, _ = grouped(rated_in=4, each=3)
    e = ppi_mean(judge, shown, "classic", [f"d{g}" for g in docs])
    assert e.rated_groups == 4 and e.ci is None and "ratings sit in 4 groups, fewer than 5" in e.warning


def test_a_difference_takes_its_degrees_of_freedom_from_rated_groups():
    judge, shown, _, docs, _ = grouped()
    a = ppi_mean(judge, shown, "classic", [f"d{g}" for g in docs])
    b = ppi_mean(judge + 0.3, shown, "classic", [f"d{g}" for g in docs])
    d = ppi_difference(a, b)
    df = int(d["se"] ** 4 / (a.se**4 / 5 + b.se**4 / 5))
    assert d["ci"] == pytest.approx(
        [d["estimate"] - stats.t.ppf(0.975, df) * d["se"], d["estimate"] + stats.t.ppf(0.975, df) * d["se"]]
    )


def write(tmp_path, judge, shown, docs, field="doc_id"):
    j, d = tmp_path / "j.jsonl", tmp_path / "d.jsonl"
    j.write_text("".join(json.dumps({"id": f"i{k}", "score": float(v)}) + "\n" for k, v in enumerate(judge)))
    d.write_text(
        "".join(
            json.dumps({"id": f"i{k}", "h": h, field: f"doc{g}", "system_id": f"m{k % 8}"}) + "\n"
            for k, (h, g) in enumerate(zip(shown, docs, strict=True))
        )
    )
    return str(j), str(d)


def estimate(*args):
    return CliRunner().invoke(cli, ["estimate", *args])


def test_estimate_cautions_when_a_file_with_documents_is_read_without_groups(tmp_path):
    judge, _, human, docs, _ = grouped(rated_in=20)
    shown = [float(h) if k % 3 else None for k, h in enumerate(human)]
    j, d = write(tmp_path, judge, shown, docs)
    plain = json.loads(estimate(j, "--data", d, "--human", "h", "--json").output)
    assert plain["groups"] == 0 and "'doc_id' (20 values over 160 rows)" in plain["grouping_warning"]
    assert "--group-by doc_id" in plain["grouping_warning"]
    assert "CAUTION: the items carry 'doc_id'" in estimate(j, "--data", d, "--human", "h").output
    clustered = json.loads(estimate(j, "--data", d, "--human", "h", "--group-by", "doc_id", "--json").output)
    assert clustered["groups"] == 20 and clustered["grouping_warning"] == ""
    j, d = write(
        tmp_path, judge, shown, np.arange(len(judge)), field="document"
    )  # every value once: no groups
    assert json.loads(estimate(j, "--data", d, "--human", "h", "--json").output)["grouping_warning"] == ""


def test_estimate_of_a_run_cautions_when_its_dataset_has_no_groups_but_a_document_field(tmp_path):
    judge, _, human, docs, _ = grouped(rated_in=20)
    library = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = library.freeze(dimension()).prompt
    for name, group in (("plain", None), ("grouped", True)):
        items = [
            Item(
                f"i{k}",
                {"document": f"Document {g}.", "summary": f"s{k}", "article_id": f"a{g}"},
                {"coherence": float(h)} if k % 3 else {},
                f"d{g}" if group else None,
            )
            for k, (h, g) in enumerate(zip(human, docs, strict=True))
        ]
        library.import_items(name, items)
        run = library.create_run(prompt.id, name, prompt.dimension.judge)
        for item, score in zip(items, judge, strict=True):
            library.save_judgment(run, Judgment(item.id, score=float(score), mode="logprobs"))
        out = json.loads(
            estimate(run, "--human", "coherence", "--db", str(tmp_path / "lib.db"), "--json").output
        )
        if group:
            assert out["grouping_warning"] == "" and out["groups"] == 20
        else:
            assert "'article_id' (20 values over 160 rows)" in out["grouping_warning"]
            assert "--group article_id" in out["grouping_warning"]
    library.close()
