"""AppTest: the Score page's panel section says how many independent judges the members are worth against people:
the mean correlation of their errors and K / (1 + (K - 1) rho), computed here with scipy on the panel's table."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_support import after_jobs, open_page, page_text, use_temp_library
from scipy import stats

from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence").dimension
        judge = replace(base.judge, provider="scripted", model="scripted-1")
        lib.freeze(replace(base, judge=judge), name="jurora")
        lib.freeze(replace(base, definition="Sentences that build one whole.", judge=judge), name="jurorb")
    return path


def test_the_panel_says_what_its_members_are_worth(lib_path):
    at = open_page("score")
    at.multiselect(key="pn_members").set_value(["jurora@1", "jurorb@1"]).run()
    at.text_input(key="pn_name").set_value("jury").run()
    at.button(key="pn_freeze").click().run()
    at.selectbox(key="pn_dataset").set_value("sample@1").run()
    at = after_jobs(at.button(key="pn_score").click().run(), lib_path)
    assert not at.exception, [e.value for e in at.exception]
    table = next(f.value for f in at.dataframe if "panel" in f.value.columns and "spread" in f.value.columns)
    with Library(lib_path) as lib:
        people = lib.human_means(lib.get_dataset("sample@1").id, "coherence")
    rated = table[table["item"].isin(people)]
    human = rated["item"].map(people)
    rho = stats.pearsonr(rated["jurora@1"] - human, rated["jurorb@1"] - human).statistic
    text = page_text(at)
    assert f"Members' errors against people correlate {rho:.3f} on average" in text
    assert f"the 2 members are worth {2 / (1 + rho):.2f} independent judges" in text
