"""`geval runs`: scoring runs and their judgments (list, show, export)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from prompt_library import Library
from prompt_library.signing import sign_run, signing_key

from ..files.prompt_files import export_judgments, write_judgments
from .common import check_output, echo_json, json_needs_file, library_command, report_written, table, visible


@click.group("runs")
def runs() -> None:
    """Scoring runs and their judgments: list, show, export."""


@library_command(runs, "list", lists=True)
@click.option("--prompt", default=None, help="Only runs of this prompt (name, name@version or id).")
@click.option("--dataset", default=None, help="Only runs on this dataset (name, name@version or id).")
@click.option("--archived", is_flag=True, help="Also list archived runs (hidden by default, never deleted).")
def runs_list(library: Library, as_json: bool, prompt: str | None, dataset: str | None, archived: bool) -> None:
    """List runs, newest first."""
    rows = visible(library.list_runs(prompt=prompt, dataset=dataset), library.archived_ids("run"), archived)
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
def runs_show(library: Library, run_id: str, as_json: bool, show_judgments: bool) -> None:
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


@library_command(runs, "export", lists=True)
@click.argument("run_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="File to write (default: stdout, as JSONL; - is stdout).")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default=None,
              help="Output format (default: from the file suffix, else jsonl).")
@click.option("--sign", is_flag=True, help="Also write OUTPUT.sig.json: the run's digest and OUTPUT's bytes signed with your key "
              "(--key-file or $GEVAL_SIGNING_KEY); `geval verify --check-signature` checks it.")
@click.option("--key-file", type=click.Path(dir_okay=False), default=None, help="The signing key for --sign.")
def runs_export(library: Library, run_id: str, output: str | None, fmt: str | None, sign: bool,
                key_file: str | None, as_json: bool) -> None:
    """Export a run's judgments with each item's group, human ratings and ties, as CSV or JSONL."""
    from ..stats import judgment_rows  # numpy only when exporting

    check_output(output)
    json_needs_file(as_json, output)
    output = None if output == "-" else output  # "-" is stdout
    if sign and output is None:
        raise click.UsageError("--sign writes OUTPUT.sig.json beside the export: name the export with -o")
    key = signing_key(key_file) if sign else None  # before writing anything: a missing key stops here
    rows = judgment_rows(library, run_id)
    if output is None:
        write_judgments(rows, sys.stdout, fmt or "jsonl")
        return
    export_judgments(rows, output, fmt)
    signature = f"{output}.sig.json" if key is not None else None
    if signature is not None:
        Path(signature).write_text(json.dumps(sign_run(library, run_id, key, output), indent=2) + "\n", encoding="utf-8")
    report_written(as_json, {"file": output, "run_id": run_id, "judgments": len(rows), "signature": signature},
                   f"wrote {len(rows)} judgments to {output}"
                   + (f"; the run's signed digest to {signature}" if signature else ""))
