"""`geval prompts|datasets|runs`: the prompt library from the command line."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .errors import GEvalError
from .export import export_judgments, export_prompt, production_snippet, read_agreement, write_judgments
from .prompts import render
from .types import Dimension

_DB_HELP = "Library file (default: $GEVAL_DB, else ./geval.db)."


def _library_command(group: click.Group, name: str, lists: bool = False) -> Callable:
    """A sub-command with --db (and --json when it lists or shows); GEvalError becomes a clean message."""
    def wrap(func: Callable) -> click.Command:
        @functools.wraps(func)
        def run(db: str | None, **kwargs: Any) -> None:
            from prompt_library import open_library

            try:
                with open_library(db) as library:
                    func(library, **kwargs)
            except GEvalError as exc:
                raise click.ClickException(str(exc)) from None

        command = click.option("--db", type=click.Path(dir_okay=False), default=None, help=_DB_HELP)(run)
        if lists:
            command = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(command)
        return group.command(name)(command)
    return wrap


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        click.echo("(none)")
        return
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


# --- prompts ------------------------------------------------------------------------------------------
@click.group("prompts")
def prompts() -> None:
    """Frozen prompt versions: list, show, freeze, export, import."""


@_library_command(prompts, "list", lists=True)
@click.option("--all-versions", is_flag=True, help="One line per version instead of the latest of each name.")
def prompts_list(library: Any, as_json: bool, all_versions: bool) -> None:
    """List frozen prompts (latest version of each name)."""
    rows = library.list_prompts(latest_only=not all_versions)
    for row in rows:
        row["id"] = row["id"] if as_json else row["id"][:12]
    if as_json:
        _echo_json(rows)
    else:
        _table(rows, ["label", "id", "scale", "inputs", "judge", "mode", "versions", "created_at"])


@_library_command(prompts, "show", lists=True)
@click.argument("prompt")
@click.option("--rendered", is_flag=True, help="Also print the template with the dimension filled in.")
def prompts_show(library: Any, prompt: str, as_json: bool, rendered: bool) -> None:
    """Show one frozen prompt: PROMPT is a name (latest), name@version or a content hash (prefix)."""
    frozen = library.get_prompt(prompt)
    if as_json:
        _echo_json(export_prompt(frozen))
        return
    dim = frozen.dimension
    click.echo(f"{frozen.label}  {frozen.id}\ncreated {frozen.created_at}  judge {dim.judge.judge_id} "
               f"({dim.judge.mode}, n={dim.judge.n}, temperature={dim.judge.temperature})\n")
    click.echo(f"{dim.name} ({dim.scale}): {dim.definition}\n")
    for point in reversed(dim.scale.points):
        click.echo(f"  {point}: {dim.anchors.get(point, '')}")
    click.echo(f"\ninputs: {', '.join(dim.inputs)}\nsteps ({dim.steps_model}):")
    for i, step in enumerate(dim.steps, 1):
        click.echo(f"  {i}. {step}")
    if rendered:
        click.echo("\n" + render(frozen, {f: f"{{{{{f}}}}}" for f in dim.inputs}))


@_library_command(prompts, "freeze")
@click.argument("dimension_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", default=None, help="Library name (default: the dimension name, lower-cased).")
def prompts_freeze(library: Any, dimension_file: str, name: str | None) -> None:
    """Freeze a dimension JSON file (Dimension.to_dict shape) into a new immutable version."""
    try:
        data = json.loads(Path(dimension_file).read_text(encoding="utf-8"))
        dimension = Dimension.from_dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise click.ClickException(f"{dimension_file}: not a dimension JSON file: {exc}") from None
    result = library.freeze(dimension, name=name)
    click.echo(f"{'froze' if result.created else 'already frozen as'} {result.prompt.label} {result.prompt.id}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)


@_library_command(prompts, "export")
@click.argument("prompt")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the export here (default: print it).")
@click.option("--agreement", "agreement_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON file with the agreement measured at freeze time (e.g. `geval agree --json`).")
@click.option("--agreement-run", default=None,
              help="Measure the agreement from this library run of the prompt (needs --human).")
@click.option("--human", "human_field", default=None,
              help="Human rating of the run's dataset for --agreement-run, e.g. coherence.")
@click.option("--snippet", is_flag=True, help="Print the Python lines that load the export and score an item.")
def prompts_export(library: Any, prompt: str, output: str | None, agreement_file: str | None,
                   agreement_run: str | None, human_field: str | None, snippet: bool) -> None:
    """Export a frozen prompt as one self-contained, hash-checked JSON file."""
    frozen = library.get_prompt(prompt)
    agreement = _export_agreement(library, frozen, agreement_file, agreement_run, human_field)
    name = Path(output).name if output else None  # the snippet loads the file by the name it was given
    text = json.dumps(export_prompt(frozen, agreement, name), indent=2, ensure_ascii=False)
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
        click.echo(f"wrote {output} ({frozen.label}, {frozen.id[:12]})", err=True)
    elif not snippet:
        click.echo(text)
    if snippet:
        click.echo(production_snippet(frozen, output))


def _export_agreement(library: Any, frozen: Any, agreement_file: str | None, run_id: str | None,
                      human_field: str | None) -> dict[str, Any] | None:
    """The agreement for an export: from a file, measured from a run of this very prompt, or none."""
    from prompt_library import run_agreement

    if agreement_file and run_id:
        raise click.UsageError("give --agreement or --agreement-run, not both")
    if bool(run_id) != bool(human_field):
        raise click.UsageError("--agreement-run and --human go together: the run and the rating to compare")
    if agreement_file:
        return read_agreement(agreement_file)
    if not run_id:
        return None
    run = library.get_run(run_id)
    if run["prompt_id"] != frozen.id:
        raise click.ClickException(f"run {run['id']} scored {run['prompt_label']}, not {frozen.label}: "
                                   "an export carries the agreement of its own prompt version only")
    return run_agreement(library, run["id"], human_field)


@_library_command(prompts, "import")
@click.argument("export_file", type=click.Path(exists=True, dir_okay=False))
def prompts_import(library: Any, export_file: str) -> None:
    """Import an exported prompt; refused when its content does not match its hash."""
    result = library.import_prompt(export_file)
    click.echo(f"{'imported as' if result.created else 'already in the library as'} {result.prompt.label} "
               f"{result.prompt.id}")


# --- datasets -----------------------------------------------------------------------------------------
@click.group("datasets")
def datasets() -> None:
    """Golden datasets (immutable versions): list, import, show."""


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise click.BadParameter(f"expected NAME=PATH (e.g. summary=output), got {value!r}",
                                     param_hint=option)
        out[name.strip()] = path.strip()
    return out


@_library_command(datasets, "list", lists=True)
def datasets_list(library: Any, as_json: bool) -> None:
    """List dataset versions."""
    rows = library.list_datasets()
    if as_json:
        _echo_json(rows)
        return
    for row in rows:
        row["id"], row["fields"], row["human"] = row["id"][:12], ", ".join(row["fields"]), ", ".join(row["human"])
    _table(rows, ["label", "id", "item_count", "fields", "human", "created_at"])


@_library_command(datasets, "import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", required=True, help="Dataset name; re-importing the same content reuses its version.")
@click.option("--id", "id_field", default="id", show_default=True, help="Item id field (dotted path).")
@click.option("--input", "inputs", multiple=True, required=True,
              help="Input field as NAME=PATH, e.g. document=source (repeat for each field).")
@click.option("--human", "human", multiple=True,
              help="Human rating as NAME=PATH, e.g. coherence=scores.coherence (repeatable).")
@click.option("--group", default=None, help="Group field, e.g. doc_id (for summary-level agreement).")
def datasets_import(library: Any, path: str, name: str, id_field: str, inputs: tuple[str, ...],
                    human: tuple[str, ...], group: str | None) -> None:
    """Import a CSV or JSONL file as a new dataset version; a bad row stops it and nothing is written."""
    from prompt_library import DatasetMapping

    mapping = DatasetMapping(id=id_field, inputs=_pairs(inputs, "--input"), human=_pairs(human, "--human"),
                             group=group)
    row = library.import_dataset(path, name, mapping)
    verb = "imported" if row["created"] else "same content already stored as"
    click.echo(f"{verb} {row['label']} ({row['item_count']} items, {row['id'][:12]})")


@_library_command(datasets, "show", lists=True)
@click.argument("dataset")
@click.option("--items", "limit", default=5, show_default=True, type=click.IntRange(0),
              help="How many items to print (0: none).")
def datasets_show(library: Any, dataset: str, as_json: bool, limit: int) -> None:
    """Show a dataset version (name, name@version or id) and its first items."""
    row = library.get_dataset(dataset)
    items = library.dataset_items(row["id"])[:limit]
    if as_json:
        _echo_json({**row, "items": [{"id": i.id, "fields": i.fields, "human": i.human, "group": i.group}
                                     for i in items]})
        return
    click.echo(f"{row['label']}  {row['id']}\n{row['item_count']} items from {row['source']}, "
               f"created {row['created_at']}\nfields: {', '.join(row['fields'])}\n"
               f"human ratings: {', '.join(row['human']) or 'none'}")
    for item in items:
        preview = " | ".join(f"{k}: {v[:60]!r}" for k, v in item.fields.items())
        click.echo(f"- {item.id} [{item.group or '-'}] {item.human} {preview}")


# --- runs ---------------------------------------------------------------------------------------------
@click.group("runs")
def runs() -> None:
    """Scoring runs and their judgments: list, show, export."""


@_library_command(runs, "list", lists=True)
@click.option("--prompt", default=None, help="Only runs of this prompt (name, name@version or id).")
@click.option("--dataset", default=None, help="Only runs on this dataset (name, name@version or id).")
def runs_list(library: Any, as_json: bool, prompt: str | None, dataset: str | None) -> None:
    """List runs, newest first."""
    rows = library.list_runs(prompt=prompt, dataset=dataset)
    if as_json:
        _echo_json(rows)
        return
    for row in rows:
        row["judge"] = row["judge"].get("model") if isinstance(row["judge"], dict) else row["judge"]
    _table(rows, ["id", "prompt_label", "dataset_label", "judge", "status", "judged", "items_total", "errors",
                  "created_at"])


@_library_command(runs, "show", lists=True)
@click.argument("run_id")
@click.option("--judgments", "show_judgments", is_flag=True, help="Also list every item's judgment.")
def runs_show(library: Any, run_id: str, as_json: bool, show_judgments: bool) -> None:
    """Show one run (id or unique prefix): prompt, dataset, judge, status, totals."""
    run = library.get_run(run_id)
    rows = library.judgments(run["id"]) if show_judgments or as_json else []
    if as_json:
        _echo_json({**run, "judgments": rows if show_judgments else None})
        return
    for key in ("id", "prompt_label", "dataset_label", "status", "judged", "items_total", "errors",
                "model_version", "input_tokens", "output_tokens", "cost_usd", "created_at", "finished_at"):
        click.echo(f"{key:<14} {run.get(key) if run.get(key) is not None else '-'}")
    click.echo(f"{'judge':<14} {json.dumps(run['judge'])}")
    for row in rows:
        score = "-" if row["score"] is None else f"{row['score']:.3f}"
        click.echo(f"- {row['item_id']}: {score} {row['error'] or ''}".rstrip())


@_library_command(runs, "export")
@click.argument("run_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="File to write (default: print JSONL).")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default=None,
              help="Output format (default: from the file suffix, else jsonl).")
def runs_export(library: Any, run_id: str, output: str | None, fmt: str | None) -> None:
    """Export a run's judgments, with each item's group and human ratings, as CSV or JSONL."""
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run["dataset_id"])}
    rows = []
    for row in library.judgments(run["id"]):
        item = items.get(row["item_id"])
        human = {f"human_{k}": v for k, v in (item.human if item else {}).items()}
        rows.append({**row, "group": item.group if item else None, **human})
    if output is None:
        write_judgments(rows, sys.stdout, fmt or "jsonl")
        return
    export_judgments(rows, output, fmt)
    click.echo(f"wrote {len(rows)} judgments to {output}", err=True)


def register(group: click.Group) -> None:
    """Add the library's command groups to the `geval` command."""
    for command in (prompts, datasets, runs):
        group.add_command(command)
