"""The one installable distribution (issue 41): the wheel built from this checkout holds the CLI, the Python API,
the app's pages and config and the sample set inside packages, and nothing of the checkout's tests; installed in a
fresh venv without the checkout on its path, it runs `geval --help`, `geval score` on the packaged sample set
against a loopback OpenAI-compatible server, and `geval app`, whose first page a headless Chromium draws.

The fresh venv gets the dependencies without a network: a .pth file names the project venv's site-packages (its
editable install's finder is not started from there, so the checkout stays out of reach).
"""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import free_port, served
from judge_fakes import FakeJudges
from wheel_build import build_wheel, copy_checkout

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"start", "design", "library", "datasets", "score", "rate", "agreement", "align"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built by setuptools' build backend from a copy of the checkout (no build/ left in the checkout).

    The copy carries a secrets file and the tests, so the file list shows neither is shipped.
    """
    source = copy_checkout(tmp_path_factory.mktemp("source") / "geval-workbench")
    (source / ".streamlit" / "secrets.toml").write_text(
        'OPENAI_API_KEY = "sk-never-shipped"\n', encoding="utf-8"
    )
    built, said = build_wheel(source, tmp_path_factory.mktemp("dist"))
    assert "DeprecationWarning" not in said and "Warning" not in said, said[
        -3000:
    ]  # the license table's, or any
    return built


@pytest.mark.slow
def test_the_wheel_holds_the_app_and_the_sample_set_inside_packages(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"  # geval_workbench-VERSION.dist-info
    top = {name.split("/")[0] for name in names}
    assert top == {"geval_core", info}, top  # no generic top-level name beside it
    app = "geval_core/workbench_ui/app"
    assert {f"{app}/app.py", f"{app}/.streamlit/config.toml"} <= set(names)
    assert {f"{app}/app_pages/{page}.py" for page in PAGES} <= set(names)
    assert {
        "geval_core/sample_data/sample.jsonl",
        "geval_core/sample_data/dimensions.json",
        "geval_core/sample_data/README.md",
        "geval_core/py.typed",
        "geval_core/prompt_library/py.typed",
        "geval_core/prompt_library/library.py",
    } <= set(names)
    assert not [
        name for name in names if name.startswith(("tests/", "sample_data/", "bench/")) or "secrets" in name
    ]
    shipped = {
        name: zipfile.ZipFile(wheel).read(name).decode() for name in names if name.endswith((".py", ".pyi"))
    }
    stale = [
        (name, line)
        for name, text in shipped.items()
        for line in text.splitlines()
        if re.search(r"(?<![\w.])(prompt_library|workbench_ui)\b", line)
    ]
    assert not stale, stale[:5]  # every reference to a nested package names it under geval_core
    assert "from geval_core.prompt_library import open_library" in "".join(shipped.values())
    top_level = zipfile.ZipFile(wheel).read(f"{info}/top_level.txt").decode().split()
    assert top_level == ["geval_core"], top_level
    assert f"{info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata and "Requires-Python: >=3.11" in metadata
    core = [
        line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert not [line for line in core if "streamlit" in line or "plotly" in line], core
    assert (
        any("httpx2" in line for line in core)
        and 'Requires-Dist: streamlit>=1.49; extra == "app"' in metadata
    )


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (no index, no dependencies fetched); returns its bin folder."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    packages = Path(
        subprocess.run(
            [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (packages / "project_dependencies.pth").write_text(site.getsitepackages()[0] + "\n", encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    return venv / "bin"


def clean_env(**changes: str) -> dict[str, str]:
    """The environment without a path to the checkout, a key or a test judge plugin."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "GEVAL_PROVIDER_PLUGINS", "OPENAI_API_KEY", "GEVAL_DB", "VIRTUAL_ENV")
    }
    return {**env, **changes}


def run(bin_dir: Path, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=cwd,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


@pytest.mark.slow
def test_the_installed_package_is_what_runs(installed, tmp_path):
    probe = (
        "import json, geval_core, geval_core.prompt_library as library, geval_core.workbench_ui as ui, "
        "geval_core.cli.app as app, geval_core.prompt_library.seed as seed; "
        "print(json.dumps([geval_core.__file__, library.__file__, ui.__file__, str(app.app_script()), "
        "str(seed.SAMPLE_DIR), geval_core.open_library.__module__]))"
    )
    files = json.loads(run(installed, ["python", "-c", probe], tmp_path).stdout)
    env = installed.parent.resolve()
    assert all(Path(f).resolve().is_relative_to(env) for f in files[:5]), files
    assert files[3].endswith("geval_core/workbench_ui/app/app.py") and files[4].endswith(
        "geval_core/sample_data"
    )
    assert files[5] == "geval_core.prompt_library.library"  # the face's names from the nested package
    for generic in ("sample_data", "prompt_library", "workbench_ui"):  # none of them top-level
        gone = f"import importlib.util; print(importlib.util.find_spec({generic!r}))"
        assert run(installed, ["python", "-c", gone], tmp_path).stdout.strip() == "None"


@pytest.mark.slow
def test_geval_help_and_score_on_the_packaged_sample_set(installed, tmp_path):
    shown = run(installed, ["geval", "--help"], tmp_path).stdout
    assert "app" in shown.split() and "score" in shown.split()
    assert "pip install 'geval-workbench[app]'" in run(installed, ["geval", "app", "--help"], tmp_path).stdout
    server = FakeJudges()
    try:
        out = tmp_path / "results.jsonl"
        run(
            installed,
            [
                "geval",
                "score",
                "--prompt",
                "coherence",
                "--data",
                "sample",
                "--judge",
                "openai:judge-1",
                "--base-url",
                f"{server.url}/v1",
                "--db",
                str(tmp_path / "lib.db"),
                "--out",
                str(out),
                "-q",
            ],
            tmp_path,
        )
    finally:
        server.close()
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    items = (ROOT / "sample_data" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == len(items) > 0 and all(row["score"] is not None for row in rows)
    assert len([r for r in server.requests if r[1].endswith("/chat/completions")]) == len(items)


@pytest.mark.slow
@pytest.mark.browser
def test_geval_app_draws_its_first_page_from_the_installed_package(installed, tmp_path, chromium):
    from browser_support import browser_page, playwright_api, settle

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(installed / "geval"), "app", "--port", str(port), "--db", str(tmp_path / "app.db")]
    with (
        served(
            command,
            f"{url}/_stcore/health",
            tmp_path / "app.log",
            timeout=90.0,
            cwd=tmp_path,
            env=clean_env(),
        ),
        browser_page(chromium, tmp_path) as page,
    ):
        page.goto(url)
        settle(page)
        playwright_api.expect(
            page.get_by_text("Next: Describe one quality dimension.", exact=False)
        ).to_be_visible(timeout=60_000)
        playwright_api.expect(page.locator("[data-testid='stException']")).to_have_count(0)
        playwright_api.expect(page.get_by_role("link", name="Agreement")).to_have_count(1)
    log = (tmp_path / "app.log").read_text(encoding="utf-8")
    assert f"127.0.0.1:{port}" in log and "0.0.0.0" not in log
    assert (tmp_path / "app.db").is_file()  # --db chose the library the app opened


def test_geval_app_without_the_app_extra_says_which_pip_line_to_run(monkeypatch):
    from click.testing import CliRunner

    from geval_core.cli import app, cli

    monkeypatch.setattr(app, "APP_MODULES", ("streamlit", "no_such_module_here"))
    done = CliRunner().invoke(cli, ["app", "--port", "8600"])
    assert done.exit_code == 1 and done.exception is None or isinstance(done.exception, SystemExit)
    assert (
        "no_such_module_here not installed" in done.output
        and "pip install 'geval-workbench[app]'" in done.output
    )


def test_geval_app_serves_the_checkouts_app_on_loopback_with_the_shipped_config():
    from geval_core.cli.app import app_script, streamlit_command

    assert app_script() == ROOT / "app.py"  # a checkout (the wheel's own place is tested above)
    command = streamlit_command(app_script(), 8600)
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    assert command[1:5] == ["-m", "streamlit", "run", str(ROOT / "app.py")]
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    shipped = {
        f"--{section}.{name}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, options in config.items()
        for name, value in options.items()
    }
    assert flags == {**shipped, "--server.address": "127.0.0.1", "--server.port": "8600"}
    assert shipped["--server.headless"] == "true" and shipped["--server.address"] == "127.0.0.1"
