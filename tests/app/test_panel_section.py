"""AppTest: the Score page's panel section: freeze a panel of two prompts, score the sample with it (a worker per
member), then the panel's table beside the members' scores, the members' alpha against the krippendorff
package, and the review queue of the items they disagree on most."""

from __future__ import annotations

from dataclasses import replace

import krippendorff
import numpy as np
import pytest
from app_support import after_jobs, metric, open_page, use_temp_library, wait_for_jobs, wait_until

from geval_core.types import JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence").dimension
        lib.freeze(
            replace(base, judge=replace(base.judge, provider="scripted", model="scripted-1")), name="jurora"
        )
        lib.freeze(
            replace(
                base,
                definition="Sentences that build one whole.",
                judge=replace(base.judge, provider="scripted", model="scripted-1"),
            ),
            name="jurorb",
        )
    return path


def test_freeze_score_and_read_a_panel(lib_path):
    at = open_page("score")
    at.multiselect(key="pn_members").set_value(["jurora@1", "jurorb@1"]).run()
    at.text_input(key="pn_name").set_value("jury").run()
    at.button(key="pn_freeze").click().run()
    lib = Library(lib_path)
    assert lib.list_runs() == []  # looking at a panel records nothing
    at.selectbox(key="pn_dataset").set_value("sample@1").run()
    at = after_jobs(at.button(key="pn_score").click().run(), lib_path)
    runs = lib.list_runs()
    assert len(runs) == 2 and all(r.status == "done" for r in runs)
    table = next(f.value for f in at.dataframe if "panel" in f.value.columns and "spread" in f.value.columns)
    assert len(table) == 67 and {"jurora@1", "jurorb@1"} <= set(table.columns)
    matrix = table[["jurora@1", "jurorb@1"]].to_numpy(dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    assert metric(at, "Members' alpha (interval level)") == f"{expected:.3f}"
    assert np.allclose(table["spread"], np.abs(matrix[:, 0] - matrix[:, 1]))
    from geval_core.diagnostics.panel_people import panel_against_people

    people = next(
        f.value for f in at.dataframe if "judge" in f.value.columns and "spearman" in f.value.columns
    )
    with Library(lib_path) as again:
        rows = [
            {
                "id": r["item"],
                "score": r["panel"],
                "members": {m: r[m] for m in ("jurora@1", "jurorb@1")},
                "group": None,
            }
            for r in table.to_dict("records")
        ]
        expected_people = panel_against_people(again, rows, again.get_dataset("sample").id, "coherence", 50)
    assert list(people["judge"]) == ["jurora@1", "jurorb@1", "panel"]
    assert people.set_index("judge")["spearman"]["panel"] == round(
        expected_people["figures"]["panel"]["spearman"], 3
    )
    queue = [f.value for f in at.dataframe if "spread" in f.value.columns][-1]
    assert list(queue["spread"]) == sorted(queue["spread"], reverse=True) and len(queue) == 20


def test_the_panel_is_combined_once_per_state_of_its_runs(lib_path, monkeypatch):
    """Every rerun of the Score page draws the panel section: the rows and alpha come from the cache."""
    import geval_core.run.panel as panel_module

    at = open_page("score")
    at.multiselect(key="pn_members").set_value(["jurora@1", "jurorb@1"]).run()
    at.button(key="pn_freeze").click().run()
    at.selectbox(key="pn_dataset").set_value("sample@1").run()
    at = after_jobs(at.button(key="pn_score").click().run(), lib_path)
    shown = metric(at, "Members' alpha (interval level)")
    calls = []
    real = panel_module.combine
    monkeypatch.setattr(panel_module, "combine", lambda *a, **k: calls.append(a) or real(*a, **k))
    at.run()
    assert calls == [] and metric(at, "Members' alpha (interval level)") == shown


def test_members_scoring_side_by_side_each_show_their_progress(lib_path, monkeypatch, tmp_path):
    """While both members' workers are held mid-run, the page watches each (the newest run is also watched below
    the panel: every view has widgets of its own), and each Stop stops its own member."""
    hold = tmp_path / "hold"
    hold.write_text("3")  # each member's worker answers three requests, then waits for the hold to go
    monkeypatch.setenv("GEVAL_TEST_JUDGE_HOLD", str(hold))
    at = open_page("score")
    at.multiselect(key="pn_members").set_value(["jurora@1", "jurorb@1"]).run()
    at.button(key="pn_freeze").click().run()
    at.selectbox(key="pn_dataset").set_value("sample@1").run()
    at.button(key="pn_score").click().run()
    lib = Library(lib_path)
    runs = lib.list_runs()
    wait_until(lambda: all(len(lib.judged_item_ids(r.id)) >= 3 for r in runs))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [bar.proto.text for bar in at.get("progress")]
    assert sum("3 / 67 items" in text for text in texts) >= 2, texts
    stops = {f"pn_{r.id}_stop" for r in runs}
    assert stops <= {b.key for b in at.button}
    at.button(key=f"pn_{runs[0].id}_stop").click().run()
    wait_until(lambda: lib.job_state(runs[0].id) not in ("running", "stopping"))
    assert lib.job_state(runs[1].id) == "running"  # the other member goes on
    hold.unlink()
    wait_for_jobs(lib_path)
    assert [lib.get_run(r.id).status for r in runs] == ["cancelled", "done"]


def test_the_panel_dataset_box_opens_on_a_dataset_that_fits_and_labels_the_others(lib_path):
    from geval_core.types import Item

    with Library(lib_path) as lib:
        lib.import_items(
            "dialogues", [Item("t1", {"context": "Hi.", "response": "Hello."})]
        )  # no document/summary
        lib.import_items("aaa-summaries", [Item("s1", {"document": "A text.", "summary": "Text."})])
    at = open_page("score")
    at.multiselect(key="pn_members").set_value(["jurora@1", "jurorb@1"]).run()
    at.text_input(key="pn_name").set_value("jury").run()
    at.button(key="pn_freeze").click().run()
    box = at.selectbox(key="pn_dataset")
    labels = list(box.options)  # as drawn (formatted)
    assert box.value != "dialogues@1"  # a dataset that fits is the default
    assert "dialogues@1 (does not fit: no document, summary)" in labels
    assert (
        labels.index("dialogues@1 (does not fit: no document, summary)") == len(labels) - 1
    )  # the misfit last
