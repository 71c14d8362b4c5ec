"""`geval agree`: the table, --json, and a clear error (file and line, no traceback) for each bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st
from click.testing import CliRunner
from runner_helpers import judged_run

from geval_core import agreement
from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.types import Scale
from prompt_library import open_library

JUDGE = {
    "d1-a": 4.2,
    "d1-b": 3.1,
    "d1-c": 1.9,
    "d1-d": 3.1,
    "d2-a": 2.0,
    "d2-b": 4.7,
    "d2-c": 3.3,
    "d3-a": 3.0,
    "d3-b": 3.0,
}
HUMAN = {
    "d1-a": 5,
    "d1-b": 3,
    "d1-c": 2,
    "d1-d": 4,
    "d2-a": 1,
    "d2-b": 4,
    "d2-c": 4,
    "d3-a": 2,
    "d3-b": 4,
    "d4-a": 3,
}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path):
    judge = write_jsonl(tmp_path / "judge.jsonl", [{"id": k, "score": v} for k, v in JUDGE.items()])
    data = write_jsonl(
        tmp_path / "data.jsonl",
        [{"id": k, "doc_id": k.split("-")[0], "scores": {"coherence": v}} for k, v in HUMAN.items()],
    )
    return judge, data, tmp_path


def run(*args: str):
    return CliRunner().invoke(cli, ["agree", *args])


def expected(groups: bool):
    ids = list(JUDGE)
    return agreement(
        [JUDGE[i] for i in ids], [HUMAN[i] for i in ids], [i.split("-")[0] for i in ids] if groups else None
    )


def test_json_output_dataset_level(files):
    judge, data, _ = files
    result = run(judge, "--data", data, "--human", "scores.coherence", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    xs, ys = list(JUDGE.values()), [HUMAN[i] for i in JUDGE]
    assert out["spearman"] == pytest.approx(st.spearmanr(xs, ys).statistic)
    assert out["kendall"] == pytest.approx(st.kendalltau(xs, ys).statistic)
    assert out["pearson"] == pytest.approx(st.pearsonr(xs, ys).statistic)
    assert out["tie_rate"] == pytest.approx(2 / 36)  # 3.1 twice, 3.0 twice
    assert (out["items"], out["groups"], out["groups_skipped"], out["reading"]) == (9, 0, 0, "dataset")
    # Quadratic kappa by hand on the 1-5 scale the data spans: judge 4.2 -> 4, 4.7 -> 5, 1.9 -> 2, ...
    judge_points = [4, 3, 2, 3, 2, 5, 3, 3, 3]
    table = np.zeros((5, 5))
    np.add.at(table, (np.array(judge_points) - 1, np.array(ys) - 1), 1)
    chance = np.outer(table.sum(1), table.sum(0)) / table.sum()
    w = np.array([[(i - j) ** 2 / 16 for j in range(5)] for i in range(5)])
    assert out["kappa_quadratic"] == pytest.approx(1 - (w * table).sum() / (w * chance).sum(), abs=1e-12)
    assert out["scale"] == "1-5"
    assert out["unjudged"] == 1 and out["human_field"] == "scores.coherence"


def test_json_output_group_level(files):
    judge, data, _ = files
    out = json.loads(
        run(judge, "--data", data, "--human", "scores.coherence", "--group-by", "doc_id", "--json").output
    )
    per_doc = [
        st.spearmanr([JUDGE[f"{d}-{s}"] for s in ss], [HUMAN[f"{d}-{s}"] for s in ss]).statistic
        for d, ss in (("d1", "abcd"), ("d2", "abc"))
    ]  # d3: the judge is constant -> skipped
    assert out["spearman"] == pytest.approx(sum(per_doc) / 2)
    assert (out["reading"], out["groups"], out["groups_skipped"], out["items"]) == ("group", 2, 1, 9)
    assert out["tie_rate"] == pytest.approx(2 / (6 + 3 + 1))  # within-document pairs only


def test_table_for_people(files):
    judge, data, _ = files
    result = run(judge, "--data", data, "--human", "scores.coherence", "--group-by", "doc_id")
    assert result.exit_code == 0, result.output
    exp = expected(True)
    assert "group-level: correlated within each doc_id" in result.output
    assert f"Spearman rho   {exp.spearman:.3f}" in result.output
    assert f"Kendall tau-b  {exp.kendall:.3f}" in result.output
    assert f"quadratic {exp.kappa_quadratic:.3f}" in result.output
    assert "2 used, 1 skipped" in result.output and "nearest point" in result.output


def test_bootstrap_and_scale_options(files):
    judge, data, _ = files
    out = json.loads(
        run(
            judge,
            "--data",
            data,
            "--human",
            "scores.coherence",
            "--scale",
            "1-5",
            "--bootstrap",
            "50",
            "--json",
        ).output
    )
    ids = list(JUDGE)
    direct = agreement([JUDGE[i] for i in ids], [HUMAN[i] for i in ids], scale=Scale(1, 5), bootstrap=50)
    assert out["ci"]["spearman"] == pytest.approx(direct.ci["spearman"]) and out["scale"] == "1-5"
    bad = run(judge, "--data", data, "--human", "scores.coherence", "--scale", "five")
    assert bad.exit_code == 2 and "MIN-MAX" in bad.output


def test_csv_files_and_a_separate_judge_id_field(tmp_path):
    judge = tmp_path / "judge.csv"
    judge.write_text("item_id,score\n" + "".join(f"{k},{v}\n" for k, v in JUDGE.items()) + "d4-a,\n")
    data = tmp_path / "data.csv"
    data.write_text("id,scores.coherence\n" + "".join(f"{k},{v}\n" for k, v in HUMAN.items()))
    result = run(
        str(judge),
        "--data",
        str(data),
        "--human",
        "scores.coherence",
        "--judge-id-field",
        "item_id",
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert (out["items"], out["missing"], out["judge_missing"]) == (9, 1, 1)  # the empty score is missing
    assert out["kendall"] == pytest.approx(expected(False).kendall)


def error_of(result) -> str:
    assert result.exit_code == 1, result.output
    # A ClickException ends in SystemExit(1): no traceback, just the message.
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    return result.output


@pytest.mark.parametrize(
    ("target", "rows", "line", "words"),
    [
        (
            "judge",
            [{"id": "d1-a", "score": 4}, {"id": "nope", "score": 3}],
            2,
            ["'nope' is not in", "data.jsonl"],
        ),
        ("judge", [{"id": "d1-a", "score": 4}, {"score": 3}], 2, ["field 'id'", "no such field"]),
        ("judge", [{"id": "d1-a", "score": 4}, {"id": None, "score": 3}], 2, ["missing item id"]),
        (
            "judge",
            [{"id": "d1-a", "score": 4}, {"id": "d1-a", "score": 3}],
            2,
            ["duplicate id 'd1-a'", "first on line 1"],
        ),
        ("judge", [{"id": "d1-a", "score": "high"}], 1, ["field 'score'", "not a number: 'high'"]),
        ("judge", [{"id": "d1-a", "score": True}], 1, ["not a number: True"]),
        ("judge", [{"id": "d1-a", "score": "NaN"}], 1, ["not a number"]),
        ("judge", [{"id": "d1-a", "score": {"v": 1}}], 1, ["not a number"]),
        ("judge", [{"id": "d1-a", "scor": 4}], 1, ["field 'score'", "no such field (fields here: id, scor)"]),
        (
            "data",
            [
                {"id": "d1-a", "doc_id": "d1", "scores": {"coherence": 4}},
                {"id": "d1-a", "doc_id": "d1", "scores": {"coherence": 4}},
            ],
            2,
            ["duplicate id"],
        ),
        (
            "data",
            [{"id": "d1-a", "doc_id": "d1", "scores": {"coherence": "4,5"}}],
            1,
            ["not a number: '4,5'"],
        ),
        (
            "data",
            [{"id": "d1-a", "doc_id": "d1", "scores": {"fluency": 4}}],
            1,
            ["field 'scores.coherence'", "scores.fluency"],
        ),
        ("data", [{"id": "d1-a", "scores": {"coherence": 4}}], 1, ["field 'doc_id'", "no such field"]),
        ("data", [{"id": "d1-a", "doc_id": None, "scores": {"coherence": 4}}], 1, ["missing group"]),
    ],
)
def test_errors_name_the_file_and_the_line(files, target, rows, line, words):
    judge, data, tmp_path = files
    path = write_jsonl(tmp_path / f"{target}.jsonl", rows)
    out = error_of(run(judge, "--data", data, "--human", "scores.coherence", "--group-by", "doc_id"))
    assert out.startswith(f"Error: {path}, line {line}")
    for word in words:
        assert word in out


def test_broken_json_and_missing_files(files):
    judge, data, tmp_path = files
    (tmp_path / "judge.jsonl").write_text('{"id": "d1-a", "score": 4}\n{"id": "d1-b", "score": \n')
    out = error_of(run(judge, "--data", data, "--human", "scores.coherence"))
    assert f"Error: {judge}, line 2: broken JSON" in out
    out = error_of(run(str(tmp_path / "absent.jsonl"), "--data", data, "--human", "scores.coherence"))
    assert "absent.jsonl: no such file" in out


def test_help_lists_every_option():
    out = CliRunner().invoke(cli, ["agree", "--help"]).output
    for option in ("--data", "--human", "--score-field", "--id-field", "--group-by", "--json"):
        assert option in out


def test_agree_reads_a_library_run_and_its_dataset(tmp_path):
    """A run id in the library: judge scores from the run, human ratings and groups from its dataset."""
    db = str(tmp_path / "lib.db")
    with open_library(db) as library:
        items = library.dataset_items(library.get_dataset("sample").id)
        # A judge that is the human rating plus a small per-item offset: high but imperfect agreement.
        run_id, judge = judged_run(library, finish=False)
    out = CliRunner().invoke(cli, ["agree", run_id, "--human", "coherence", "--db", db, "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["items"] == len(items)
    assert result["reading"] == "group"
    assert result["groups"] + result["groups_skipped"] == len({i.group for i in items})
    pooled = CliRunner().invoke(
        cli, ["agree", run_id, "--human", "coherence", "--db", db, "--data", "sample", "--json", "--pooled"]
    )
    assert pooled.exit_code == 0, pooled.output
    ids = [i.id for i in items]
    expected = st.spearmanr([judge[i] for i in ids], [i.human["coherence"] for i in items]).statistic
    assert json.loads(pooled.output)["spearman"] == pytest.approx(expected)


def test_agree_names_a_missing_run_or_rating(tmp_path):
    db = str(tmp_path / "lib.db")
    out = CliRunner().invoke(cli, ["agree", "nosuchrun", "--human", "coherence", "--db", db])
    assert out.exit_code != 0 and "nosuchrun" in out.output and "Traceback" not in out.output
    out = CliRunner().invoke(cli, ["agree", "x.jsonl", "--data", "sample", "--human", "nope", "--db", db])
    assert "x.jsonl" in out.output


def test_agree_on_a_library_run_uses_its_prompt_scale_for_kappa(tmp_path):
    """Kappa rounds onto the prompt's 1-3 scale, not the range the data happens to span."""
    db = str(tmp_path / "lib.db")
    with open_library(db) as library:
        items = library.dataset_items(library.get_dataset("sample").id)
        prompt = library.get_prompt("fluency")
        assert (prompt.dimension.scale.min, prompt.dimension.scale.max) == (1, 3)
        run_id = library.create_run(prompt.id, "sample", prompt.dimension.judge)
        for item in items:
            library.save_judgment(run_id, Judgment(item.id, score=2.0, mode="logprobs"))
    out = CliRunner().invoke(cli, ["agree", run_id, "--human", "fluency", "--db", db, "--json", "--pooled"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["scale"] == "1-3"
    # A judge that always says 2 agrees with people no better than chance: kappa exactly 0.
    assert result["kappa"] == pytest.approx(0.0, abs=1e-12)


def grouped_files(tmp_path, n_groups: int, size: int = 6, seed: int = 3):
    """A judge file and a data file of n_groups documents with `size` items each (a document effect)."""
    rng = np.random.default_rng(seed)
    ids = [f"d{g}-{k}" for g in range(n_groups) for k in range(size)]
    human = np.clip(
        np.round(rng.normal(3, 1, len(ids)) + np.repeat(rng.normal(0, 0.7, n_groups), size)), 1, 5
    )
    judge = human + rng.normal(0, 0.8, len(ids))
    jf = write_jsonl(
        tmp_path / "j.jsonl", [{"id": i, "score": float(s)} for i, s in zip(ids, judge, strict=True)]
    )
    df = write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": i, "doc_id": i.split("-")[0], "h": float(h)} for i, h in zip(ids, human, strict=True)],
    )
    return jf, df, judge, human, [i.split("-")[0] for i in ids]


def test_pooled_reading_of_a_file_resamples_its_groups(tmp_path):
    jf, df, judge, human, docs = grouped_files(tmp_path, 12)
    args = [
        jf,
        "--data",
        df,
        "--human",
        "h",
        "--pooled",
        "--group-by",
        "doc_id",
        "--bootstrap",
        "200",
        "--seed",
        "2",
    ]
    res = run(*args, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    direct = agreement(judge, human, scale=Scale(1, 5), bootstrap=200, seed=2, clusters=docs)
    assert out["reading"] == "dataset" and out["spearman"] == pytest.approx(
        st.spearmanr(judge, human).statistic
    )
    assert (out["ci_resampled"], out["ci_units"], out["ci_warning"]) == ("groups", 12, "")
    assert out["ci"]["spearman"] == pytest.approx(direct.ci["spearman"]) and "Fisher z" in out["ci_method"]
    text = run(*args).output
    assert "200 resamples of the 12 groups (doc_id)" in text and "t(units-1)" in text


def test_too_few_groups_withhold_the_intervals_and_say_why(tmp_path):
    jf, df, *_ = grouped_files(tmp_path, 6)
    for reading in (["--group-by", "doc_id"], ["--pooled", "--group-by", "doc_id"]):
        out = json.loads(
            run(jf, "--data", df, "--human", "h", *reading, "--bootstrap", "100", "--json").output
        )
        assert out["ci"]["spearman"] == [None, None] and out["ci_units"] == 6
        assert out["ci_warning"].startswith("no intervals: 6 groups resampled, fewer than 10")
        text = run(jf, "--data", df, "--human", "h", *reading, "--bootstrap", "100").output
        assert "fewer than 10" in text and "95% CI" not in text


def test_kappa_of_one_item_is_not_a_number(tmp_path):
    jf = write_jsonl(tmp_path / "j.jsonl", [{"id": "a", "score": 2.0}])
    df = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "h": 4}])
    out = json.loads(run(jf, "--data", df, "--human", "h", "--scale", "1-5", "--json").output)
    assert out["kappa"] is None and out["kappa_quadratic"] is None
    assert "0.000" not in run(jf, "--data", df, "--human", "h", "--scale", "1-5").output


def test_10_to_19_groups_show_intervals_with_a_caution(tmp_path):
    jf, df, *_ = grouped_files(tmp_path, 12)
    out = json.loads(
        run(jf, "--data", df, "--human", "h", "--group-by", "doc_id", "--bootstrap", "100", "--json").output
    )
    assert out["ci"]["spearman"][0] is not None and out["ci_warning"] == ""
    assert out["ci_flag"].startswith("few groups: 12 resampled")
    assert (
        "CAUTION: few groups"
        in run(jf, "--data", df, "--human", "h", "--group-by", "doc_id", "--bootstrap", "100").output
    )
    jf, df, *_ = grouped_files(tmp_path, 20)
    many = json.loads(
        run(jf, "--data", df, "--human", "h", "--group-by", "doc_id", "--bootstrap", "100", "--json").output
    )
    assert "few groups" not in many["ci_flag"] and many["ci_units"] == 20  # 20 groups: no longer few
    assert many["ci_flag"] == "" or many["ci_flag"].startswith(
        "tie rate from 20 groups"
    )  # its own caution only


def test_agree_takes_a_datasets_one_human_rating_without_human(tmp_path):
    """A dataset with exactly one human rating needs no --human; one with several names them."""
    from click.testing import CliRunner

    from geval_core.cli import cli
    from geval_core.providers.scripted import ScriptedJudge
    from geval_core.run.plan import plan_run, start_run
    from geval_core.types import Item, JudgeSettings
    from prompt_library import Library
    from tests.runner_helpers import dimension

    db = tmp_path / "lib.db"
    with Library(db, seed_examples=False) as lib:
        prompt = lib.freeze(dimension(JudgeSettings(provider="scripted")), name="c").prompt
        data = lib.import_items(
            "one",
            [
                Item(f"i{k}", {"document": f"D {k}.", "summary": f"S {k}."}, {"coherence": float(1 + k % 5)})
                for k in range(12)
            ],
        )
        start_run(lib, plan_run(lib, prompt, data["id"]), ScriptedJudge())
        run_id = lib.list_runs()[0].id
    runner = CliRunner()
    implied = runner.invoke(cli, ["agree", run_id, "--db", str(db), "--json"])
    named = runner.invoke(cli, ["agree", run_id, "--human", "coherence", "--db", str(db), "--json"])
    assert implied.exit_code == 0, implied.output
    assert json.loads(implied.output) == json.loads(named.output)
    seeded = runner.invoke(cli, ["agree", "x.jsonl", "--data", "sample", "--db", str(tmp_path / "s.db")])
    assert seeded.exit_code == 2 and "--human" in seeded.output


def test_per_rater_columns_alone_import_with_their_mean_counted_missing_and_agree_runs(tmp_path):
    """--human NAME.k=COLUMN without NAME: the mean NAME is computed per item (as a list cell's is), an N/A cell
    in a rater's column is counted, and `geval agree RUN` finds NAME."""
    db = str(tmp_path / "lib.db")
    path = tmp_path / "rated.csv"
    rows = [("a", 4, "N/A"), ("b", 2, 3), ("c", 5, 4), ("d", 1, 2), ("e", 3, 3), ("f", 2, "")]
    path.write_text(
        "id,document,summary,r1,r2\n" + "".join(f"{i},Doc {i}.,Sum {i}.,{r1},{r2}\n" for i, r1, r2 in rows),
        encoding="utf-8",
    )
    args = ["datasets", "import", str(path), "--name", "rated", "--input", "document=document"]
    args += ["--input", "summary=summary", "--human", "helpfulness.0=r1", "--human", "helpfulness.1=r2"]
    out = CliRunner().invoke(cli, [*args, "--db", db, "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["human_missing"] == {"helpfulness": 0, "helpfulness.0": 0, "helpfulness.1": 2}
    assert result["human"] == ["helpfulness", "helpfulness.0", "helpfulness.1"]
    with open_library(db) as library:
        items = library.dataset_items("rated")
        assert [i.human["helpfulness"] for i in items] == [4.0, 2.5, 4.5, 1.5, 3.0, 2.0]
        assert "helpfulness.1" not in items[0].human
        run_id = library.create_run("coherence", "rated", library.get_prompt("coherence").dimension.judge)
        for n, item in enumerate(items):
            library.save_judgment(run_id, Judgment(item.id, score=1.0 + n % 5, mode="logprobs"))
        library.finish_run(run_id, model_version="scripted-1")
    told = CliRunner().invoke(cli, [*args, "--db", db])
    assert "helpfulness.1: 2 items without a rating" in told.output
    agree = CliRunner().invoke(cli, ["agree", run_id, "--db", db, "--json"])
    assert agree.exit_code == 0, agree.output
    assert json.loads(agree.output)["items"] == len(rows)
