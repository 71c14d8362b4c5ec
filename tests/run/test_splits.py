"""Dev / test splits by document on the real SummEval data: no document on both sides, the same seed gives
the same split and hash, an edited split is caught, and each evaluation on the sealed side is recorded."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from needs import require_file
from paths import SHARED

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.run.splits import get_split, make_split, record_test_use, sealed_uses
from prompt_library import DatasetMapping, Library
from prompt_library.frozen_records import record_hash

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"


@pytest.fixture
def summeval(tmp_path):
    path = require_file(SUMMEVAL, "SummEval (../shared/data/summeval)")
    subset = tmp_path / "summeval.jsonl"
    subset.write_text(
        "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:320]), encoding="utf-8"
    )
    library = Library(tmp_path / "lib.db", seed_examples=False)
    mapping = DatasetMapping(id="id", inputs={"document": "source", "summary": "output"}, group="doc_id")
    dataset = library.import_dataset(subset, "summeval", mapping)
    yield library, dataset
    library.close()


def test_no_document_is_on_both_sides_and_the_split_is_reproducible(summeval):
    library, dataset = summeval
    split, created = make_split(library, dataset["id"], dev=0.6, seed=7)
    items = {i.id: i.group for i in library.dataset_items(dataset["id"])}
    dev_docs, test_docs = {items[i] for i in split["dev"]}, {items[i] for i in split["test"]}
    assert created and not dev_docs & test_docs and len(split["dev"]) + len(split["test"]) == len(items)
    groups = len(dev_docs) + len(test_docs)
    assert len(dev_docs) == round(0.6 * groups) and split["groups"] == {
        "dev": len(dev_docs),
        "test": len(test_docs),
    }
    again, created_again = make_split(library, dataset["id"], dev=0.6, seed=7)
    assert not created_again and again["hash"] == split["hash"]
    other, _ = make_split(library, dataset["id"], dev=0.6, seed=8)
    assert other["hash"] != split["hash"] and get_split(library, dataset["id"])["hash"] == other["hash"]
    assert get_split(library, dataset["id"], split["hash"][:12])["dev"] == split["dev"]


def test_an_edited_split_is_refused_and_test_uses_are_counted(summeval):
    library, dataset = summeval
    split, _ = make_split(library, dataset["id"], dev=0.5, seed=1)
    assert (
        record_test_use(library, split, "prompt-a") == 1 and record_test_use(library, split, "prompt-b") == 2
    )
    assert record_test_use(library, split, "prompt-a") == 2  # the same candidate again is not a new one
    assert [u["prompt_id"] for u in sealed_uses(library, split)] == ["prompt-a", "prompt-b", "prompt-a"]
    # Peeking by swapping sides, with the table's triggers dropped and the row hash recomputed: the split's own
    # hash still tells.
    row = library._one("SELECT * FROM frozen_records WHERE kind = 'split'")
    body = json.loads(row["body"])
    body["test"], body["dev"] = body["dev"], body["test"]
    row["body"] = json.dumps(body)
    library.conn.execute("DROP TRIGGER frozen_records_no_update")
    library.conn.execute(
        "UPDATE frozen_records SET body = ?, row_hash = ? WHERE id = ?",
        [row["body"], record_hash(row), row["id"]],
    )
    with pytest.raises(InputError, match="was edited"):
        get_split(library, dataset["id"])


def test_geval_split_prints_the_ids_and_the_hash(summeval, tmp_path):
    library, dataset = summeval
    done = CliRunner().invoke(
        cli, ["split", dataset["label"], "--dev", "0.6", "--seed", "3", "--json", "--db", str(library.path)]
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["created"] and len(data["hash"]) == 64 and data["dev"] and data["test"]
    refused = CliRunner().invoke(cli, ["split", dataset["label"], "--dev", "1.5", "--db", str(library.path)])
    assert refused.exit_code == 2
