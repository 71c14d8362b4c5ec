"""Bias probes: perturbations change what they claim, the statistics match scipy, `geval probe bias` runs."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
import scipy.stats as st
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.diagnostics.bias_probes import perturbation_probe
from geval_core.diagnostics.perturb import (
    drop_or_double_words,
    foreign_sentence,
    kind_for,
    sentences,
    shuffle_sentences,
    swap_fact,
)
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.stats.bias import length_bias, partial_spearman, per_system, sensitivity, wilson
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

TEXT = "The council met on Monday. It approved 12 new homes. Residents cheered. Mayor Smith thanked Jones."


@pytest.mark.parametrize("seed", range(20))
def test_a_shuffled_copy_has_the_same_sentences_in_another_order(seed):
    out = shuffle_sentences(TEXT, random.Random(seed))
    assert sorted(sentences(out)) == sorted(sentences(TEXT)) and sentences(out) != sentences(TEXT)


@pytest.mark.parametrize("seed", range(20))
def test_words_are_only_dropped_or_doubled(seed):
    out = drop_or_double_words(TEXT, random.Random(seed)).split()
    words = TEXT.split()
    assert out != words
    it = iter(out)  # every word of the copy comes, in order, from the original (doubles consecutive)
    kept = [w for w in words if w in set(out)]
    assert set(out) <= set(words) and all(any(x == w for x in it) for w in dict.fromkeys(kept))


@pytest.mark.parametrize("seed", range(20))
def test_a_swap_changes_one_number_and_nothing_else(seed):
    out = swap_fact(TEXT, random.Random(seed))
    assert re.sub(r"\d+", "#", out) == re.sub(r"\d+", "#", TEXT) and out != TEXT
    named = swap_fact("Mayor Smith thanked Jones, and Jones thanked Smith.", random.Random(seed))
    assert named == "Mayor Jones thanked Smith, and Smith thanked Jones."
    assert swap_fact("nothing to swap here.", random.Random(seed)) is None


def test_a_foreign_sentence_is_added_whole():
    other = "Storms hit the coast. Ferries were cancelled."
    out = foreign_sentence(TEXT, other, random.Random(1))
    new = [s for s in sentences(out) if s not in sentences(TEXT)]
    assert len(sentences(out)) == len(sentences(TEXT)) + 1 and new[0] in sentences(other)


def test_kinds_by_dimension():
    assert [kind_for(n) for n in ("Coherence", "fluency", "Consistency", "Relevance", "Engagingness")] == [
        "shuffle",
        "words",
        "swap",
        "foreign",
        None,
    ]


def test_statistics_against_scipy_and_by_hand():
    rng = np.random.default_rng(0)
    human = rng.normal(size=60)
    length = rng.integers(10, 80, 60).astype(float)
    score = human + 0.02 * length + rng.normal(0, 0.5, 60)
    out = length_bias(score, length, human)
    assert out["length_spearman"] == pytest.approx(st.spearmanr(score, length).statistic)
    # Partial correlation = correlation of the residuals of ranks regressed on the human ranks.
    rs, rl, rh = (st.rankdata(v) for v in (score, length, human))
    res = [a - np.polyval(np.polyfit(rh, a, 1), rh) for a in (rs, rl)]
    assert partial_spearman(score, length, human) == pytest.approx(st.pearsonr(*res).statistic)
    rows = per_system([4, 3, 2, 5], [3, 3, 2, 4], ["M8", "M8", "M9", "M9"], "gpt-4o-2024", {"M8": "GPT"})
    assert rows[0] == {
        "system": "M8",
        "items": 2,
        "judge_mean": 3.5,
        "human_mean": 3.0,
        "judge_minus_human": 0.5,
        "family": "GPT",
        "same_family_as_judge": True,
    }
    assert rows[1]["same_family_as_judge"] is False
    s = sensitivity([4, 4, 3, 2, None], [3, 4, 3.5, 1, 1])
    assert (s["pairs"], s["lower"], s["same"], s["sensitivity"]) == (4, 2, 1, 0.5)
    for k, n in ((0, 10), (7, 20), (20, 20)):
        ci = st.binomtest(k, n).proportion_ci(method="wilson")
        assert wilson(k, n) == pytest.approx([ci.low, ci.high])


def probe_library(tmp_path, count=12):
    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension(JudgeSettings(provider="scripted", model="scripted-1"))).prompt
    items = [
        Item(
            f"i{k}",
            {
                "document": "d",
                "summary": f"First {k}. Then {k + 1} came. Last one {k}.",
                "system": f"M{k % 2}",
            },
            {"coherence": float(1 + k % 5)},
        )
        for k in range(count)
    ]
    lib.import_items("gold", items)
    run_id = lib.create_run(prompt.id, "gold", prompt.dimension.judge)
    for item in items:
        lib.save_judgment(run_id, Judgment(item.id, score=4.0, mode="logprobs"))
    return lib, run_id


def order_judge():
    """Rates a summary 4 when its sentences come in order (First, Then, Last), else 2."""

    def script(request):
        text = request.messages[-1]["content"]
        ordered = text.find("First") < text.find("Then") < text.find("Last")
        return {"4": 0.9, "2": 0.1} if ordered else {"2": 0.9, "4": 0.1}

    return ScriptedJudge(script)


def test_perturbation_probe_through_the_runner(tmp_path):
    lib, run_id = probe_library(tmp_path)
    out = perturbation_probe(lib, run_id, order_judge(), limit=8)
    assert (out["kind"], out["field"], out["pairs"], out["lower"]) == ("shuffle", "summary", 8, 8)
    assert out["sensitivity"] == 1.0 and out["ci"] == pytest.approx(wilson(8, 8))
    probe_items = lib.dataset_items(lib.get_run(out["probe_run"]).dataset_id)
    assert all(i.id.endswith("~shuffle") for i in probe_items)


def test_probe_bias_cli(tmp_path):
    lib, run_id = probe_library(tmp_path)
    lib.close()
    args = [
        "probe",
        "bias",
        run_id,
        "--db",
        str(tmp_path / "lib.db"),
        "--system-field",
        "system",
        "--family",
        "M1=scripted",
        "--limit",
        "5",
    ]
    res = CliRunner().invoke(cli, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["human"] == "coherence" and out["family_warnings"] == ["M1"]
    assert out["perturbation"]["pairs"] == 5 and {"sensitivity", "ci"} <= set(out["perturbation"])
    text = CliRunner().invoke(cli, [*args, "--no-perturb"])
    assert text.exit_code == 0 and "WARNING: same family" in text.output
    bad = CliRunner().invoke(cli, [*args, "--family", "oops"])
    assert bad.exit_code == 2 and "SYSTEM=FAMILY" in bad.output
