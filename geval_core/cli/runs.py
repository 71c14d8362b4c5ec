"""`geval runs`: scoring runs and their judgments (list, show, export)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from prompt_library import Library
from prompt_library.signing import KEY_VARIABLE, sign_run, signing_key

from ..files.prompt_files import export_judgments, write_judgments
from ..records import Run
from .common import (
    check_output,
    complete_dataset_name,
    complete_prompt_name,
    complete_run,
    echo_json,
    json_needs_file,
    library_command,
    report_written,
    table,
    visible,
)

side_option = click.option(
    "--side",
    type=click.Choice(["dev", "test"]),
    default="dev",
    show_default=True,
    help="On a split dataset: the items of the dev side, or of the sealed test side (the read is recorded as a "
    "use of the test side for the run's prompt, and `geval align report` counts it).",
)


def _sealed(library: Library, run: Run, side: str, read: str) -> tuple[Any, dict[str, Any]]:
    """(the store to read the run's items through, the scope), the seal's note on stderr when it left some out."""
    from ..run.splits import sealed_note, sealed_run

    view, scope = sealed_run(library, run, side, read)
    note = sealed_note(scope)
    if note:
        click.echo(f"run {run.id}: {note}", err=True)
    return view, scope


@click.group("runs")
def runs() -> None:
    """Scoring runs and their judgments: list, show, export.

    \b
    Examples:
      geval runs list --prompt coherence
      geval runs show 1a2b3c --judgments
      geval runs export 1a2b3c -o judgments.csv
    """


@library_command(runs, "list", lists=True)
@click.option(
    "--prompt",
    default=None,
    shell_complete=complete_prompt_name,
    help="Only runs of this prompt (name, name@version or id).",
)
@click.option(
    "--dataset",
    default=None,
    shell_complete=complete_dataset_name,
    help="Only runs on this dataset (name, name@version or id).",
)
@click.option("--archived", is_flag=True, help="Also list archived runs (hidden by default, never deleted).")
def runs_list(
    library: Library, as_json: bool, prompt: str | None, dataset: str | None, archived: bool
) -> None:
    """List runs, newest first.

    \b
    Examples:
      geval runs list
      geval runs list --prompt coherence --dataset golden --json
    """
    runs = library.list_runs(prompt=prompt, dataset=dataset)
    if as_json:
        echo_json(visible([r.as_dict() for r in runs], library.archived_ids("run"), archived))
        return
    from ..run.plan import judge_label

    # provider:model at its server: the same model at two servers is two judges
    labelled = [{**r.as_dict(), "judge": judge_label(r.judge), "for": r.purpose or "scoring"} for r in runs]
    table(
        visible(labelled, library.archived_ids("run"), archived),
        [
            "id",
            "prompt_label",
            "dataset_label",
            "judge",
            "status",
            "judged",
            "items_total",
            "errors",
            "for",
            "created_at",
        ],
    )


@library_command(runs, "show", lists=True)
@click.argument("run_id", shell_complete=complete_run)
@click.option("--judgments", "show_judgments", is_flag=True, help="Also list every item's judgment.")
@side_option
def runs_show(library: Library, run_id: str, as_json: bool, show_judgments: bool, side: str) -> None:
    """Show one run (id or unique prefix): prompt, dataset, judge, status, totals.

    \b
    Examples:
      geval runs show 1a2b3c
      geval runs show 1a2b3c --judgments --json
    """
    if side == "test" and not show_judgments:
        raise click.UsageError("--side test chooses the judgments --judgments lists: give both")
    run = library.get_run(run_id)
    rows = _sealed(library, run, side, "runs show")[0].judgments(run.id) if show_judgments else []
    shown = run.as_dict()
    if as_json:
        echo_json({**shown, "judgments": rows if show_judgments else None})
        return
    for key in (
        "id",
        "prompt_label",
        "dataset_label",
        "status",
        "judged",
        "items_total",
        "errors",
        "model_version",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "created_at",
        "finished_at",
    ):
        click.echo(f"{key:<14} {shown.get(key) if shown.get(key) is not None else '-'}")
    click.echo(f"{'judge':<14} {json.dumps(shown['judge'])}")
    for row in rows:
        score = "-" if row["score"] is None else f"{row['score']:.3f}"
        click.echo(f"- {row['item_id']}: {score} {row['error'] or ''}".rstrip())


@library_command(runs, "export", lists=True)
@click.argument("run_id", shell_complete=complete_run)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="File to write (default: stdout, as JSONL; - is stdout).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl"]),
    default=None,
    help="Output format (default: from the file suffix, else jsonl).",
)
@click.option(
    "--sign",
    is_flag=True,
    help="Also write OUTPUT.sig.json: the run's digest and OUTPUT's bytes signed with your key "
    "(--key-file or $GEVAL_SIGNING_KEY); `geval verify --check-signature` checks it.",
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False),
    default=None,
    help=f"The signing key for --sign (default: the key in ${KEY_VARIABLE} itself, not a file name).",
)
@side_option
def runs_export(
    library: Library,
    run_id: str,
    output: str | None,
    fmt: str | None,
    sign: bool,
    key_file: str | None,
    side: str,
    as_json: bool,
) -> None:
    """Export a run's judgments with each item's group, human ratings and ties, as CSV or JSONL.

    On a split dataset the export holds the dev side's items unless --side test asks for the sealed ones.

    \b
    Examples:
      geval runs export 1a2b3c -o judgments.csv
      geval runs export 1a2b3c -o judgments.jsonl --sign --key-file signing.key --json
      geval runs export 1a2b3c --format csv -o -    # to stdout
    """
    from ..stats import judgment_rows  # numpy only when exporting

    check_output(output)
    json_needs_file(as_json, output)
    output = None if output == "-" else output  # "-" is stdout
    if sign and output is None:
        raise click.UsageError("--sign writes OUTPUT.sig.json beside the export: name the export with -o")
    key = signing_key(key_file) if sign else None  # before writing anything: a missing key stops here
    run = library.get_run(run_id)
    view, scope = _sealed(library, run, side, "runs export")
    rows = judgment_rows(view, run.id)
    if output is None:
        write_judgments(rows, sys.stdout, fmt or "jsonl")
        return
    export_judgments(rows, output, fmt)
    signature = f"{output}.sig.json" if key is not None else None
    if signature is not None and key is not None:
        Path(signature).write_text(
            json.dumps(sign_run(library, run_id, key, output), indent=2) + "\n", encoding="utf-8"
        )
    split = {"side": scope["side"], "withheld": scope["withheld"]} if scope["side"] else {}
    report_written(
        as_json,
        {"file": output, "run_id": run.id, "judgments": len(rows), "signature": signature, **split},
        f"wrote {len(rows)} judgments to {output}"
        + (f"; the run's signed digest to {signature}" if signature else ""),
    )
