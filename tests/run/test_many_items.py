"""score_items: many rows from Python at once, each scored as score_item scores one (same Judgment), in order."""

from __future__ import annotations

import pandas as pd
import pytest
from faultserver import FaultServer
from runner_helpers import NoLogprobsJudge, setup_library, worked_judge

from geval_core.errors import InputError
from geval_core.export import score_item, score_items
from geval_core.types import JudgeSettings


def comparable(judgment):
    data = judgment.to_dict()
    return {k: v for k, v in data.items() if k not in ("latency_s", "item_id")}


@pytest.mark.parametrize("make_judge", [worked_judge, NoLogprobsJudge], ids=["logprobs", "auto-fallback"])
def test_each_row_gets_the_judgment_score_item_gives(tmp_path, make_judge):
    library, prompt, items, _ = setup_library(
        tmp_path / "many.db", count=5, judge=JudgeSettings(mode="auto", n=4, temperature=0.7)
    )
    rows = [dict(item.fields, ticket=item.id) for item in items]
    many = score_items(prompt, rows, judge=make_judge(), concurrency=3, id_field="ticket")
    assert [j.item_id for j in many] == [item.id for item in items]  # row order, ids from the field
    assert [comparable(j) for j in many] == [
        comparable(score_item(prompt, dict(i.fields), judge=make_judge())) for i in items
    ]
    frame = score_items(prompt, pd.DataFrame(rows), judge=make_judge())
    assert [j.score for j in frame] == [j.score for j in many] and frame[0].item_id == "0"
    library.close()


def test_rows_missing_an_input_are_refused_before_any_call(tmp_path):
    library, prompt, _, _ = setup_library(tmp_path / "bad.db", count=1)
    judge = worked_judge()
    with pytest.raises(InputError, match="summary"):
        score_items(prompt, [{"document": "D."}], judge=judge)
    assert judge.requests == []
    library.close()


def test_a_real_server_scores_many_rows_concurrently(tmp_path):
    with FaultServer(delay=0.05) as server:
        library, prompt, items, _ = setup_library(
            tmp_path / "srv.db", count=12, judge=JudgeSettings(provider="openai", model="fault-model")
        )
        judgments = score_items(
            prompt, [dict(i.fields) for i in items], base_url=server.base_url, concurrency=6
        )
        library.close()
    assert server.count == 12 and all(j.score is not None and j.server == server.base_url for j in judgments)


def test_an_interrupt_stops_at_once_and_leaves_the_calls_in_flight_behind(tmp_path):
    """Ctrl-C (or Jupyter's stop) reaches the caller while the judge still holds the calls: nothing waits for them."""
    import _thread
    import threading

    with FaultServer(script=lambda index, body: "hang", hang_s=120) as server:
        library, prompt, items, _ = setup_library(
            tmp_path / "stop.db", count=8, judge=JudgeSettings(provider="openai", model="fault-model")
        )

        def interrupt_once_calls_hang() -> None:
            while server.count < 3:
                threading.Event().wait(0.01)
            _thread.interrupt_main()

        threading.Thread(target=interrupt_once_calls_hang, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            score_items(
                prompt,
                [dict(i.fields) for i in items],
                base_url=server.base_url,
                concurrency=3,
                progress=False,
            )
        busy = [t for t in threading.enumerate() if t.name.startswith("geval-items") and t.is_alive()]
        assert len(busy) == 3  # still inside their calls: the interrupt did not wait for them
        assert server.count == 3  # and the rows not yet sent never were
        library.close()


def test_files_are_taken_wherever_a_frame_is_and_a_progress_line_is_drawn(tmp_path, capsys):
    from geval_core import score_frame
    from geval_core.files.prompt_files import write_export

    library, prompt, items, _ = setup_library(tmp_path / "files.db", count=4)
    rows = pd.DataFrame([dict(i.fields, ticket=i.id) for i in items])
    rows.to_csv(tmp_path / "rows.csv", index=False)
    exported = write_export(prompt, tmp_path / "prompt.json")
    from_files = score_items(
        exported, tmp_path / "rows.csv", judge=worked_judge(), id_field="ticket", progress=True
    )
    from_objects = score_items(prompt, rows, judge=worked_judge(), id_field="ticket", progress=False)
    assert [comparable(j) for j in from_files] == [comparable(j) for j in from_objects]
    assert [j.item_id for j in from_files] == [i.id for i in items]
    assert "4/4 judged" in capsys.readouterr().err.rsplit("\r", 1)[-1]
    frame = score_frame(
        str(exported), str(tmp_path / "rows.csv"), judge=worked_judge(), id_column="ticket", progress=False
    )
    assert frame["score"].tolist() == [j.score for j in from_objects]
    with pytest.raises(InputError, match="no such file"):
        score_items(prompt, tmp_path / "missing.csv", judge=worked_judge())
    library.close()


def test_the_progress_line_counts_errors_and_rewrites_itself_in_place():
    import io

    from geval_core.judgment import Judgment
    from geval_core.run.progress_line import ProgressLine

    out = io.StringIO()
    line = ProgressLine("coherence@1", 3, stream=out, every=0)
    line(1, 3, Judgment("a", score=3.0))
    line(2, 3, Judgment("b", error="JudgeError: 500"))
    line(3, 3, Judgment("c", score=4.0))
    line.close()
    drawn = out.getvalue()
    assert drawn.count("\r") == 4 and drawn.endswith("\n") and "\n" not in drawn[:-1]
    assert drawn.rstrip("\n").rsplit("\r", 1)[-1].startswith("coherence@1: 3/3 judged, 1 error, ")
