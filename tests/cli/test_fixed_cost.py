"""The fixed cost of a `geval` process (issue 15): what a command does not import, and what it does not build.

The timings are in bench/bench_fixed_cost.py; these tests keep the causes away: the judges' SDKs, numpy and
pandas stay unloaded until a command needs them, a run with nothing left to ask builds no judge, and the
run list counts judgments from an index.
"""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner
from paths import ROOT
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings
from prompt_library import Library
from prompt_library.base import BUSY_TIMEOUT_S

HEAVY = ("numpy", "pandas", "scipy", "openai", "httpx", "httpx2", "google.genai", "pyarrow", "llama_cpp")


def loaded_after(code: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """The `modules` (HEAVY unless named) a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport sys\nprint('loaded:', *(m for m in {modules!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1].split()[1:]


def test_importing_the_core_and_the_cli_loads_no_sdk_and_no_numpy():
    assert loaded_after("import geval_core, prompt_library\nfrom geval_core.cli import cli") == []


def test_help_and_a_library_listing_load_no_sdk_and_no_numpy(tmp_path):
    db = tmp_path / "lib.db"
    run = "from geval_core.cli import cli\ntry:\n    cli.main({args!r})\nexcept SystemExit as exc:\n    assert not exc.code"
    assert loaded_after(run.format(args=["--help"])) == []
    assert loaded_after(run.format(args=["runs", "list", "--db", str(db)])) == []
    assert loaded_after(run.format(args=["prompts", "list", "--db", str(db)])) == []


def test_commands_on_an_existing_library_load_no_sqlite_utils(tmp_path):
    """Reads and writes on an existing library use plain sqlite3 (sqlite-utils: 60-80 ms of start-up);
    only migrating a file loads it."""
    db = tmp_path / "lib.db"
    settings = JudgeSettings(provider="scripted", model="scripted-1")
    library, prompt, _, dataset = setup_library(db, count=2, judge=settings)
    run_id = library.create_run(prompt.id, dataset["id"], settings)
    library.close()
    Library(db).close()  # the commands open it seeded with the examples: the first open writes them
    run = "from geval_core.cli import cli\ntry:\n    cli.main({args!r})\nexcept SystemExit as exc:\n    assert not exc.code"
    score = ["score", "--prompt", prompt.label, "--data", dataset["label"], "--quiet"]
    for args in (
        ["runs", "list"],
        ["runs", "show", run_id],
        ["prompts", "list"],
        ["datasets", "list"],
        score,
    ):
        assert loaded_after(run.format(args=[*args, "--db", str(db)]), ("sqlite_utils",)) == [], args
    with Library(db) as library:
        assert sum(r.judged for r in library.list_runs()) == 2  # the score command did write
    # a new file is migrated and seeded, and that loads it (so the probe above can see it)
    write = run.format(args=["prompts", "list", "--db", str(tmp_path / "new.db")])
    assert loaded_after(write, ("sqlite_utils",)) == ["sqlite_utils"]


def test_lazy_exports_are_the_objects_they_name():
    import geval_core
    import geval_core.stats
    import geval_core.stats.agreement  # the submodule of the same name must not replace the function
    from geval_core import agreement
    from geval_core.stats import agreement as stats_agreement
    from geval_core.stats.agreement import agreement as function

    assert agreement is stats_agreement is function is geval_core.stats.agreement
    assert set(geval_core.__all__) <= set(dir(geval_core))


def test_the_cli_states_the_estimate_methods_as_the_statistics_do():
    from geval_core.cli.diagnostics import METHODS
    from geval_core.stats.ppi import METHODS as STATS_METHODS

    assert METHODS == STATS_METHODS


def test_sqlite_utils_still_maps_numpy_types_to_columns():
    import numpy as np
    import sqlite_utils.db

    mapping = sqlite_utils.db.COLUMN_TYPE_MAPPING
    assert mapping[np.int64] == "INTEGER" and mapping[np.float32] == "REAL" and mapping[str] == "TEXT"
    assert mapping.get(np.int8) == "INTEGER" and mapping.get(object, "x") == "x"


def test_a_rerun_with_nothing_left_to_judge_builds_no_judge(tmp_path, monkeypatch):
    settings = JudgeSettings(provider="scripted", model="scripted-1")
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3, judge=settings)
    library.close()
    built = []

    def get_judge(settings, **kwargs):
        from geval_core.providers.scripted import ScriptedJudge

        built.append(settings.provider)
        return ScriptedJudge()

    monkeypatch.setattr("geval_core.providers.get_judge", get_judge)
    args = [
        "score",
        "--prompt",
        prompt.label,
        "--data",
        dataset["label"],
        "--db",
        str(tmp_path / "lib.db"),
        "--out",
        str(tmp_path / "out.jsonl"),
        "--quiet",
    ]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert built == ["scripted"]  # made once, at the first request
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert built == ["scripted"]  # every item judged before: no judge made
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == [i.id for i in items]


def test_the_run_list_counts_judgments_from_an_index(tmp_path):
    library, *_ = setup_library(tmp_path / "lib.db", count=2)
    from prompt_library.runs import _RUN_SELECT

    plan = " ".join(str(r) for r in library.db.execute("EXPLAIN QUERY PLAN " + _RUN_SELECT).fetchall())
    assert "COVERING INDEX judgments_by_run_error" in plan
    library.close()


def test_the_connection_is_set_up_as_sqlite_utils_set_it_before(tmp_path):
    """Opened without sqlite-utils, the library's connection keeps the settings it had with it."""
    with Library(tmp_path / "lib.db", seed_examples=False) as library:
        pragma = {
            name: library.conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("recursive_triggers", "foreign_keys", "journal_mode", "synchronous", "busy_timeout")
        }
        assert pragma == {
            "recursive_triggers": 1,
            "foreign_keys": 1,
            "journal_mode": "wal",
            "synchronous": 1,
            "busy_timeout": int(BUSY_TIMEOUT_S * 1000),
        }
        assert library.db.conn is library.conn  # sqlite-utils, for migrations, works on the same connection
