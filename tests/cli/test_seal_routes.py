"""The seal lives where items are read (issue 38): on a split dataset every command that shows item-level judge or
human values shows the dev side unless the test side is asked for, and asking records a use; items of the sealed
test side imported again as another dataset are refused, or recorded as a use with --test-use. Each route below
either records a use or is refused; on the dev side no test item's id or value comes out."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.run.splits import get_split, make_split, sealed_uses
from geval_core.types import Item, JudgeSettings
from prompt_library import Library


def golden_items() -> list[Item]:
    """12 items in 6 documents, each with a human rating and a text of its own."""
    return [
        Item(
            f"i{k:02d}",
            {
                "document": f"Document {k // 2} tells of place {k // 2}.",
                "summary": f"Summary {k} of document {k // 2}.",
            },
            {"coherence": float(1 + k % 5)},
            f"doc{k // 2}",
        )
        for k in range(12)
    ]


@pytest.fixture
def sealed(tmp_path):
    """A library with a split golden dataset and a run of a prompt on all of it (test side included), finished."""
    db = tmp_path / "lib.db"
    with Library(db, seed_examples=False) as library:
        prompt = library.freeze(dimension(JudgeSettings(provider="openai", model="m")), name="judge-x").prompt
        dataset = library.import_items("golden", golden_items())
        split, _ = make_split(library, dataset["id"], dev=0.5, seed=4)
        run = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
        for k, item in enumerate(golden_items()):
            library.save_judgment(
                run,
                Judgment(
                    item.id, score=1.0 + (k * 7 % 5), mode="logprobs", distribution={"2": 0.5, "4": 0.5}
                ),
            )
        library.finish_run(run)
    return {
        "db": str(db),
        "run": run,
        "dataset": dataset["id"],
        "split": split,
        "prompt": prompt.id,
        "dev": set(split["dev"]),
        "test": set(split["test"]),
    }


def geval(*args: str):
    return CliRunner().invoke(cli, list(args))


def uses(s: dict) -> list[dict]:
    with Library(s["db"], seed_examples=False) as library:
        return sealed_uses(library, get_split(library, s["dataset"]))


def ids_in(text: str, s: dict) -> set[str]:
    return {i for i in s["dev"] | s["test"] if i in text}


def test_runs_export_is_the_dev_side_unless_test_is_asked_for_and_that_is_recorded(sealed, tmp_path):
    out = tmp_path / "dev.jsonl"
    done = geval("runs", "export", sealed["run"], "-o", str(out), "--json", "--db", sealed["db"])
    assert done.exit_code == 0, done.output
    assert {json.loads(line)["id"] for line in out.read_text().splitlines()} == sealed["dev"]
    assert "6 judgments of the sealed test side" in done.stderr and uses(sealed) == []
    assert json.loads(done.stdout)["withheld"] == 6
    stdout = geval("runs", "export", sealed["run"], "--db", sealed["db"])  # to stdout: the same seal
    assert ids_in(stdout.stdout, sealed) == sealed["dev"] and uses(sealed) == []
    opened = geval(
        "runs",
        "export",
        sealed["run"],
        "-o",
        str(tmp_path / "test.jsonl"),
        "--side",
        "test",
        "--db",
        sealed["db"],
    )
    assert opened.exit_code == 0, opened.output
    rows = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows} == sealed["test"] and all("human_coherence" in r for r in rows)
    assert [(u["prompt_id"], u["run_id"], u["read"]) for u in uses(sealed)] == [
        (sealed["prompt"], sealed["run"], "runs export")
    ]


def test_runs_show_lists_the_dev_side_judgments(sealed):
    shown = geval("runs", "show", sealed["run"], "--judgments", "--json", "--db", sealed["db"])
    assert shown.exit_code == 0, shown.output
    assert {r["item_id"] for r in json.loads(shown.stdout)["judgments"]} == sealed["dev"] and uses(
        sealed
    ) == []
    opened = geval(
        "runs", "show", sealed["run"], "--judgments", "--side", "test", "--json", "--db", sealed["db"]
    )
    assert {r["item_id"] for r in json.loads(opened.stdout)["judgments"]} == sealed["test"]
    assert [u["read"] for u in uses(sealed)] == ["runs show"]


def test_review_disagree_shows_dev_gaps_unless_test_is_asked_for_and_recorded(sealed):
    review = (
        "review",
        sealed["run"],
        "--human",
        "coherence",
        "--order",
        "disagree",
        "--limit",
        "0",
        "--db",
        sealed["db"],
    )
    queue = geval(*review, "--json")
    assert queue.exit_code == 0, queue.output
    result = json.loads(queue.stdout)
    assert {r["item"] for r in result["items"]} == sealed["dev"] and result["rated"] == 6
    assert all(r["gap"] is not None for r in result["items"]) and uses(sealed) == []
    text = geval(*review)
    assert ids_in(text.stdout, sealed) == sealed["dev"] and "sealed test side" in text.stderr
    opened = geval(*review, "--side", "test", "--json")
    assert {r["item"] for r in json.loads(opened.stdout)["items"]} == sealed["test"]
    assert [(u["run_id"], u["read"]) for u in uses(sealed)] == [(sealed["run"], "review")]


def files(tmp_path, s: dict) -> tuple[str, str]:
    """A judge file and a ratings file naming the split dataset's items (as an export and the raw file would)."""
    judge, data = tmp_path / "judge.jsonl", tmp_path / "golden.jsonl"
    items = golden_items()
    judge.write_text(
        "".join(json.dumps({"id": i.id, "score": 1 + k % 3}) + "\n" for k, i in enumerate(items))
    )
    data.write_text(
        "".join(json.dumps({"id": i.id, "coherence": i.human["coherence"]}) + "\n" for i in items)
    )
    return str(judge), str(data)


def test_agree_on_two_files_that_name_the_split_dataset_reads_the_dev_side(sealed, tmp_path):
    judge, data = files(tmp_path, sealed)
    done = geval("agree", judge, "--data", data, "--human", "coherence", "--json", "--db", sealed["db"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["items"] == 6 and result["scope"]["side"] == "dev" and result["unjudged"] == 0
    assert uses(sealed) == []
    refused = geval(
        "agree", judge, "--data", data, "--human", "coherence", "--side", "test", "--db", sealed["db"]
    )
    assert refused.exit_code == 2 and "name it with --prompt" in refused.output and uses(sealed) == []
    opened = geval(
        "agree",
        judge,
        "--data",
        data,
        "--human",
        "coherence",
        "--side",
        "test",
        "--prompt",
        "judge-x",
        "--json",
        "--db",
        sealed["db"],
    )
    assert opened.exit_code == 0, opened.output
    assert json.loads(opened.stdout)["items"] == 6
    assert [(u["prompt_id"], u["read"]) for u in uses(sealed)] == [(sealed["prompt"], "agree (files)")]


def test_agree_with_a_library_dataset_reads_the_dev_side(sealed, tmp_path):
    judge, _ = files(tmp_path, sealed)
    done = geval("agree", judge, "--data", "golden", "--human", "coherence", "--json", "--db", sealed["db"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["items"] == 6 and uses(sealed) == []
    on_run = geval("agree", sealed["run"], "--human", "coherence", "--json", "--db", sealed["db"])
    assert json.loads(on_run.stdout)["items"] == 6 and uses(sealed) == []
    opened = geval(
        "agree", sealed["run"], "--human", "coherence", "--side", "test", "--json", "--db", sealed["db"]
    )
    assert json.loads(opened.stdout)["items"] == 6
    assert [(u["run_id"], u["read"]) for u in uses(sealed)] == [(sealed["run"], "agree")]


def test_agree_on_files_of_another_dataset_is_not_sealed(sealed, tmp_path):
    judge, data = tmp_path / "j.jsonl", tmp_path / "d.jsonl"
    judge.write_text("".join(json.dumps({"id": f"x{k}", "score": k % 3}) + "\n" for k in range(5)))
    data.write_text("".join(json.dumps({"id": f"x{k}", "coherence": k % 4}) + "\n" for k in range(5)))
    done = geval(
        "agree", str(judge), "--data", str(data), "--human", "coherence", "--json", "--db", sealed["db"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["items"] == 5 and json.loads(done.stdout)["scope"] is None


def jsonl(path, items: list[Item]) -> str:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": i.id,
                    "doc": i.fields["document"],
                    "text": i.fields["summary"],
                    "coherence": i.human["coherence"],
                }
            )
            + "\n"
            for i in items
        )
    )
    return str(path)


IMPORT = ("--input", "document=doc", "--input", "summary=text", "--human", "coherence=coherence")


@pytest.mark.parametrize("change", ["unchanged", "one space", "case and spaces"])
def test_importing_sealed_test_items_again_is_refused(sealed, tmp_path, change):
    items = [i for i in golden_items() if i.id in sealed["test"]]
    edit = {
        "unchanged": lambda t: t,
        "one space": lambda t: t.replace(" ", "  ", 1),
        "case and spaces": lambda t: f"  {t.upper()}\n",
    }[change]
    copies = [Item(f"copy-{i.id}", {k: edit(v) for k, v in i.fields.items()}, i.human) for i in items]
    refused = geval(
        "datasets",
        "import",
        jsonl(tmp_path / "copy.jsonl", copies),
        "--name",
        "elsewhere",
        *IMPORT,
        "--db",
        sealed["db"],
    )
    assert refused.exit_code == 1, refused.output
    assert "6 of these items" in refused.output and "sealed test side of dataset golden@1" in refused.output
    assert "--test-use PROMPT" in refused.output
    with Library(sealed["db"], seed_examples=False) as library:
        assert "elsewhere" not in {d.name for d in library.list_datasets()}
    assert uses(sealed) == []


def test_importing_sealed_items_with_test_use_is_recorded(sealed, tmp_path):
    items = [i for i in golden_items() if i.id in sealed["test"]][:2]
    done = geval(
        "datasets",
        "import",
        jsonl(tmp_path / "two.jsonl", items),
        "--name",
        "elsewhere",
        *IMPORT,
        "--test-use",
        "judge-x",
        "--db",
        sealed["db"],
    )
    assert done.exit_code == 0, done.output
    assert [(u["prompt_id"], u["read"]) for u in uses(sealed)] == [
        (sealed["prompt"], "import of 2 of its items as elsewhere")
    ]


def test_dev_items_and_the_dataset_itself_import_freely(sealed, tmp_path):
    dev = [i for i in golden_items() if i.id in sealed["dev"]]
    done = geval(
        "datasets",
        "import",
        jsonl(tmp_path / "dev.jsonl", dev),
        "--name",
        "dev-copy",
        *IMPORT,
        "--db",
        sealed["db"],
    )
    assert done.exit_code == 0, done.output
    with Library(sealed["db"], seed_examples=False) as library:
        again = library.import_items("golden", golden_items())  # the split version itself: the same version
    assert again["created"] is False and uses(sealed) == []


def test_datasets_show_lists_the_dev_side(sealed):
    shown = geval("datasets", "show", "golden", "--items", "100", "--json", "--db", sealed["db"])
    data = json.loads(shown.stdout)
    assert {i["id"] for i in data["items"]} == sealed["dev"] and data["sealed"] == 6 and uses(sealed) == []
