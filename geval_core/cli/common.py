"""What every `geval` command shares: --db, --json, clean errors, tables, prompt/judge/data resolution."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prompt_library import DatasetMapping, Library, default_path, open_library, read_items
from prompt_library.base import locked_message

from ..errors import ConfigError, GEvalError, InputError
from ..files.datafiles import CSV_SUFFIXES, JSONL_SUFFIXES, lookup, read_rows
from ..providers.registry import judge_parts, judge_ref_help, pinned_model
from ..records import Dataset
from ..types import MODES, FrozenPrompt, JudgeSettings, bounds_of

if TYPE_CHECKING:
    from ..run.plan import PlannedJudge

DB_HELP = "Library file (default: ./geval.db)."
DB_ENVVAR = "GEVAL_DB"  # prompt_library.default_path reads it too: the same file either way
JUDGE_HELP = f"{judge_ref_help()} (default: the prompt's own judge)"
DATA_SUFFIXES = JSONL_SUFFIXES + CSV_SUFFIXES
EXIT_BROKEN_PIPE = 141  # the shell's code for a process whose output pipe closed (128 + SIGPIPE)


def workbench_errors(func: Callable) -> Callable:
    """Turn the workbench's own errors into a clean click error (message, exit code 1, no traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except GEvalError as exc:
            raise click.ClickException(str(exc)) from None
        except sqlite3.OperationalError as exc:  # a write waited past the busy timeout
            if "locked" not in str(exc):
                raise
            raise click.ClickException(locked_message(kwargs.get("db") or default_path())) from None
        except BrokenPipeError:  # the reader went away (`geval runs list | head`): stop quietly, as `ls` does
            raise SystemExit(EXIT_BROKEN_PIPE) from None
        except OSError as exc:  # a file to read or write: say which and why, never a traceback
            raise click.ClickException(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")) from None

    return wrapper


def check_output(path: str | None) -> None:
    """Refuse an output file whose folder is missing or not writable, before anything is paid for ("-" is
    stdout)."""
    if path is None or path == "-":
        return
    folder = Path(path).expanduser().resolve().parent
    if not folder.is_dir():
        raise InputError(f"the folder {folder} does not exist; create it or choose another path", file=path)
    if not os.access(folder, os.W_OK):
        raise InputError(f"the folder {folder} is not writable", file=path)


def db_option(func: Callable | None = None, *, help: str = DB_HELP) -> Callable:
    """The --db option: declared with $GEVAL_DB (shown in --help), the file the library opens without it anyway;
    `geval --db FILE COMMAND` names it for the command unless the command's own --db does."""
    option = click.option(
        "--db",
        type=click.Path(dir_okay=False),
        default=None,
        envvar=DB_ENVVAR,
        show_envvar=True,
        callback=group_db,
        help=help,
    )
    return option if func is None else option(func)


def group_db(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The command's --db when given on its own command line, else the one before the command, else $GEVAL_DB."""
    from click.core import ParameterSource

    if param.name is not None and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
        return value
    return ctx.find_root().params.get("db") or value


def json_option(func: Callable) -> Callable:
    """The --json flag (passed as `as_json`)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def bounded_option(cls: type, name: str, *flags: str, **kwargs: Any) -> Callable:
    """A click option whose range and help come from a `bounded` dataclass field (stated once)."""
    bounds = bounds_of(cls, name)
    kind: click.ParamType
    if isinstance(bounds.min, int) and isinstance(bounds.max, int):
        kind = click.IntRange(bounds.min, bounds.max)
    else:
        kind = click.FloatRange(bounds.min, bounds.max)
    kwargs.setdefault("help", bounds.help[:1].upper() + bounds.help[1:] + ".")
    return click.option(*(flags or (f"--{name.replace('_', '-')}",)), type=kind, **kwargs)


def judge_options(func: Callable) -> Callable:
    """--judge, --mode, --n, --temperature: overrides of the prompt's frozen judge settings."""
    for option in reversed(
        (
            click.option("--judge", "judge_ref", default=None, help=JUDGE_HELP),
            click.option(
                "--mode", type=click.Choice(MODES), default=None, help="Override the prompt's scoring mode."
            ),
            bounded_option(JudgeSettings, "n", default=None, help="Override the number of replies per item."),
            bounded_option(JudgeSettings, "temperature", default=None, help="Override the temperature."),
        )
    ):
        func = option(func)
    return func


def library_command(group: click.Group, name: str, lists: bool = False) -> Callable:
    """A sub-command that gets the open library first, with --db (and --json when it lists or shows)."""

    def wrap(func: Callable) -> click.Command:
        @functools.wraps(func)
        @workbench_errors
        def run(db: str | None, **kwargs: Any) -> None:
            with open_library(db) as library:
                func(library, **kwargs)

        command = db_option(run)
        if lists:
            command = json_option(command)
        return group.command(name)(command)

    return wrap


def visible(rows: list[dict[str, Any]], archived_ids: set[str], show_archived: bool) -> list[dict[str, Any]]:
    """Rows not archived (all of them, marked, with --archived)."""
    if show_archived:
        return [{**row, "archived": str(row["id"]) in archived_ids} for row in rows]
    return [row for row in rows if str(row["id"]) not in archived_ids]


def write_lines(text: str, out: str | None) -> None:
    """Results (JSON lines) to the file `out`, or to stdout when none is named or it is '-'."""
    if out and out != "-":
        Path(out).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def echo_json(value: Any) -> None:
    """Print a value as indented JSON (for --json)."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@contextlib.contextmanager
def input_path(value: str, name: str) -> Iterator[str]:
    """The path of a file to read: `value` itself, or for "-" a temporary file named `name` holding stdin."""
    if value != "-":
        yield value
        return
    text = sys.stdin.read()
    with tempfile.TemporaryDirectory(prefix="geval-stdin-") as folder:
        path = Path(folder) / stdin_name(name, text)
        path.write_text(text, encoding="utf-8")
        try:
            yield str(path)
        except GEvalError as exc:  # name what the user gave, not the temporary file
            exc.args = tuple(a.replace(str(path), "stdin") if isinstance(a, str) else a for a in exc.args)
            raise


def stdin_name(name: str, text: str) -> str:
    """The file name stdin's data rows (`name` ending .jsonl) are read under: JSON lines, or a JSON array, when
    the text starts with { or [, else CSV (a header line); any other file keeps `name`."""
    stem, _, suffix = name.rpartition(".")
    if suffix.lower() != "jsonl":
        return name
    first = text.lstrip()[:1]
    if first == "[":
        return f"{stem}.json"
    return f"{stem}.jsonl" if first == "{" or not first else f"{stem}.csv"


def read_input(value: str) -> str:
    """The text of a file to read whole, or of stdin for "-" (no temporary file: nothing needs a path)."""
    return sys.stdin.read() if value == "-" else Path(value).read_text(encoding="utf-8")


READABLE = click.Path(exists=True, dir_okay=False, allow_dash=True)  # a file to read, or "-" for stdin


def json_needs_file(as_json: bool, output: str | None) -> None:
    """--json reports the file a command wrote: refuse it when the file itself goes to stdout."""
    if as_json and (output is None or output == "-"):
        raise click.UsageError(
            "--json prints what was written; name the file with -o FILE (stdout holds the file "
            "itself otherwise)"
        )


def report_written(as_json: bool, facts: dict[str, Any], message: str) -> None:
    """What a command wrote: its facts as JSON on stdout (--json), else the message on stderr."""
    if as_json:
        echo_json(facts)
    else:
        click.echo(message, err=True)


def note_unsaved(store: Any, dataset_id: str, human: str) -> None:
    """On stderr (stdout stays the answer): how many items have Rate-page ratings of `human` this version lacks."""
    from ..stats.people import unsaved_note

    if note := unsaved_note(store, dataset_id, human):
        click.echo(f"note: {note}", err=True)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Print rows as an aligned text table of the given columns."""
    if not rows:
        click.echo("(none)")
        return
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


# --- shell completion (`_GEVAL_COMPLETE=bash_source geval`) ---------------------------------------------
def _completion_library(ctx: click.Context | None) -> Path:
    """The library a completion reads: the --db typed so far (the command's, else `geval --db`), else $GEVAL_DB's
    file or ./geval.db, as the command itself would open (no group callback runs while completing)."""
    while ctx is not None:
        if ctx.params.get("db") and ctx.get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
            return Path(ctx.params["db"])
        ctx = ctx.parent
    return default_path()


def _library_rows(ctx: click.Context, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a query on the library opened read-only; none when there is no library file or it cannot be read
    (a completion never creates, migrates or waits on a library, and never fails)."""
    path = _completion_library(ctx).expanduser()
    if not path.is_file():
        return []
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=0.2)) as connection:
            return connection.execute(sql).fetchall()
    except (sqlite3.Error, OSError, ValueError):
        return []


def _file_completion(incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def _looks_like_path(incomplete: str) -> bool:
    return incomplete.startswith((".", "~", "/")) or os.sep in incomplete


def _complete_names(ctx: click.Context, table: str, incomplete: str, files: bool) -> list[Any]:
    """Library names (name@version once an @ is typed) starting with `incomplete`; with `files`, the shell's file
    completion when nothing matches or a path is being typed (those options take a file too)."""
    from click.shell_completion import CompletionItem

    if files and _looks_like_path(incomplete):
        return _file_completion(incomplete)
    rows = _library_rows(
        ctx, f"SELECT name, version FROM {table} ORDER BY name, version"
    )  # table: a constant
    labels = (
        [f"{name}@{version}" for name, version in rows]
        if "@" in incomplete
        else list(dict.fromkeys(name for name, _ in rows))
    )
    found = [CompletionItem(label) for label in labels if label.startswith(incomplete)]
    return found or (_file_completion(incomplete) if files else [])


def complete_prompt(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a prompt: the library's prompt names (or a prompt file being typed)."""
    return _complete_names(ctx, "prompts", incomplete, files=True)


def complete_prompt_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a library prompt name only (no file is accepted there)."""
    return _complete_names(ctx, "prompts", incomplete, files=False)


def complete_dataset(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a dataset: the library's dataset names (or a data file being typed)."""
    return _complete_names(ctx, "datasets", incomplete, files=True)


def complete_dataset_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a library dataset name only (no file is accepted there)."""
    return _complete_names(ctx, "datasets", incomplete, files=False)


def complete_run(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a run id: the library's newest runs first, each with its prompt, dataset and status."""
    from click.shell_completion import CompletionItem

    rows = _library_rows(
        ctx,
        "SELECT r.id, p.name || '@' || p.version, d.name || '@' || d.version, r.status "
        "FROM runs r LEFT JOIN prompts p ON p.id = r.prompt_id "
        "LEFT JOIN datasets d ON d.id = r.dataset_id ORDER BY r.created_at DESC, r.rowid DESC LIMIT 200",
    )
    return [
        CompletionItem(run_id, help=f"{prompt} on {dataset}, {status}")
        for run_id, prompt, dataset, status in rows
        if str(run_id).startswith(incomplete)
    ]


# --- prompt, judge and data resolution ----------------------------------------------------------------
def resolve_prompt(library: Library, ref: str) -> FrozenPrompt:
    """A library name[@version], id or id prefix, or an exported prompt file (frozen into the library as is).

    A file's import is reported on stderr: what it became, and what in it was ignored (a server URL).
    """
    path = Path(ref)
    if path.suffix.lower() == ".json" or path.is_file():
        if not path.is_file():
            raise InputError("no such prompt file", file=ref)
        result = library.import_prompt(path)
        for warning in result.warnings:
            click.echo(f"warning: {ref}: {warning}", err=True)
        click.echo(f"{ref}: {result.note}", err=True)
        return result.prompt
    return library.get_prompt(ref)


def parse_judge(ref: str) -> tuple[str, str | None]:
    """'openai:gpt-4o' -> ('openai', 'gpt-4o'); 'local' -> ('local', None); a usage error for anything else."""
    try:
        return judge_parts(ref)
    except ConfigError:
        raise click.BadParameter(f"{ref!r}: use {judge_ref_help()}", param_hint="--judge") from None


def pinned_judge(ref: str) -> str:
    """`--judge` as a run records it: `local:PATH.gguf` with the file's content hash pinned (a changed file is
    refused later); a usage error for a bad reference or a missing file."""
    provider, model = parse_judge(ref)
    try:
        pinned = pinned_model(provider, model)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--judge") from None
    return f"{provider}:{pinned}" if pinned else ref


def planned_judge(
    library: Any,
    frozen: JudgeSettings,
    judge: str | None,
    base_url: str | None,
    mode: str | None = None,
    n: int | None = None,
    temperature: float | None = None,
) -> PlannedJudge:
    """The judge a command will use (`run.plan.plan_judge`: the prompt's settings with the command line's
    overrides, the server named, else the environment's), each metric change warned about on stderr.

    The frozen settings are the metric; an override makes a run that is not comparable item by item
    with runs of the prompt's own settings, so it is allowed, recorded on the run, and warned about.
    """
    from ..run.plan import JudgeChoice, plan_judge

    if judge is not None:
        judge = pinned_judge(judge)
    planned = plan_judge(frozen, JudgeChoice(judge, base_url, mode, n, temperature), library)
    for warning in planned.warnings:
        click.echo(f"warning: {warning}", err=True)
    return planned


score_side_option = click.option(
    "--side",
    type=click.Choice(["dev", "test"]),
    default=None,
    help="On a split dataset: the side to score [default: dev]; the sealed test side only when named here (its "
    "use is recorded).",
)


def pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    """NAME=PATH options (--input, --human) as {NAME: PATH}; a malformed one is a usage error."""
    out = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise click.BadParameter(
                f"expected NAME=PATH (e.g. summary=output), got {value!r}", param_hint=option
            )
        out[name.strip()] = path.strip()
    return out


# Bootstrap resamples of the dataset's groups, as the interval commands take them.
resamples_option = click.option(
    "--resamples",
    type=click.IntRange(100, 20000),
    default=1000,
    show_default=True,
    help="Bootstrap resamples (of the dataset's groups).",
)


def prompt_ref_option(help: str, required: bool = True) -> Callable:
    """--prompt as `prompt_ref`: a library prompt or an exported prompt file, completed from the library."""
    return click.option(
        "--prompt", "prompt_ref", required=required, default=None, shell_complete=complete_prompt, help=help
    )


def data_ref_option(help: str, required: bool = True, library_only: bool = False) -> Callable:
    """--data as `data_ref`: a library dataset (completed from the library), or a data file unless
    `library_only`."""
    complete = complete_dataset_name if library_only else complete_dataset
    return click.option(
        "--data", "data_ref", required=required, default=None, shell_complete=complete, help=help
    )


def data_options(func: Callable) -> Callable:
    """--id and --input NAME=PATH: how a data file's rows map to items (as on `datasets import`)."""
    func = click.option(
        "--input",
        "inputs",
        multiple=True,
        help="For a data file: input field as NAME=PATH, e.g. document=source (repeatable; "
        "default: fields named like the prompt's inputs).",
    )(func)
    return click.option(
        "--id",
        "id_field",
        default="id",
        show_default=True,
        help="For a data file: the item id field (dotted path).",
    )(func)


def file_mapping(id_field: str, inputs: tuple[str, ...]) -> DatasetMapping | None:
    """The mapping --id/--input give (no inputs: the prompt's inputs are looked up), or None for neither."""
    if not inputs and id_field == "id":
        return None
    return DatasetMapping(id=id_field, inputs=pairs(inputs, "--input"))


def data_mapping(path: Path, prompt: FrozenPrompt, id_field: str = "id") -> DatasetMapping:
    """id from `id_field`; the prompt's inputs when every one is a field, else every other top-level string field."""
    first = next((row for _, row in read_rows(path)), None)
    if first is None:
        raise InputError("the file has no rows", file=str(path))
    if lookup(first, id_field, None) is None:
        raise InputError(
            f"every row needs an {id_field!r} field (name another with --id)",
            file=str(path),
            line=1,
            field=id_field,
        )
    wanted = prompt.dimension.inputs
    if all(f in first for f in wanted):
        inputs = {f: f for f in wanted}
    else:
        inputs = {k: k for k, v in first.items() if k != id_field and isinstance(v, str)}
        missing = [f for f in wanted if f not in inputs]
        if missing:
            raise InputError(
                f"the prompt reads {', '.join(wanted)} but rows have no {', '.join(missing)} "
                f"(fields: {', '.join(first)}); map them with --input NAME=PATH",
                file=str(path),
                line=1,
                field=missing[0],
            )
    return DatasetMapping(id=id_field, inputs=inputs)


def resolve_data(
    library: Library, ref: str, prompt: FrozenPrompt, mapping: DatasetMapping | None = None
) -> Dataset:
    """A library dataset name[@version], a CSV/JSONL/JSON file imported as a dataset version, or "-": JSON
    lines on stdin (kept as a dataset named "stdin")."""
    if ref == "-":  # stdin, read into a file so it is imported as any data file is
        with input_path(ref, "stdin.jsonl") as stdin_file:
            return _import_file(library, Path(stdin_file), prompt, mapping)
    path = Path(ref)
    if path.suffix.lower() in DATA_SUFFIXES or path.is_file():
        return _import_file(library, path, prompt, mapping)
    if mapping is not None:
        raise click.UsageError(
            "--id and --input map a data file's fields; a library dataset is mapped already"
        )
    return library.get_dataset(ref)


def _import_file(
    library: Library, path: Path, prompt: FrozenPrompt, mapping: DatasetMapping | None
) -> Dataset:
    """A data file as a dataset version named after it (the version already holding its items, when there is
    one, so a file imported with its ratings keeps them); --id alone still names the id field."""
    if mapping is None or not mapping.inputs:
        mapping = data_mapping(path, prompt, mapping.id if mapping else "id")
    name = path.stem.replace("@", "-") or "data"
    items = read_items(path, mapping)
    same = library.version_with_items(name, items, list(prompt.dimension.inputs))
    if same is not None:
        click.echo(
            f"{path.name}: the items of {same.name}@{same.version} ({same.id[:12]}), scored as that "
            "version (its ratings and groups kept)",
            err=True,
        )
        return same
    return library.get_dataset(library.import_items(name, items, source=str(path), mapping=mapping)["id"])


def resolve_inputs(
    db: str | None,
    prompt_ref: str,
    data_ref: str,
    judge_ref: str | None,
    base_url: str | None,
    mode: str | None,
    n: int | None,
    temperature: float | None,
    mapping: DatasetMapping | None = None,
) -> tuple[Library, FrozenPrompt, JudgeSettings, Dataset]:
    """(library, prompt, settings used, dataset) for a run; overrides of the frozen settings are warned."""
    library = open_library(db)
    prompt = resolve_prompt(library, prompt_ref)
    settings = planned_judge(
        library, prompt.dimension.judge, judge_ref, base_url, mode, n, temperature
    ).settings
    refuse_hopeless(library, settings)
    return library, prompt, settings, resolve_data(library, data_ref, prompt, mapping)


def refuse_hopeless(library: Library, settings: JudgeSettings) -> None:
    """Stop before a run is recorded or paid for when the judge cannot score in these settings at all
    (documented facts, and the latest `geval probe` of this judge on this server)."""
    from ..diagnostics.judge_probe import latest_probe
    from ..errors import ConfigError
    from ..providers.capabilities import preflight

    problems = preflight(settings, latest_probe(library, settings))
    if problems:
        raise ConfigError("; ".join(problems))
