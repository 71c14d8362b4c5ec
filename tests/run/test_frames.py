"""score_frame / agree_frame: a DataFrame in, the runner's judgments out beside its columns; the agreement
figures against scipy's."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats as scipy_stats

from geval_core import agree_frame, score_frame
from geval_core.errors import InputError
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run.one_item import judge_item
from prompt_library import Library


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The seeded coherence prompt and the sample items as a DataFrame with an id, a rating and a group."""
    with Library(tmp_path_factory.mktemp("seed") / "lib.db") as lib:
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
    frame = pd.DataFrame(
        [{"key": i.id, **i.fields, "rating": i.human.get("coherence"), "doc": i.group} for i in items]
    )
    return prompt, items, frame


class Counting(ScriptedJudge):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def judge(self, request):
        self.calls += 1
        return super().judge(request)


def test_each_row_gets_the_judgment_one_item_would_in_row_order(sample):
    prompt, items, frame = sample
    shuffled = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    out = score_frame(prompt, shuffled, judge=ScriptedJudge(), id_column="key", concurrency=4)
    assert list(out["key"]) == list(shuffled["key"]) and list(out.columns[: len(frame.columns)]) == list(
        frame.columns
    )
    by_id = {i.id: i for i in items}
    for _, row in out.iterrows():
        one = judge_item(prompt, by_id[row["key"]], ScriptedJudge(), prompt.dimension.judge)
        assert row["score"] == pytest.approx(one.score, abs=1e-12)
        assert row["distribution"] == pytest.approx(one.distribution)
        assert row["valid_mass"] == pytest.approx(one.valid_mass)
    assert out.attrs["summary"]["judged"] == len(frame) and out.attrs["summary"]["status"] == "done"


def test_a_library_keeps_the_run_and_a_second_call_is_answered_from_its_cache(sample, tmp_path):
    prompt, _, frame = sample
    first, second = Counting(), Counting()
    rows = frame.head(8).to_dict("records")  # a list of dicts works as a frame does
    a = score_frame(prompt, rows, judge=first, id_column="key", library=str(tmp_path / "nb.db"))
    b = score_frame(prompt, rows, judge=second, id_column="key", library=str(tmp_path / "nb.db"))
    assert first.calls == 8 and second.calls == 0 and b.attrs["summary"]["cached"] == 8
    assert list(a["score"]) == list(b["score"]) and a.attrs["run_id"] != b.attrs["run_id"]
    with Library(tmp_path / "nb.db", seed_examples=False) as lib:
        assert lib.get_run(a.attrs["run_id"]).status == "done"
        assert len(lib.judgments(b.attrs["run_id"])) == 8


def test_rows_without_the_prompts_inputs_are_refused_before_any_call(sample):
    prompt, _, frame = sample
    judge = Counting()
    with pytest.raises(InputError, match="summary"):
        score_frame(prompt, frame.drop(columns=["summary"]), judge=judge)
    assert judge.calls == 0
    with pytest.raises(InputError, match="unsupported file type"):  # a string is a data file's path
        score_frame(prompt, "not rows", judge=judge)
    with pytest.raises(TypeError, match="DataFrame, a list of dicts"):
        score_frame(prompt, 42, judge=judge)


def test_agree_frame_matches_scipy_and_resamples_documents(sample):
    prompt, _, frame = sample
    out = score_frame(prompt, frame, judge=ScriptedJudge(), id_column="key")
    table = agree_frame(out, "rating", bootstrap=300).set_index("figure")
    both = out[["score", "rating"]].dropna()
    assert table.loc["spearman", "value"] == pytest.approx(
        scipy_stats.spearmanr(both["score"], both["rating"])[0]
    )
    assert table.loc["kendall", "value"] == pytest.approx(
        scipy_stats.kendalltau(both["score"], both["rating"])[0]
    )
    low, high = table.loc["spearman", ["low", "high"]]
    assert low < table.loc["spearman", "value"] < high
    clustered = agree_frame(out, "rating", cluster="doc", bootstrap=300)
    assert (
        clustered.attrs["ci_resampled"] == "groups" and clustered.attrs["ci_units"] == frame["doc"].nunique()
    )
    grouped = agree_frame(out, "rating", group="doc", bootstrap=0)
    assert grouped.attrs["reading"] == "group"
    assert set(grouped["no_interval"]) == {"no intervals: bootstrap=0"}
    assert (table["no_interval"].loc[["spearman", "kendall"]] == "").all()  # intervals there: no reason


def test_agree_frame_says_why_a_figure_has_no_interval(sample):
    prompt, _, frame = sample
    out = score_frame(prompt, frame, judge=ScriptedJudge(), id_column="key")
    few = out[out["doc"].isin(sorted(out["doc"].unique())[:4])]  # 4 documents: too few to resample
    table = agree_frame(few, "rating", cluster="doc", bootstrap=200).set_index("figure")
    assert table.loc["spearman", ["low", "high"]].isna().all()
    assert table.loc["spearman", "no_interval"].startswith("no intervals: 4 groups resampled, fewer than 10")
    with pytest.raises(InputError, match="no column 'nope'"):
        agree_frame(out, "nope")


def test_the_real_local_judge_scores_a_frame_end_to_end(sample, local_judge):
    prompt, _, frame = sample
    out = score_frame(prompt, frame.head(2), judge=local_judge, id_column="key")
    assert out["error"].isna().all() and out["model_version"].str.contains("SmolLM2").all()
    assert all(abs(sum(d.values()) - 1) < 1e-6 for d in out["distribution"])  # renormalised on the ratings


def test_a_panel_scores_a_frame_with_every_member(sample, tmp_path):
    from dataclasses import replace

    from geval_core.run.panel import freeze_panel
    from geval_core.types import JudgeSettings

    prompt, _, frame = sample
    db = str(tmp_path / "panel.db")
    scripted = JudgeSettings(provider="scripted", model="scripted-1")
    with Library(db, seed_examples=False) as lib:
        a = lib.freeze(replace(prompt.dimension, judge=scripted), name="a").prompt
        b = lib.freeze(
            replace(prompt.dimension, judge=scripted, definition="Another wording."), name="b"
        ).prompt
        panel, _ = freeze_panel(lib, "jury", [a, b], "mean")
    out = score_frame(panel, frame.head(10), judge=ScriptedJudge(), id_column="key", library=db)
    assert list(out["key"]) == list(frame.head(10)["key"])
    assert out["score"].tolist() == pytest.approx(((out["a@1"] + out["b@1"]) / 2).tolist())
    assert out["spread"].tolist() == pytest.approx((out["a@1"] - out["b@1"]).abs().tolist())
    assert out.attrs["panel"] == "jury@1" and out.attrs["rule"] == "mean" and len(out.attrs["run_ids"]) == 2
    with pytest.raises(InputError, match="library="):
        score_frame(panel, frame.head(2), judge=ScriptedJudge())


def test_a_mismatch_names_the_prompt_as_the_caller_gave_it(sample, tmp_path):
    """An exported helpfulness@2 is version 1 of the call's own library: the message says @2, as the file does."""
    from dataclasses import replace

    from geval_core.files.prompt_files import write_export

    prompt, _, frame = sample
    second = replace(prompt, version=2)
    exported = write_export(second, tmp_path / "second.json")
    judge = Counting()
    for given in (second, str(exported)):
        with pytest.raises(InputError, match=rf"^{second.label} reads .*rename the columns"):
            score_frame(given, frame.drop(columns=["summary"]), judge=judge)
    assert judge.calls == 0
