"""One plan for every run: the judge and the server decided once, refused when they cannot be honoured, recorded
with the run (the server is part of its identity), and never mixed on resume. Real SQLite files, loopback servers
that speak the chat-completions shape."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.errors import ConfigError, InputError, MissingKeyError
from geval_core.files.prompt_files import export_prompt
from geval_core.run.many_items import score_items
from geval_core.run.one_item import score_item
from geval_core.run.plan import (
    JudgeChoice,
    RunScope,
    plan_judge,
    plan_of_run,
    plan_run,
    record_run,
    start_run,
)
from geval_core.types import JudgeSettings
from prompt_library import Library
from prompt_library.frames import score_frame
from tests.faultserver import WORKED_EXAMPLE, FaultServer
from tests.runner_helpers import WORKED_SCORE, dimension, make_items

ROOT = Path(__file__).resolve().parents[2]
SERVER_JUDGE = JudgeSettings(provider="openai", model="smollm2")


def server_library(path, count: int = 4, judge: JudgeSettings = SERVER_JUDGE):
    """A library with one prompt pinned to `judge` and a dataset of `count` items."""
    lib = Library(path, seed_examples=False)
    prompt = lib.freeze(dimension(judge), name="srv").prompt
    dataset = lib.import_items("tiny", make_items(count))
    return lib, prompt, dataset


def rows(count: int) -> list[dict[str, str]]:
    return [{"id": f"r{k}", "document": f"Document {k}.", "summary": f"Summary {k}."} for k in range(count)]


def test_the_readme_notebook_example_sends_every_request_to_the_named_server(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with Library(tmp_path / "seed.db") as seeded:
        exported = export_prompt(seeded.get_prompt("coherence"))  # pinned to local
    (tmp_path / "coherence.json").write_text(json.dumps(exported), encoding="utf-8")
    frame = pd.DataFrame(rows(5), index=[10, 20, 30, 40, 50])
    with FaultServer() as server:
        scored = score_frame(
            str(tmp_path / "coherence.json"),
            frame,
            id_column="id",
            concurrency=4,
            judge="openai:smollm2",
            base_url=server.base_url,
            library=str(tmp_path / "nb.db"),
        )
        assert server.count == 5  # every item answered by the named server, none by the embedded model
    assert scored["score"].tolist() == pytest.approx([WORKED_SCORE] * 5)
    assert list(scored.index) == [10, 20, 30, 40, 50]  # the caller's index kept
    assert scored.attrs["server"] == server.base_url.lower().rstrip("/")
    assert scored.attrs["judge"].startswith(f"judge: openai:smollm2 at {server.base_url}")
    assert scored.attrs["settings"]["base_url"] == server.base_url


def test_a_server_for_the_in_process_judge_is_refused_before_anything_is_stored(tmp_path):
    with Library(tmp_path / "seed.db") as seeded:
        prompt = seeded.get_prompt("coherence")  # pinned to local
    with pytest.raises(
        ConfigError, match=r"base_url= names a server, but the local judge runs in this process"
    ):
        score_frame(prompt, rows(3), base_url="http://127.0.0.1:9/v1", library=str(tmp_path / "nb.db"))
    with Library(tmp_path / "nb.db") as lib:
        assert lib.list_runs() == []  # refused before a run was recorded
    with pytest.raises(ConfigError, match='judge="openai:MODEL"'):
        score_items(prompt, rows(3), base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="runs in this process"):
        score_item(prompt, rows(1)[0], base_url="http://127.0.0.1:9/v1")


def test_a_key_less_server_judge_scores_and_the_hosted_api_without_a_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    lib, prompt, dataset = server_library(tmp_path / "lib.db")
    with FaultServer() as server:
        plan = plan_run(lib, prompt, dataset["id"], JudgeChoice(base_url=server.base_url))
        summary = start_run(lib, plan)
        assert (summary.status, summary.scored, server.count) == ("done", 4, 4)
        assert server.authorizations <= {"", "Bearer not-needed"}  # no key of anyone's went to it
    hosted = plan_run(lib, prompt, dataset["id"])
    assert hosted.judge.server == "openai" and hosted.judge.server_from == "default"
    with pytest.raises(MissingKeyError):
        record_run(lib, hosted)
    assert len(lib.list_runs()) == 1  # the refused plan recorded nothing


def test_a_key_handed_to_a_judge_that_takes_none_is_refused():
    with pytest.raises(ConfigError, match="takes no key"):
        plan_judge(JudgeSettings(), JudgeChoice(api_key=True))


def test_the_environments_server_is_part_of_the_runs_identity(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = str(tmp_path / "lib.db")
    server_library(db)[0].close()
    runner = CliRunner()
    with FaultServer() as a, FaultServer(distribution={"5": 0.9, "4": 0.1}) as b:
        monkeypatch.setenv("OPENAI_BASE_URL", a.base_url)
        first = runner.invoke(cli, ["score", "--prompt", "srv", "--data", "tiny", "--db", db, "--json"])
        assert first.exit_code == 0, first.output
        monkeypatch.setenv("OPENAI_BASE_URL", b.base_url)
        second = runner.invoke(
            cli,
            [
                "score",
                "--prompt",
                "srv",
                "--data",
                "tiny",
                "--db",
                db,
                "--json",
                "--out",
                str(tmp_path / "b.jsonl"),
            ],
        )
        assert second.exit_code == 0, second.output
        assert (a.count, b.count) == (4, 4)  # B answered every item itself: nothing of A's replayed
    one, two = (json.loads(r.output.strip().splitlines()[-1]) for r in (first, second))
    assert one["run_id"] != two["run_id"] and two["cached"] == 0
    assert (one["server"], two["server"]) == (a.base_url.rstrip("/"), b.base_url.rstrip("/"))
    scores = [json.loads(line)["score"] for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert scores == pytest.approx([4.9] * 4)  # B's own answers in the results file
    with Library(db) as lib:
        stored = {run.id: run.judge.base_url for run in lib.list_runs()}
        assert stored == {one["run_id"]: a.base_url, two["run_id"]: b.base_url}
        assert lib.get_run(two["run_id"]).plan["server_from"] == "OPENAI_BASE_URL"


def test_a_run_is_never_resumed_against_another_server(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lib, prompt, dataset = server_library(tmp_path / "lib.db")
    with FaultServer(script=["ok", "ok", "401"]) as a:
        monkeypatch.setenv("OPENAI_BASE_URL", a.base_url)
        plan = record_run(lib, plan_run(lib, prompt, dataset["id"], options=None, concurrency=1))
        start_run(lib, plan)  # two items answered, then the server refuses: the run stops unfinished
    with FaultServer() as b:
        monkeypatch.setenv("OPENAI_BASE_URL", b.base_url)
        resumed = plan_of_run(lib, plan.run_id)
        assert resumed.judge.server == a.base_url.rstrip("/")  # the run keeps its own server
        with pytest.raises(ConfigError, match="a run keeps one judge"):
            plan_of_run(lib, plan.run_id, JudgeChoice(base_url=b.base_url))
        assert b.count == 0


def test_resuming_an_older_run_whose_server_now_resolves_elsewhere_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lib, prompt, dataset = server_library(tmp_path / "lib.db")
    with FaultServer() as a:
        run_id = lib.create_run(
            prompt.id, dataset["id"], SERVER_JUDGE, item_ids=["i000", "i001"]
        )  # no server
        monkeypatch.setenv("OPENAI_BASE_URL", a.base_url)
        start_run(lib, plan_of_run(lib, run_id))
        assert a.count == 2
    lib.create_run(prompt.id, dataset["id"], SERVER_JUDGE)  # another run: the first stays as it is
    with FaultServer() as b:
        monkeypatch.setenv("OPENAI_BASE_URL", b.base_url)
        with pytest.raises(ConfigError, match="a run never mixes servers"):
            record_run(lib, plan_of_run(lib, run_id))
        assert b.count == 0


def test_panel_base_url_applies_to_every_member_that_takes_a_server(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    db = str(tmp_path / "lib.db")
    with Library(db, seed_examples=False) as lib:
        lib.freeze(dimension(SERVER_JUDGE), name="one")
        lib.freeze(dimension(SERVER_JUDGE, definition="Another wording of coherence."), name="two")
        lib.import_items("tiny", make_items(3))
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(3)))
    runner = CliRunner()
    assert (
        runner.invoke(
            cli, ["panel", "freeze", "duo", "--member", "one", "--member", "two", "--db", db]
        ).exit_code
        == 0
    )
    with FaultServer() as server:
        result = runner.invoke(
            cli,
            [
                "score",
                "--panel",
                "duo",
                "--data",
                str(tmp_path / "data.jsonl"),
                "--base-url",
                server.base_url,
                "--db",
                db,
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        assert server.count == 6  # both members, three items each, at the named server
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert [m["server"] for m in summary["member_runs"]] == [server.base_url.rstrip("/")] * 2
    judge = runner.invoke(
        cli, ["score", "--panel", "duo", "--data", "tiny", "--judge", "openai:x", "--db", db]
    )
    assert judge.exit_code == 2 and "keep their own frozen judges" in judge.output


def test_panel_base_url_with_an_in_process_member_is_refused_before_any_member_runs(tmp_path):
    db = str(tmp_path / "lib.db")
    with Library(db, seed_examples=False) as lib:
        lib.freeze(dimension(SERVER_JUDGE), name="server")
        lib.freeze(dimension(JudgeSettings()), name="inprocess")
        lib.import_items("tiny", make_items(3))
    runner = CliRunner()
    assert (
        runner.invoke(
            cli, ["panel", "freeze", "mixed", "--member", "server", "--member", "inprocess", "--db", db]
        ).exit_code
        == 0
    )
    with FaultServer() as server:
        result = runner.invoke(
            cli, ["score", "--panel", "mixed", "--data", "tiny", "--base-url", server.base_url, "--db", db]
        )
        assert server.count == 0
    assert result.exit_code == 1
    assert (
        "--base-url (for member inprocess@1) names a server, but the local judge runs in this process"
        in result.output
    )
    with Library(db) as lib:
        assert lib.list_runs() == []


def test_a_split_dataset_is_scored_on_its_dev_side_unless_the_test_side_is_named(tmp_path):
    from geval_core.run.splits import make_split, sealed_uses

    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension(JudgeSettings(provider="scripted"))).prompt
    items = [item.__class__(item.id, item.fields, {}, f"g{k % 4}") for k, item in enumerate(make_items(12))]
    dataset = lib.import_items("grouped", items)
    split, _ = make_split(lib, dataset["id"], 0.5, "group", 1)
    dev = plan_run(lib, prompt, dataset["id"])
    assert (dev.side, set(dev.item_ids)) == ("dev", set(split["dev"]))
    assert sealed_uses(lib, split) == []
    with pytest.raises(InputError, match="not on the dev side"):
        plan_run(lib, prompt, dataset["id"], scope=RunScope(item_ids=tuple(split["test"][:1])))
    test = record_run(lib, plan_run(lib, prompt, dataset["id"], scope=RunScope(side="test")))
    assert [u["run_id"] for u in sealed_uses(lib, split)] == [test.run_id]


def product_callers(*names: str) -> dict[str, set[str]]:
    """Function name -> the product files that call it (by name or attribute), read from the source."""
    callers: dict[str, set[str]] = {}
    for path in [
        *ROOT.glob("geval_core/**/*.py"),
        *ROOT.glob("prompt_library/*.py"),
        *ROOT.glob("workbench_ui/*.py"),
        *ROOT.glob("app_pages/*.py"),
    ]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in names:
                    callers.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return callers


def test_runs_are_created_by_the_plan_alone_batches_included():
    """A run (live, batch file, batch engine) is recorded by record_run: the side, the seal and the server are
    decided once for all of them."""
    callers = product_callers("create_run", "find_or_create_run", "record_run")
    assert callers["create_run"] == {
        "geval_core/run/plan.py",
        "prompt_library/runs.py",
    }  # runs.py: find_or_create
    assert callers["find_or_create_run"] == {"geval_core/run/plan.py"}
    assert {"geval_core/run/batch.py", "geval_core/run/batch_engines.py"} <= callers["record_run"]


def test_every_front_end_enters_the_runner_through_start_run():
    """`run_scoring` is called by start_run alone; each front end calls start_run (or a plan helper does)."""
    callers = product_callers("run_scoring", "start_run")
    assert callers["run_scoring"] == {"geval_core/run/plan.py"}
    assert callers["start_run"] == {
        "geval_core/cli/score.py",
        "geval_core/cli/align.py",
        "prompt_library/job_worker.py",
        "prompt_library/frames.py",
        "geval_core/run/panel.py",
        "geval_core/diagnostics/cascade.py",
        "geval_core/diagnostics/stability.py",
        "geval_core/diagnostics/bias_probes.py",
        "geval_core/diagnostics/drift.py",
        "geval_core/diagnostics/rubric_probes.py",
    }


BAD_CELLS = [
    None,
    float("nan"),
    "",
    "   ",
    b"abc",
    bytearray(b"abc"),
    {"a": 1},
    ["x"],
    ("x",),
    {"x"},
    object(),
    float("inf"),
]


def bad_frames() -> list:
    """Twenty frames a notebook user could pass, each with one row a judge must never see as text."""
    import numpy as np

    good = rows(1)[0]
    frames: list = [[good, {**good, "document": cell}] for cell in BAD_CELLS]
    frames += [
        [good, {**good, "summary": np.nan}],
        [good, {**good, "summary": pd.NA}],
        [good, {**good, "summary": pd.NaT}],
        [good, {"id": "r9", "document": "only a document"}],
        [good, "not a row"],
        [good, 42],
        pd.DataFrame([good, {**good, "document": None}]),
        pd.DataFrame([good, {**good, "summary": np.nan}]),
    ]
    return frames


def test_score_items_refuses_placeholders_before_any_call(tmp_path):
    prompt = Library(tmp_path / "lib.db", seed_examples=False).freeze(dimension(SERVER_JUDGE)).prompt
    frames = bad_frames()
    assert len(frames) == 20
    with FaultServer() as server:
        for frame in frames:
            with pytest.raises((InputError, TypeError)):
                score_items(prompt, frame, base_url=server.base_url)
            with pytest.raises((InputError, TypeError)):
                score_frame(prompt, frame, base_url=server.base_url, judge="openai:smollm2")
        assert server.count == 0  # 20 bad frames, twice each: no placeholder text ever sent
    with pytest.raises(InputError, match=r"row 1: 'document' is missing \(None or NaN\)"):
        score_items(prompt, pd.DataFrame([rows(1)[0], {"id": "x", "document": None, "summary": "s"}]))
    with pytest.raises(InputError, match=r"row 1: 'document' holds a bytes, not text"):
        score_items(prompt, [rows(1)[0], {"document": b"abc", "summary": "s"}])
    assert WORKED_EXAMPLE  # the server's answers, had any request gone out


def test_the_readme_notebook_lines_as_written_score_at_the_named_server(tmp_path, monkeypatch):
    """The README's notebook block, copied verbatim (its server URL pointed at a loopback server): every request
    goes to that server."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split("from geval_core import agree_frame, score_frame", 1)[1].split("```", 1)[0]
    assert 'judge="openai:smollm2"' in code and 'base_url="http://127.0.0.1:8000/v1"' in code
    with Library(tmp_path / "seed.db") as seeded:
        exported = export_prompt(seeded.get_prompt("coherence"))  # pinned to the in-process judge
    (tmp_path / "coherence.json").write_text(json.dumps(exported), encoding="utf-8")
    frame = pd.DataFrame(
        [{**row, "expert_rating": 1 + k % 5, "doc_id": f"d{k % 4}"} for k, row in enumerate(rows(12))]
    )
    monkeypatch.chdir(tmp_path)
    with FaultServer() as server:
        scope = {
            "frame": frame,
            "score_frame": score_frame,
            "agree_frame": __import__("geval_core").agree_frame,
        }
        exec(code.replace("http://127.0.0.1:8000/v1", server.base_url), scope)
        assert server.count == 12
    assert scope["scored"]["score"].tolist() == pytest.approx([WORKED_SCORE] * 12)
    assert scope["scored"].attrs["server"] == server.base_url.rstrip("/")


def test_items_that_share_a_document_go_out_together_and_files_stay_in_dataset_order(tmp_path):
    from geval_core.run.feed import shared_prefix_first
    from geval_core.types import Item

    def item(name: str, doc: str) -> Item:
        return Item(name, {"document": doc, "summary": f"summary {name}"})

    shuffled = [item("a1", "A"), item("b1", "B"), item("a2", "A"), item("c1", "C"), item("b2", "B")]
    assert [i.id for i in shared_prefix_first(shuffled, ("document",))] == ["a1", "a2", "b1", "b2", "c1"]
    distinct = [item(f"x{k}", f"doc {k}") for k in range(5)]
    assert shared_prefix_first(distinct, ("document",)) == distinct  # nothing shared: the order unchanged
    sent = []

    def script(request):
        sent.append(request.messages[-1]["content"])
        return {"3": 0.6, "4": 0.4}

    from geval_core.providers.scripted import ScriptedJudge

    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension(JudgeSettings(provider="scripted"))).prompt
    data = lib.import_items("mixed", shuffled)
    with open(tmp_path / "out.jsonl", "w", encoding="utf-8") as out:
        from geval_core.run.results import OrderedResults

        plan = record_run(lib, plan_run(lib, prompt, data["id"], concurrency=1))
        results = OrderedResults(lib, plan.run_id, out)
        start_run(
            lib,
            plan,
            ScriptedJudge(script),
            items=plan.items(lib, on_batch=results.batch_read),
            on_progress=lambda done, total, judgment: results.committed(judgment),
        )
        results.close()
    order = [next(i.id for i in shuffled if f"summary {i.id}" in text) for text in sent]
    assert order == ["a1", "a2", "b1", "b2", "c1"]  # sent by document
    written = [json.loads(line)["id"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert written == ["a1", "b1", "a2", "c1", "b2"]  # written in dataset order
