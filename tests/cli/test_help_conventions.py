"""CLI conventions next to llm and sqlite-utils (issue 41): an example in every `--help`, each one a command line
the command accepts; the environment variable an option reads declared and shown; `--json` summaries never mixed
into a data stream on stdout; prompt, dataset and run names completed from the library."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings
from prompt_library import Library

EXAMPLES = re.compile(r"^  Examples:\n((?:    .*\n?)+)", re.MULTILINE)
FILE_SUFFIXES = (".json", ".jsonl", ".csv", ".yaml", ".key", ".py")


def commands() -> Iterator[tuple[str, click.Command, click.Context]]:
    """Every command under `geval`, the group itself and each group included, with the context its help is
    drawn in (as `geval ... --help` draws it)."""

    def walk(command: click.Command, name: str, parent: click.Context | None) -> Iterator:
        ctx = click.Context(command, info_name=name, parent=parent, **(command.context_settings or {}))
        yield ctx.command_path, command, ctx
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, sub), sub, ctx)

    yield from walk(cli, "geval", None)


def examples(help_text: str) -> list[str]:
    """The command lines of a help text's "Examples:" paragraph (a line ending in \\ continues on the next)."""
    found = EXAMPLES.search(help_text)
    if not found:
        return []
    lines = [line.strip() for line in found.group(1).splitlines()]
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line
        else:
            joined.append(line)
    return joined


ALL = list(commands())


def test_every_help_shows_an_example():
    missing = [path for path, command, ctx in ALL if not examples(command.get_help(ctx))]
    assert len(ALL) >= 50, "the walk reaches every command"
    assert missing == [], (
        f"{len(ALL) - len(missing)}/{len(ALL)} helps show an example; without one: {missing}"
    )
    for path, command, ctx in ALL:
        lines = examples(command.get_help(ctx))
        assert 1 <= len(lines) <= 4 and all(line.startswith("geval ") for line in lines), (path, lines)


def _argv(line: str) -> list[str]:
    """An example's arguments after `geval`: the shell's comment, redirections and pipes left out."""
    words = shlex.split(line, comments=True)
    for stop in ("<", ">", "|", "&&"):
        if stop in words:
            words = words[: words.index(stop)]
    assert words[0] == "geval"
    return words[1:]


@pytest.mark.parametrize("path", [path for path, _, _ in ALL])
def test_every_example_is_a_command_line_the_command_accepts(path, tmp_path, monkeypatch):
    """Each example is parsed by click as `geval` would parse it (options, types, ranges, required ones); nothing
    runs: every command's callback is replaced for the test."""
    monkeypatch.chdir(tmp_path)
    help_text = dict((p, c.get_help(x)) for p, c, x in ALL)[path]
    for _, command, _ in ALL:
        monkeypatch.setattr(command, "callback", lambda *args, **kwargs: None)
    for line in examples(help_text):
        argv = _argv(line)
        for word in argv:  # a file the example reads exists (click checks some do)
            if word.endswith(FILE_SUFFIXES) and "=" not in word:
                (tmp_path / word).touch()
        try:
            cli.main(argv, prog_name="geval", standalone_mode=False)
        except click.ClickException as exc:
            pytest.fail(f"{path}: `{line}` is refused: {exc.format_message()}")


def test_every_db_option_declares_GEVAL_DB_and_help_shows_it():
    with_db = [(path, param) for path, command, _ in ALL for param in command.params if param.name == "db"]
    assert len(with_db) > 40
    for path, param in with_db:
        assert isinstance(param, click.Option) and param.envvar == "GEVAL_DB" and param.show_envvar, path
    for args in (["--help"], ["score", "--help"], ["runs", "list", "--help"], ["agree", "--help"]):
        shown = CliRunner().invoke(cli, args)
        assert shown.exit_code == 0 and "[env var: GEVAL_DB]" in " ".join(shown.output.split()), args


def test_the_db_is_the_same_file_from_the_environment_before_or_after_the_command(tmp_path, monkeypatch):
    """Declaring GEVAL_DB on --db changes no choice of file: the variable, `geval --db` before the command and the
    command's own --db (which wins) each open the file they name."""
    runner = CliRunner()
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "env.db"))
    assert runner.invoke(cli, ["prompts", "list", "--json"]).exit_code == 0
    assert (tmp_path / "env.db").is_file()
    before = runner.invoke(cli, ["--db", str(tmp_path / "before.db"), "datasets", "list", "--json"])
    assert before.exit_code == 0 and (tmp_path / "before.db").is_file()
    assert os.environ["GEVAL_DB"] == str(
        tmp_path / "env.db"
    )  # `geval --db` names the file, never the variable
    both = runner.invoke(
        cli, ["--db", str(tmp_path / "group.db"), "runs", "list", "--db", str(tmp_path / "own.db")]
    )
    assert both.exit_code == 0 and (tmp_path / "own.db").is_file() and not (tmp_path / "group.db").exists()
    agree = runner.invoke(cli, ["--db", str(tmp_path / "agree.db"), "agree", "nothing-here", "--human", "h"])
    assert (
        agree.exit_code != 0 and (tmp_path / "agree.db").is_file()
    )  # the group's --db reaches every command
    monkeypatch.delenv("GEVAL_DB")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(cli, ["prompts", "list"]).exit_code == 0 and (tmp_path / "geval.db").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["score", "--prompt", "coherence", "--data", "tiny", "--json", "--out", "-"],
        ["score", "--panel", "trio", "--data", "tiny", "--json", "--out", "-"],
        ["runs", "export", "1a2b3c", "--json", "-o", "-"],
        ["prompts", "export", "coherence", "--json", "-o", "-"],
        ["panel", "export", "trio", "--json", "-o", "-"],
    ],
)
def test_json_with_a_data_stream_on_stdout_is_refused_before_anything_runs(args, tmp_path):
    db = tmp_path / "lib.db"
    done = CliRunner().invoke(cli, [*args, "--db", str(db)])
    assert done.exit_code == 2, done.output
    assert "FILE" in done.output and "--json" in done.output
    if args[0] == "score":
        assert not db.exists(), "refused before the library is opened, let alone a judge asked"


def test_score_keeps_stdout_one_shape(tmp_path):
    """--out -: only results rows on stdout; --json: only the summary object (the rows in --out FILE)."""
    library, prompt, _, dataset = setup_library(
        tmp_path / "lib.db", count=3, judge=JudgeSettings(provider="scripted", model="scripted-1")
    )
    library.close()
    base = [
        "score",
        "--prompt",
        prompt.label,
        "--data",
        dataset["label"],
        "--db",
        str(tmp_path / "lib.db"),
        "-q",
    ]
    rows = CliRunner().invoke(cli, [*base, "--out", "-"])
    assert rows.exit_code == 0, rows.output
    parsed = [json.loads(line) for line in rows.stdout.splitlines()]
    assert len(parsed) == 3 and all("item_id" in row or "id" in row for row in parsed)
    assert len({frozenset(row) for row in parsed}) == 1, "every line has the rows' shape"
    out = tmp_path / "results.jsonl"
    summary = CliRunner().invoke(cli, [*base, "--new-run", "--out", str(out), "--json"])
    assert summary.exit_code == 0, summary.output
    assert json.loads(summary.stdout)["scored"] == 3 and len(out.read_text().splitlines()) == 3
    shown = CliRunner().invoke(cli, ["score", "--help"], terminal_width=200)
    assert "--out - with --json is refused" in " ".join(shown.output.split())


def _complete(args: list[str], incomplete: str) -> list[tuple[str, str]]:
    return [
        (item.value, item.type)
        for item in ShellComplete(cli, {}, "geval", "_GEVAL_COMPLETE").get_completions(args, incomplete)
    ]


def test_prompt_dataset_and_run_names_complete_from_the_library(tmp_path):
    db = str(tmp_path / "lib.db")
    library, prompt, _, dataset = setup_library(
        tmp_path / "lib.db", count=2, judge=JudgeSettings(provider="scripted", model="scripted-1")
    )
    run_id = library.create_run(
        prompt.id, dataset["id"], JudgeSettings(provider="scripted", model="scripted-1")
    )
    library.close()
    assert _complete(["score", "--db", db, "--prompt"], "coh") == [(prompt.name, "plain")]
    assert _complete(["--db", db, "score", "--data"], "") == [(dataset["name"], "plain")]
    assert _complete(["--db", db, "prompts", "show"], f"{prompt.name}@") == [(prompt.label, "plain")]
    assert _complete(["--db", db, "runs", "show"], run_id[:3]) == [(run_id, "plain")]
    assert _complete(["--db", db, "score", "--data"], "./da") == [("./da", "file")]  # a data file being typed
    assert _complete(["--db", db, "score", "--data"], "mine") == [("mine", "file")]  # no such name: files
    assert _complete(["--db", db, "runs", "list", "--dataset"], "zz") == []  # names only there


def test_completion_reads_the_environments_library_and_never_creates_one(tmp_path, monkeypatch):
    missing = tmp_path / "missing.db"
    monkeypatch.setenv("GEVAL_DB", str(missing))
    assert _complete(["runs", "show"], "") == [] and _complete(["prompts", "show"], "") == []
    assert not missing.exists()
    Library(tmp_path / "env.db").close()  # seeded with the examples
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "env.db"))
    assert ("coherence", "plain") in _complete(["score", "--prompt"], "")


def test_the_readme_says_how_to_turn_completion_on():
    from paths import ROOT

    readme = Path(ROOT, "README.md").read_text(encoding="utf-8")
    assert (
        "_GEVAL_COMPLETE=bash_source geval" in readme and "zsh_source" in readme and "fish_source" in readme
    )


def test_the_readme_names_the_review_orders_the_command_takes():
    from paths import ROOT

    from geval_core.diagnostics.review import ORDERS

    readme = " ".join(Path(ROOT, "README.md").read_text(encoding="utf-8").split())
    said = set(re.findall(r"--order (\w+)", readme))
    assert said == set(ORDERS), said  # every order named as the command spells it, none it does not take
    assert "most disputed" not in readme  # a word the command does not take
    help_text = CliRunner().invoke(cli, ["review", "--help"]).output
    assert all(f"{order}:" in " ".join(help_text.split()) for order in ORDERS)
