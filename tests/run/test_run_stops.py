"""Runs that end honestly: Ctrl-C with hung requests, exit codes, a finished command reported again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from faultserver import FaultServer
from runner_helpers import setup_library

from geval_core.types import JudgeSettings
from prompt_library import Library

KEY = "sk-test-STOPS0000000000000000000000000000000001"
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def start_score(tmp_path, server, *extra):
    settings = JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=6, judge=settings)
    library.close()
    env = {**os.environ, "OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
    args = [
        *CLI,
        "score",
        "--prompt",
        prompt.label,
        "--data",
        dataset["label"],
        "--db",
        str(tmp_path / "lib.db"),
        "--base-url",
        server.base_url,
        "--concurrency",
        "2",
        "--timeout",
        "120",
        *extra,
    ]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_requests(server, count, limit=30.0):
    deadline = time.monotonic() + limit
    while server.count < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.count >= count


def test_ctrl_c_with_hung_requests_exits_within_two_seconds(tmp_path):
    with FaultServer(script=lambda index, body: "hang", hang_s=120) as server:
        process = start_score(tmp_path, server)
        wait_for_requests(server, 2)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
        took = time.monotonic() - sent
    assert process.returncode == 130 and took <= 2.5, (took, err)
    assert "Traceback" not in err and "run the same command again to resume" in err


def test_a_second_ctrl_c_quits_at_once_and_quietly(tmp_path):
    with FaultServer(script=lambda index, body: "hang", hang_s=120) as server:
        process = start_score(tmp_path, server)
        wait_for_requests(server, 2)
        process.send_signal(signal.SIGINT)
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "Traceback" not in err


def test_a_finished_command_reports_its_run_and_an_unscored_run_exits_non_zero(tmp_path):
    with FaultServer() as server:
        first = start_score(tmp_path, server)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        again = start_score(tmp_path, server)
        out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert server.count == 6 and "6 done before" in err  # the same run, not a new one
        assert len([json.loads(line) for line in out.splitlines()]) == 6
    with FaultServer(script=lambda index, body: "nologprobs") as server:
        failing = start_score(tmp_path / "other", server)
        _, err = failing.communicate(timeout=120)
    assert failing.returncode in (3, 4) and "Traceback" not in err


def test_two_identical_commands_pay_for_each_item_once(tmp_path):
    with FaultServer(delay=0.2) as server:
        settings = JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url)
        library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=20, judge=settings)
        library.close()
        env = {**os.environ, "OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
        args = [
            *CLI,
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--db",
            str(tmp_path / "lib.db"),
            "--base-url",
            server.base_url,
            "--concurrency",
            "4",
        ]
        both = [
            subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in both]
    assert server.count <= 1.05 * 20, server.count
    assert all("Traceback" not in err for _, err in results)
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0  # one scored every item; the other either found it finished or was refused
    if codes[1] != 0:
        assert "is being scored by process" in results[[c for c, _ in results].index(codes[1])][1]
    with Library(tmp_path / "lib.db") as lib:
        assert (
            len(lib.list_runs(prompt=prompt.id)) == 1
            and len(lib.judged_item_ids(lib.list_runs()[0].id)) == 20
        )


def test_a_lease_is_refused_while_alive_and_taken_over_when_its_heartbeat_stops(tmp_path):
    from geval_core.errors import RunBusyError

    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=1)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    library.take_lease(run_id, "first")
    with pytest.raises(RunBusyError, match=f"run {run_id} is being scored by process {os.getpid()}"):
        library.take_lease(run_id, "second")
    library.take_lease(run_id, "second", stale_s=0.0)  # the first stopped renewing: taken over
    library.release_lease(run_id, "first")  # a late release of the old owner removes nothing
    with pytest.raises(RunBusyError):
        library.take_lease(run_id, "third")
    library.release_lease(run_id, "second")
    library.take_lease(run_id, "third")
