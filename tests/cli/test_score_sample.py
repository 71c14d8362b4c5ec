"""`geval score --sample N --seed S`: a first look at part of a dataset, drawn by the plan (whole groups when the
items have groups, the seal's side of a split), the same draw for the same seed."""

from __future__ import annotations

import json
import random

from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.run.splits import make_split, sealed_uses
from geval_core.types import Item
from prompt_library import Library


def grouped_library(path, groups: int = 6, per: int = 4):
    """A library with `groups` documents of `per` summaries each (ids g{d}-{k})."""
    library = Library(path)
    items = [
        Item(f"g{d}-{k}", {"document": f"Document {d}.", "summary": f"Summary {d}.{k}."}, {}, f"d{d}")
        for d in range(groups)
        for k in range(per)
    ]
    dataset = library.import_items("grouped", items)
    return library, dataset, items


def score(db, *extra: str):
    return CliRunner().invoke(
        cli,
        [
            "score",
            "--prompt",
            "coherence",
            "--data",
            "grouped",
            "--judge",
            "scripted",
            "--db",
            str(db),
            "--quiet",
            *extra,
        ],
    )


def lines(path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_a_sample_of_grouped_items_takes_whole_groups_drawn_by_the_seed(tmp_path):
    db = tmp_path / "lib.db"
    library, dataset, items = grouped_library(db)
    done = score(db, "--sample", "6", "--seed", "3", "--out", str(tmp_path / "a.jsonl"))
    assert done.exit_code == 0, done.output
    groups = [f"d{d}" for d in range(6)]
    drawn = random.Random(3).sample(groups, len(groups))[:2]  # 4 per group: two groups reach 6 items
    expected = [i.id for i in items if i.group in drawn]
    assert lines(tmp_path / "a.jsonl") == expected and len(expected) == 8
    again = score(db, "--sample", "6", "--seed", "3", "--out", str(tmp_path / "b.jsonl"))
    assert again.exit_code == 0 and lines(tmp_path / "b.jsonl") == expected  # the same draw: the same run
    assert len(library.list_runs()) == 1
    other = score(db, "--sample", "6", "--seed", "4", "--out", str(tmp_path / "c.jsonl"))
    assert other.exit_code == 0 and len(library.list_runs()) == 2
    library.close()


def test_a_sample_of_ungrouped_items_and_the_refusals(tmp_path):
    db = tmp_path / "lib.db"
    library = Library(db)
    items = [Item(f"i{k}", {"document": f"D {k}.", "summary": f"S {k}."}) for k in range(20)]
    library.import_items("grouped", items)
    done = score(db, "--sample", "5", "--seed", "1", "--out", str(tmp_path / "a.jsonl"))
    ids = [i.id for i in items]
    assert lines(tmp_path / "a.jsonl") == [i for i in ids if i in set(random.Random(1).sample(ids, 5))]
    assert done.exit_code == 0
    run_id = library.list_runs()[0].id
    refused = score(db, "--sample", "5", "--run", run_id)
    assert refused.exit_code == 2 and "--sample draws the items of a new run" in refused.output
    no_sample = score(db, "--seed", "3")
    assert (
        no_sample.exit_code == 2 and "--seed draws a --sample" in no_sample.output
    )  # never silently dropped
    library.close()


def test_a_sample_of_a_split_dataset_stays_on_the_dev_side(tmp_path):
    db = tmp_path / "lib.db"
    library, dataset, _ = grouped_library(db)
    split, _ = make_split(library, dataset["id"], 0.5, "group", 2)
    done = score(db, "--sample", "100", "--out", str(tmp_path / "a.jsonl"))
    assert done.exit_code == 0, done.output
    assert set(lines(tmp_path / "a.jsonl")) == set(split["dev"]) and sealed_uses(library, split) == []
    library.close()
