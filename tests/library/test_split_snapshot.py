"""Saving the Rate page's ratings as a new version of a split dataset carries its split: the same items on the
same sides, the test side still sealed (its uses still counted), and the snapshot is not refused as a copy of
sealed items."""

from __future__ import annotations

from geval_core.run.plan import plan_run
from geval_core.run.splits import get_split, has_split, make_split, record_test_use, sealed_uses
from prompt_library import Library


def test_a_ratings_snapshot_of_a_split_dataset_keeps_its_split_and_its_uses(tmp_path):
    with Library(tmp_path / "lib.db") as lib:
        sample = lib.get_dataset("sample")
        split, _ = make_split(lib, sample.id, 0.6, "group", 3)
        prompt = lib.get_prompt("coherence")
        record_test_use(lib, split, prompt.id, read="a look before the snapshot")
        for item_id in split["dev"][:3]:
            lib.add_rating(sample.id, item_id, "coherence", "alice", 4.0)
        saved = lib.save_ratings_version(sample.id, "coherence")
        assert saved["label"] == "sample@2"
        assert has_split(lib, saved["id"])
        carried = get_split(lib, saved["id"])
        assert (carried["dev"], carried["test"]) == (split["dev"], split["test"])
        assert [u["read"] for u in sealed_uses(lib, carried)] == ["a look before the snapshot"]
        plan = plan_run(lib, prompt, saved["id"])  # the snapshot is scored on its dev side, as its source was
        assert plan.side == "dev" and set(plan.item_ids or ()) == set(split["dev"])
