"""Credentials in URLs (http://user:KEY@host/v1, ?api_key=KEY) are refused with a message naming the key
variable, at every door: --base-url, score_item, get_judge and the judges themselves. Afterwards the key is
on no surface: stdout, stderr, `runs list --json`, the --out file, the library file's bytes, the export."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension, setup_library

from geval_core.cli import cli
from geval_core.errors import ConfigError
from geval_core.export import score_item, write_export
from geval_core.providers import get_judge
from geval_core.types import FrozenPrompt, JudgeSettings
from geval_core.urls import check_base_url, shown_url

KEY = "sk-test-URLcred0KEY0never0anywhere00000000000077"
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def with_credentials(url: str) -> list[str]:
    """The ways a key rides along in a URL."""
    return [
        url.replace("http://", f"http://user:{KEY}@"),
        url.replace("http://", f"http://{KEY}@"),
        f"{url}?api_key={KEY}",
        f"{url}?foo=1&access_token={KEY}",
        f"{url}#key={KEY}",
        f"{url}?{KEY}",
        f"{url}?x={KEY}",
        f"{url}#{KEY}",
        f"{url}/{KEY}",
        url.replace("/v1", f"/{KEY}/v1"),
        f"{url}/Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
    ]  # a path segment mixed like a key, with no key prefix


def test_check_base_url_refuses_credentials_and_never_repeats_them():
    url = "http://127.0.0.1:8080/v1"
    assert check_base_url(url) == url and check_base_url("  ") is None and check_base_url(None) is None
    for bad in with_credentials(url):
        with pytest.raises(ConfigError) as info:
            check_base_url(bad, "OPENAI_API_KEY")
        assert (
            "OPENAI_API_KEY" in str(info.value)
            and KEY not in str(info.value)
            and "credentials" in str(info.value)
        )
        assert KEY not in shown_url(bad) and "Ab12Cd34Ef56Gh78Ij90Kl12Mn34" not in str(info.value)
    for fine in (
        "http://127.0.0.1:8080/openai/deployments/gpt-4o-mini-2024-07-18/v1",
        "http://10.0.0.2/qwen2.5-coder-32b-instruct-q4_k_m/v1",
        "https://api.openai.com/v1",
    ):
        assert check_base_url(fine) == fine  # names in paths are not keys
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        check_base_url(with_credentials(url)[0], "GEMINI_API_KEY")
    for bad in ("ftp://127.0.0.1/v1", "127.0.0.1:8080/v1", "http://:8080/v1", "http://h:port/v1"):
        with pytest.raises(ConfigError, match="server"):
            check_base_url(bad)


def test_every_door_refuses_a_url_with_a_key(monkeypatch):
    from geval_core.providers.gemini_judge import GeminiJudge
    from geval_core.providers.openai_judge import OpenAIJudge

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-env-key")
    url = with_credentials("http://127.0.0.1:9/v1")[0]
    prompt = FrozenPrompt(
        "0" * 64, "coherence", 1, dimension(JudgeSettings(provider="openai", model="m")), ""
    )
    for door in (
        lambda: get_judge(JudgeSettings(provider="openai", model="m", base_url=url)),
        lambda: get_judge(JudgeSettings(provider="gemini", model="m", base_url=url), api_key="g"),
        lambda: OpenAIJudge("m", "sk-test-env-key", base_url=url),
        lambda: GeminiJudge("m", "g", base_url=url),
        lambda: score_item(prompt, {"document": "D.", "summary": "S."}, base_url=url),
    ):
        with pytest.raises(ConfigError) as info:
            door()
        assert KEY not in str(info.value) and "_API_KEY" in str(info.value)


def test_the_cli_refuses_and_the_key_is_on_no_surface(tmp_path):
    with FaultServer() as server:
        library, prompt, items, _ = setup_library(
            tmp_path / "lib.db", count=2, judge=JudgeSettings(provider="openai", model="fault-model")
        )
        db, out = str(tmp_path / "lib.db"), tmp_path / "out.jsonl"
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "OPENAI_API_KEY": "sk-test-the-env-key-0000",
            "GEVAL_PRICES": "",
        }
        texts = []
        for bad in with_credentials(server.base_url):
            for judge in ([], ["--judge", "gemini:gemini-2.0-flash-001"]):
                args = [
                    "score",
                    "--prompt",
                    prompt.label,
                    "--data",
                    "tiny",
                    "--db",
                    db,
                    "--base-url",
                    bad,
                    "--out",
                    str(out),
                    *judge,
                ]
                proc = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)
                assert proc.returncode != 0 and "carries credentials" in proc.stderr
                assert ("GEMINI_API_KEY" if judge else "OPENAI_API_KEY") in proc.stderr
                texts += [proc.stdout, proc.stderr]
        assert server.count == 0 and server.authorizations == set()  # nothing was sent anywhere
        runner = CliRunner()
        listed = runner.invoke(cli, ["runs", "list", "--json", "--db", db])
        assert json.loads(listed.output) == []  # no run was created with the URL
        export = runner.invoke(
            cli, ["prompts", "export", prompt.label, "--db", db, "-o", str(tmp_path / "p.json")]
        )
        texts += [listed.output, export.output]
    # The same prompt object built with a key in its URL (by hand, bypassing every check): nothing written.
    smuggled = dimension(
        JudgeSettings(provider="openai", model="m", base_url=with_credentials("http://h/v1")[0])
    )
    write_export(FrozenPrompt("0" * 64, "smuggled", 1, smuggled, ""), tmp_path / "smuggled.json")
    library.freeze(smuggled, name="smuggled")  # freezing keeps no server URL at all
    library.close()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert {"lib.db", "p.json", "smuggled.json"} <= set(files) and not out.exists()
    for needle in (KEY, KEY[8:24], KEY[-16:]):
        assert all(needle not in t for t in texts)
        assert all(needle.encode() not in data for data in files.values())


def test_a_key_the_server_echoes_in_a_reply_is_never_stored(tmp_path):
    """A server that puts the key into a normal answer (a token, its alternatives, the raw body)."""
    echoed = {"4": 0.9, f" {KEY}": 0.1}
    with FaultServer(distribution=echoed) as server:
        library, prompt, items, dataset = setup_library(
            tmp_path / "lib.db", count=2, judge=JudgeSettings(provider="openai", model="fault-model")
        )
        library.close()
        out = tmp_path / "out.jsonl"
        done = CliRunner().invoke(
            cli,
            [
                "score",
                "--prompt",
                prompt.label,
                "--data",
                dataset["label"],
                "--db",
                str(tmp_path / "lib.db"),
                "--base-url",
                server.base_url,
                "--out",
                str(out),
            ],
            env={"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""},
        )
    assert done.exit_code == 0, done.output
    assert f"Bearer {KEY}" in server.authorizations  # the key was really used, and really echoed
    files = [p.read_bytes() for p in tmp_path.iterdir() if p.is_file()]
    assert all(KEY.encode() not in data for data in files) and KEY not in done.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score"] for r in rows] == [4.0, 4.0]  # the reply still scores; only the key is gone
    assert any(b"[redacted key]" in data for data in files)
