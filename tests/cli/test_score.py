"""`geval score` end to end: results file, inputs, overrides, resume after kill -9, no key anywhere."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import time

import openai  # noqa: F401 -- a hard dependency: missing, this fails instead of skipping
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import WORKED_RAW, WORKED_SCORE, close, make_items, setup_library

from geval_core.cli import cli
from geval_core.export import export_judgments, write_export
from geval_core.judgment import Judgment
from geval_core.types import JudgeSettings

KEY = "sk-test-XYZ9Q7secretKEYforTHEloopback000000000001"
FIELDS = {"id", *Judgment.columns()[1:]}
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def write_jsonl(path, items, extra=None):
    path.write_text("".join(json.dumps({"id": i.id, **i.fields, **(extra or {})}) + "\n" for i in items))
    return path


def openai_prompt(tmp_path, server, count=4, **changes):
    settings = JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url, **changes)
    return setup_library(tmp_path / "lib.db", count=count, judge=settings)


def invoke(args, env=None):
    return CliRunner().invoke(cli, args, env={"OPENAI_API_KEY": KEY, "GEVAL_PRICES": "", **(env or {})})


def test_score_writes_one_json_line_per_item(tmp_path):
    with FaultServer() as server:
        library, prompt, items, _ = openai_prompt(tmp_path, server)
        data = write_jsonl(tmp_path / "golden.jsonl", items, {"notes": "ignored by the prompt"})
        result = invoke(
            [
                "score",
                "--prompt",
                prompt.label,
                "--data",
                str(data),
                "--db",
                str(tmp_path / "lib.db"),
                "--out",
                str(tmp_path / "out.jsonl"),
                "--concurrency",
                "2",
                "--base-url",
                server.base_url,
            ]
        )
        assert result.exit_code == 0, result.output
        assert server.count == 4 and f"Bearer {KEY}" in server.authorizations
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == [i.id for i in items] and all(set(x) == FIELDS for x in lines)
    first = lines[0]
    assert (
        close(first["score"], WORKED_SCORE)
        and close(first["raw_score"], WORKED_RAW)
        and first["top_rating"] == 3
    )
    assert set(first["distribution"]) == {"1", "2", "3", "4", "5"} and close(
        first["distribution"]["4"], 0.3 / 0.95
    )
    assert first["replies"] == ["3"] and first["parsed"] == 1 and first["unparsed"] == 0
    assert (
        first["mode"] == "logprobs"
        and first["model_version"] == "fault-model-2024-01-01"
        and first["error"] is None
    )
    assert "4 scored" in result.output and "warning" not in result.output
    dataset = library.get_dataset("golden")
    assert dataset.item_count == 4 and dataset.fields == ("document", "summary")


def test_rerun_is_answered_from_the_cache_and_csv_and_export_inputs_work(tmp_path):
    with FaultServer() as server:
        library, prompt, items, _ = openai_prompt(tmp_path, server, count=3)
        csv = tmp_path / "golden.csv"
        csv.write_text(
            "id,summary,document\n"
            + "".join(f'{i.id},{i.fields["summary"]},"{i.fields["document"]}"\n' for i in items)
        )
        export = write_export(prompt, tmp_path / "coherence.json")
        args = [
            "--data",
            str(csv),
            "--db",
            str(tmp_path / "lib.db"),
            "--out",
            str(tmp_path / "out.jsonl"),
            "--base-url",
            server.base_url,
        ]
        assert invoke(["score", "--prompt", prompt.label, *args]).exit_code == 0
        assert server.count == 3
        again = invoke(
            ["score", "--prompt", str(export), *args, "--new-run"]
        )  # the same command reports its run
        assert again.exit_code == 0, again.output
        assert server.count == 3 and "3 from cache" in again.output and "0 judge calls" in again.output
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all(set(x) == FIELDS and close(x["score"], WORKED_SCORE) for x in lines)
    # Two runs: the first asked the server for all three items, the rerun took all three from the cache.
    cached = sorted(sum(bool(r["cached"]) for r in library.judgments(run.id)) for run in library.list_runs())
    assert cached == [0, 3]


def test_overrides_warn_and_are_recorded_on_the_run(tmp_path):
    with FaultServer() as server:
        library, prompt, items, _ = openai_prompt(tmp_path, server, count=2)
        result = invoke(
            [
                "score",
                "--prompt",
                prompt.label,
                "--data",
                "tiny",
                "--db",
                str(tmp_path / "lib.db"),
                "--mode",
                "sampling",
                "--n",
                "4",
                "--temperature",
                "1.0",
                "--out",
                str(tmp_path / "o.jsonl"),
                "--base-url",
                server.base_url,
            ]
        )
        assert result.exit_code == 0, result.output
        bodies = [body for _, body in server.log]
    assert (
        "warning: overriding the prompt's frozen judge settings: mode 'logprobs' -> 'sampling', n 1 -> 4, "
        "temperature 0.0 -> 1.0."
    ) in result.output
    assert all(b["n"] == 4 and b["temperature"] == 1.0 and "logprobs" not in b for b in bodies)
    (run,) = library.list_runs()
    assert run.judge.mode == "sampling" and run.judge.n == 4 and run.prompt_id == prompt.id
    lines = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert all(x["replies"] == ["3", "3", "4", "4"] and close(x["score"], 3.5) for x in lines)


def test_bad_inputs_give_errors_that_say_what_to_do(tmp_path):
    library, prompt, items, _ = setup_library(tmp_path / "lib.db", count=1)
    db = str(tmp_path / "lib.db")
    bad_judge = invoke(["score", "--prompt", prompt.label, "--data", "tiny", "--db", db, "--judge", "openai"])
    assert bad_judge.exit_code == 2 and "openai:MODEL" in bad_judge.output
    no_key = invoke(
        ["score", "--prompt", prompt.label, "--data", "tiny", "--db", db, "--judge", "openai:gpt-4o"],
        env={"OPENAI_API_KEY": ""},
    )
    assert no_key.exit_code == 1 and "OPENAI_API_KEY" in no_key.output
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps({"id": "a", "source": "x", "output": "y"}) + "\n")
    missing = invoke(["score", "--prompt", prompt.label, "--data", str(wrong), "--db", db])
    assert missing.exit_code == 1 and "document" in missing.output and "source, output" in missing.output
    unknown = invoke(["score", "--prompt", "nope@3", "--data", "tiny", "--db", db])
    assert unknown.exit_code == 1 and "nope" in unknown.output


def _judged(db_path) -> int:
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "GEMINI", "GOOGLE", "GEVAL"))}
    return {**env, "OPENAI_API_KEY": KEY, "HOME": str(tmp_path)}


def test_kill_9_mid_run_then_restart_judges_every_item_exactly_once(tmp_path):
    with FaultServer(delay=0.1) as server:
        library, prompt, items, _ = openai_prompt(tmp_path, server, count=1)
        data = write_jsonl(tmp_path / "crash.jsonl", make_items(60))
        args = [
            *CLI,
            "score",
            "--prompt",
            prompt.label,
            "--data",
            str(data),
            "--db",
            str(tmp_path / "lib.db"),
            "--concurrency",
            "4",
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "out.jsonl"),
            "--quiet",
        ]
        proc = subprocess.Popen(args, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _judged(tmp_path / "lib.db") < 12 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.kill()  # SIGKILL: no cleanup, no finally blocks
        proc.wait(10)
        before = _judged(tmp_path / "lib.db")
        assert 12 <= before < 60
        sent_before = server.count
        done = subprocess.run(args[:-1], env=_env(tmp_path), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "resuming run" in done.stderr
    conn = sqlite3.connect(tmp_path / "lib.db")
    rows = conn.execute("SELECT run_id, item_id, error FROM judgments").fetchall()
    assert len(rows) == 60 and len({r[1] for r in rows}) == 60 and len({r[0] for r in rows}) == 1
    assert all(r[2] is None for r in rows)
    # Only the calls in flight at the kill (at most 4 workers) were asked twice.
    assert server.count - sent_before <= 60 - before + 4
    assert server.count <= 64
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 60


def test_the_key_is_nowhere_after_a_run(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)

    def script(index, body):
        text = body["messages"][0]["content"]
        return {"Document number 1.": "500", "Document number 2.": "429"}.get(
            next((k for k in ("Document number 1.", "Document number 2.") if k in text), ""), "ok"
        )

    with FaultServer(script, retry_after="0.01") as server:
        library, prompt, items, dataset = openai_prompt(tmp_path, server, count=4)
        args = [
            "score",
            "--prompt",
            prompt.label,
            "--data",
            "tiny",
            "--db",
            str(tmp_path / "lib.db"),
            "--max-attempts",
            "2",
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "out.jsonl"),
        ]
        proc = subprocess.run([*CLI, *args], env=_env(tmp_path), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        in_process = invoke([*args[:-2], "--new-run", "--no-cache", "--out", str(tmp_path / "out2.jsonl")])
        assert in_process.exit_code == 0
        assert f"Bearer {KEY}" in server.authorizations  # the key was really used
    (run, *_) = library.list_runs()
    assert run.errors == 2  # the 500 and the 429 items kept their errors
    export_judgments(library.judgments(run.id), tmp_path / "judgments.csv")
    write_export(prompt, tmp_path / "prompt.json")
    # Every log record the in-process run made at DEBUG is searched below (the standard library's http.client, which
    # sends to a plain-http server, logs nothing of its own).
    texts = [proc.stdout, proc.stderr, in_process.output, caplog.text]
    db = str(tmp_path / "lib.db")  # the runs as scripts read them (issue 9: every surface)
    texts += [
        invoke(["runs", "list", "--json", "--db", db]).output,
        invoke(["runs", "show", run.id, "--json", "--judgments", "--db", db]).output,
    ]
    assert run.id in texts[-2]
    # Read the files while the library is open (its WAL present) and again after it closed.
    contents = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    library.close()
    contents.update({p.name + " (closed)": p.read_bytes() for p in tmp_path.iterdir() if p.is_file()})
    assert {"lib.db", "lib.db-wal", "out.jsonl", "out2.jsonl", "judgments.csv", "prompt.json"} <= set(
        contents
    )
    # The search itself works: the model version the server reported is in the library and the output.
    assert any(b"fault-model-2024-01-01" in contents[n] for n in ("lib.db", "lib.db-wal", "lib.db (closed)"))
    assert "fault-model-2024-01-01" in (tmp_path / "out.jsonl").read_text()
    for needle in (KEY, KEY[8:20], KEY[-16:]):
        assert all(needle not in t for t in texts)
        assert all(needle.encode() not in data for data in contents.values())
