"""`list_runs` and `geval runs list` are newest first even for runs made within one second (the timestamps'
resolution), where the random part of a run id would otherwise decide."""

from __future__ import annotations

from runner_helpers import setup_library

from geval_core.types import JudgeSettings
from prompt_library import runs

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def test_runs_made_in_one_second_list_in_the_order_they_were_made(tmp_path, monkeypatch):
    library, prompt, _, dataset = setup_library(tmp_path / "lib.db", count=3, judge=SCRIPTED)
    monkeypatch.setattr(runs, "now", lambda: "2026-01-01T00:00:00+00:00")
    ids = [runs.new_run_id() for _ in range(12)]
    made = iter(
        sorted(ids, reverse=True)
    )  # each id sorts below the one before: the old tie-break gets it wrong
    monkeypatch.setattr(runs, "new_run_id", lambda: next(made))
    created = [library.create_run(prompt.id, dataset["id"], SCRIPTED) for _ in range(12)]
    assert [r.id for r in library.list_runs()] == created[::-1]
    library.close()
