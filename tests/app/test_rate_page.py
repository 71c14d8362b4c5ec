"""The Rate page in AppTest: rate, skip, cannot judge, undo, resume and save a dataset version."""

from __future__ import annotations

from prompt_library import Library
from tests.app_support import assert_clean, open_page, page_text, plain, use_temp_library

HOSTILE = "<script>alert(1)</script> **bold** [link](http://evil.example) :red[x] $x^2$"


def _rate_as(at, name: str):
    at.text_input(key="rate_name_box").input(name).run()
    assert_clean(at)
    return at


def _click(at, key: str):
    at.button(key=key).click().run()
    assert_clean(at)
    return at


def _shown_item(at) -> str:
    return next(plain(s.value) for s in at.subheader if str(s.value).startswith("Item ")).removeprefix(
        "Item "
    )


def test_rate_skip_undo_resume_and_save(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    at = _rate_as(open_page("rate"), "alice")
    assert "Type your name" not in page_text(at)
    first = _shown_item(at)
    _click(at, "rate_point_4")
    second = _shown_item(at)
    assert second != first and f"{first}: 4" in page_text(at)
    _click(at, "rate_skip")
    third = _shown_item(at)
    _click(at, "rate_cannot")
    _click(at, "rate_undo")  # takes back "cannot judge" on the third item
    assert _shown_item(at) == third
    _click(at, "rate_point_2")
    assert "2 rated" in at.get("progress")[0].proto.text
    # Resume: a new session with the same name continues after the third item; the skipped one comes last.
    again = _rate_as(open_page("rate"), "alice")
    resumed = _shown_item(again)
    assert resumed not in (first, second, third)
    _click(again, "rate_save")
    assert any("sample@2" in str(s.value) for s in again.success)
    with Library(path) as lib:
        items = {i.id: i for i in lib.dataset_items("sample@2")}
        assert items[first].human["coherence"] == 4.0 and items[first].human["coherence.0"] == 4.0
        assert items[third].human["coherence"] == 2.0
        imported = {i.id: i for i in lib.dataset_items("sample@1")}[second].human
        assert items[second].human == imported  # skipped here: its imported ratings kept exactly
        rows = lib.rating_rows(lib.get_dataset("sample@1").id, "coherence", "alice")
        assert [r["status"] for r in rows] == ["rated", "skipped", "cannot_judge", "undo", "rated"]


def test_two_raters_give_per_rater_ratings_and_their_mean(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    at = _rate_as(open_page("rate"), "bob")
    item = _shown_item(at)
    _click(at, "rate_point_5")
    _rate_as(at, "alice")
    assert _shown_item(at) == item  # alice has not rated it yet
    _click(at, "rate_point_2")
    _click(at, "rate_save")
    with Library(path) as lib:
        human = {i.id: i for i in lib.dataset_items("sample@2")}[item].human
    assert (human["coherence.0"], human["coherence.1"], human["coherence"]) == (2.0, 5.0, 3.5)  # alice, bob


def test_hostile_item_text_is_shown_as_text_and_judge_hidden(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        from geval_core.types import Item

        lib.import_items("hostile", [Item("h1", {"document": HOSTILE, "summary": HOSTILE}, {}, None)])
    at = open_page("rate")
    at.selectbox(key="rate_dataset").select(
        next(o for o in at.selectbox(key="rate_dataset").options if o.startswith("hostile"))
    ).run()
    _rate_as(at, "eve")
    assert sum(c.value == HOSTILE for c in at.code) == 2
    assert all(HOSTILE not in str(m.value) for m in at.markdown)
    assert "Judge's weighted score" not in page_text(at)


def test_archived_datasets_and_runs_are_not_offered_for_rating(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        from geval_core.types import Item
        from tests.runner_helpers import judged_run

        run_id, _ = judged_run(lib)
        kept = lib.import_items("kept", [Item("k1", {"document": "d", "summary": "s"}, {}, None)])
        assert lib.get_dataset("kept").id == kept["id"]

    def on_sample():
        at = open_page("rate")
        labels = at.selectbox(key="rate_dataset").options
        return (
            at.selectbox(key="rate_dataset").select(next(o for o in labels if o.startswith("sample@1"))).run()
        )

    at = on_sample()
    assert any(o.startswith("kept@1") for o in at.selectbox(key="rate_dataset").options)
    assert len(at.selectbox(key="rate_run").options) == 2  # none, and the judged run
    with Library(path) as lib:
        lib.archive("run", run_id)
    assert on_sample().selectbox(key="rate_run").options == ["none"]
    with Library(path) as lib:
        lib.archive("dataset", lib.get_dataset("sample").id)
    at = open_page("rate")
    assert [o.split(" ")[0] for o in at.selectbox(key="rate_dataset").options] == ["kept@1"]


def test_rating_buttons_read_as_the_anchor_beside_its_key_never_as_the_digit_twice(tmp_path, monkeypatch):
    from workbench_ui.rate_parts import button_label

    path = use_temp_library(tmp_path, monkeypatch)
    at = _rate_as(open_page("rate"), "alice")
    with Library(path) as lib:
        anchors = lib.get_prompt("coherence").dimension.anchors
    for point, anchor in anchors.items():
        label = plain(at.button(key=f"rate_point_{point}").label)
        assert label == button_label(point, anchor, tuple(anchors)) and label != str(point)
        assert anchor.startswith(label.rstrip("…")) or label.endswith("…")
    ten = tuple(range(1, 11))
    assert button_label(10, "Excellent. Nothing to fix.", ten) == "10: Excellent"  # its key is 0, so say 10
    assert button_label(3, "", ten) == "Rate 3"
    assert button_label(12, "Off the usual keys", tuple(range(0, 13))) == "12: Off the usual keys"


def test_the_dataset_that_fits_the_prompt_is_the_default_and_one_that_does_not_is_not_rated(
    tmp_path, monkeypatch
):
    from geval_core.types import Item
    from tests.runner_helpers import dimension

    path = use_temp_library(tmp_path, monkeypatch)
    open_page("rate")  # the app seeds the library (sample@1: document, summary)
    with Library(path) as lib:
        helpful = lib.freeze(
            dimension(
                name="Support helpfulness", inputs=("ticket", "reply"), definition="Helps.", template=""
            ),
            name="support-helpfulness",
        ).prompt.id
        row = {"ticket": "It broke.", "reply": "Restart it."}
        lib.import_items("tickets", [Item("t1", row)])
        newest = lib.import_items("tickets", [Item("t1", row), Item("t2", row)])["id"]
    at = _rate_as(open_page("rate"), "alice")
    at.selectbox(key="rate_prompt").set_value(helpful).run()
    box = at.selectbox(key="rate_dataset")
    assert box.value == newest  # the newest version holding ticket and reply
    unfit = next(o for o in box.options if o.startswith("sample@1"))
    assert unfit.endswith("(does not fit: no ticket, reply)")
    assert any("rate_point_" in str(b.key) for b in at.button)
    box.select(unfit).run()
    assert_clean(at)
    assert any("has no 'ticket'" in w for w in [plain(str(w.value)) for w in at.warning])
    assert not any(str(b.key).startswith("rate_point_") for b in at.button)
