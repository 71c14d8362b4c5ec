"""AppTest: the Agreement page's run picker shows each run's current progress, also after it changes."""

from __future__ import annotations

from app_support import open_page, use_temp_library

from geval_core.judgment import Judgment
from prompt_library import Library


def test_run_picker_labels_follow_the_run(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        items = lib.dataset_items("sample")
        run_id = lib.create_run("coherence", "sample", lib.get_prompt("coherence").dimension.judge)
        lib.save_judgment(run_id, Judgment(items[0].id, score=3.0, mode="logprobs"))
    at = open_page("agreement")
    picker = at.selectbox(key="ag_run")
    assert picker.value == run_id
    assert picker.options[0].endswith(f"1/{len(items)} · running")
    with Library(path) as lib:
        for item in items[1:]:
            lib.save_judgment(run_id, Judgment(item.id, score=4.0, mode="logprobs"))
        lib.finish_run(run_id, model_version="scripted-1")
    at.run()  # the same session: the label must not keep the first reading
    picker = at.selectbox(key="ag_run")
    assert picker.value == run_id and picker.options[0].endswith(f"{len(items)}/{len(items)} · done")
