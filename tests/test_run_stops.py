"""Runs that end honestly: Ctrl-C with hung requests, exit codes, a finished command reported again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from faultserver import FaultServer
from runner_helpers import setup_library

from geval_core.types import JudgeSettings

KEY = "sk-test-STOPS0000000000000000000000000000000001"
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def start_score(tmp_path, server, *extra):
    settings = JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=6, judge=settings)
    library.close()
    env = {**os.environ, "OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
    args = [*CLI, "score", "--prompt", prompt.label, "--data", dataset["label"], "--db", str(tmp_path / "lib.db"),
            "--base-url", server.base_url, "--concurrency", "2", "--timeout", "120", *extra]
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
