"""`geval batch prepare` / `geval batch collect`: score through the OpenAI Batch API."""

from __future__ import annotations

import click

from prompt_library import open_library

from ._common import db_option, judge_options, resolve_inputs, workbench_errors
from .score import write_results


@click.group("batch")
def batch_group() -> None:
    """Write OpenAI Batch API request files and score the provider's output files."""


@batch_group.command("prepare")
@click.option("--prompt", "prompt_ref", required=True, help="Library prompt name[@version], or an exported prompt file.")
@click.option("--data", "data_ref", required=True, help="Library dataset name[@version], or a CSV/JSONL file with an 'id' field.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The JSONL request file to write.")
@judge_options
@db_option
@workbench_errors
def prepare_command(prompt_ref: str, data_ref: str, out: str, judge_ref: str | None, mode: str | None,
                    n: int | None, temperature: float | None, db: str | None) -> None:
    """Create a run and write its Batch API input file (one line per item and replica); --judge must be openai:MODEL."""
    from ..run.batch import prepare_batch

    library, prompt, settings, dataset = resolve_inputs(db, prompt_ref, data_ref, judge_ref, None, mode, n,
                                                        temperature)
    if settings.mode == "auto":
        click.echo("warning: a batch cannot fall back mid-way: auto asks for logprobs, and items "
                   "without them get an error (prepare a sampling batch for those)", err=True)
    result = prepare_batch(library, prompt, dataset["id"], settings, out)
    click.echo(f"run {result['run_id']}: {result['requests']} requests written to {result['path']}")
    click.echo("Upload it with purpose 'batch', create a batch for endpoint /v1/chat/completions, and when it "
               "completes run `geval batch collect OUTPUT.jsonl [ERRORS.jsonl]`.", err=True)


@batch_group.command("collect")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Results file (default: stdout).")
@db_option
@workbench_errors
def collect_command(files: tuple[str, ...], out: str | None, db: str | None) -> None:
    """Score Batch API output (and error) files into their runs, as a live run would."""
    from ..run.batch import collect_batch

    library = open_library(db)
    summaries = collect_batch(library, list(files))
    for number, summary in enumerate(summaries):
        missing = library.get_run(summary.run_id).get("batch_missing", 0)
        click.echo(f"run {summary.run_id} {summary.status}: {summary.scored} scored, {summary.failed} errors, "
                   f"{summary.skipped} collected before, {missing} not in these files", err=True)
        write_results(library, summary.run_id, out, append=number > 0)
