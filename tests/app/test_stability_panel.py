"""AppTest: the Design page's stability check runs K repeats and shows the finding among the checks."""

from __future__ import annotations

from app_support import open_page, page_text, use_temp_library


def test_the_stability_check_reports_among_the_pre_freeze_checks(tmp_path, monkeypatch):
    use_temp_library(tmp_path, monkeypatch)
    at = open_page("design")
    at.number_input(key="design_stability_n").set_value(4)
    at.number_input(key="design_stability_k").set_value(2)
    at.button(key="design_stability_run").click().run()
    assert not at.exception
    text = page_text(at)
    # The scripted judge answers the same for the same prompt: nothing moves between repeats.
    assert "stability: 0 of 4 items change rating between repeats" in text
    table = at.dataframe[-1].value
    assert len(table) == 4 and set(table["flip_rate"]) == {0.0}
    at.text_area(key="design_definition").set_value("Changed after the check.").run()
    assert "items change rating between repeats" not in page_text(at)  # a finding about another form
