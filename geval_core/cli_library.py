"""`geval datasets|runs` and the shared library-command helpers; `geval prompts` is in cli_prompts."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from .errors import GEvalError
from .export import export_judgments, write_judgments

_DB_HELP = "Library file (default: $GEVAL_DB, else ./geval.db)."


def library_command(group: click.Group, name: str, lists: bool = False) -> Callable:
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


def echo_json(value: Any) -> None:
    """Print a value as indented JSON (for --json)."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


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


@library_command(datasets, "list", lists=True)
def datasets_list(library: Any, as_json: bool) -> None:
    """List dataset versions."""
    rows = library.list_datasets()
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        row["id"], row["fields"], row["human"] = row["id"][:12], ", ".join(row["fields"]), ", ".join(row["human"])
    table(rows, ["label", "id", "item_count", "fields", "human", "created_at"])


@library_command(datasets, "import")
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


@library_command(datasets, "show", lists=True)
@click.argument("dataset")
@click.option("--items", "limit", default=5, show_default=True, type=click.IntRange(0),
              help="How many items to print (0: none).")
def datasets_show(library: Any, dataset: str, as_json: bool, limit: int) -> None:
    """Show a dataset version (name, name@version or id) and its first items."""
    row = library.get_dataset(dataset)
    items = library.dataset_items(row["id"])[:limit]
    if as_json:
        echo_json({**row, "items": [{"id": i.id, "fields": i.fields, "human": i.human, "group": i.group}
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


@library_command(runs, "list", lists=True)
@click.option("--prompt", default=None, help="Only runs of this prompt (name, name@version or id).")
@click.option("--dataset", default=None, help="Only runs on this dataset (name, name@version or id).")
def runs_list(library: Any, as_json: bool, prompt: str | None, dataset: str | None) -> None:
    """List runs, newest first."""
    rows = library.list_runs(prompt=prompt, dataset=dataset)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        row["judge"] = row["judge"].get("model") if isinstance(row["judge"], dict) else row["judge"]
    table(rows, ["id", "prompt_label", "dataset_label", "judge", "status", "judged", "items_total", "errors",
                  "created_at"])


@library_command(runs, "show", lists=True)
@click.argument("run_id")
@click.option("--judgments", "show_judgments", is_flag=True, help="Also list every item's judgment.")
def runs_show(library: Any, run_id: str, as_json: bool, show_judgments: bool) -> None:
    """Show one run (id or unique prefix): prompt, dataset, judge, status, totals."""
    run = library.get_run(run_id)
    rows = library.judgments(run["id"]) if show_judgments or as_json else []
    if as_json:
        echo_json({**run, "judgments": rows if show_judgments else None})
        return
    for key in ("id", "prompt_label", "dataset_label", "status", "judged", "items_total", "errors",
                "model_version", "input_tokens", "output_tokens", "cost_usd", "created_at", "finished_at"):
        click.echo(f"{key:<14} {run.get(key) if run.get(key) is not None else '-'}")
    click.echo(f"{'judge':<14} {json.dumps(run['judge'])}")
    for row in rows:
        score = "-" if row["score"] is None else f"{row['score']:.3f}"
        click.echo(f"- {row['item_id']}: {score} {row['error'] or ''}".rstrip())


@library_command(runs, "export")
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
    from .cli_prompts import prompts  # imported here: cli_prompts uses this module's helpers

    for command in (prompts, datasets, runs):
        group.add_command(command)
