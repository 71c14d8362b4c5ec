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
    library, prompt, items, _ = setup_library(tmp_path / "many.db", count=5,
                                              judge=JudgeSettings(mode="auto", n=4, temperature=0.7))
    rows = [dict(item.fields, ticket=item.id) for item in items]
    many = score_items(prompt, rows, judge=make_judge(), concurrency=3, id_field="ticket")
    assert [j.item_id for j in many] == [item.id for item in items]  # row order, ids from the field
    assert [comparable(j) for j in many] == [comparable(score_item(prompt, dict(i.fields), judge=make_judge()))
                                             for i in items]
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
        library, prompt, items, _ = setup_library(tmp_path / "srv.db", count=12,
                                                  judge=JudgeSettings(provider="openai", model="fault-model"))
        judgments = score_items(prompt, [dict(i.fields) for i in items], base_url=server.base_url, concurrency=6)
        library.close()
    assert server.count == 12 and all(j.score is not None and j.server == server.base_url for j in judgments)
