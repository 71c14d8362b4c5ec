"""`geval batch`: score through the providers' batch engines (submit, status, collect) or by hand (prepare)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from prompt_library import open_library

from .common import (
    check_output,
    data_ref_option,
    db_option,
    echo_json,
    json_option,
    judge_options,
    prompt_ref_option,
    resolve_inputs,
    score_side_option,
    workbench_errors,
)
from .score import write_results

if TYPE_CHECKING:
    from ..run.plan import RunPlan


def base_url_option(func):
    """--base-url: your batch endpoint (a proxy, or a test server); keys still come from the environment."""
    return click.option(
        "--base-url",
        default=None,
        help="Send to this server instead of the provider's API (no credentials in the URL).",
    )(func)


def _echo_status(result: dict) -> None:
    counts = result.get("counts") or {}
    done = f" ({counts.get('completed', 0)} of {counts.get('total', 0)} done)" if counts else ""
    click.echo(f"batch {result['batch_id']} for run {result['run_id']}: {result['status']}{done}", err=True)
    summary = result.get("summary")
    if summary:
        click.echo(
            f"collected: {summary['scored']} scored, {summary['failed']} errors, {summary['skipped']} "
            "collected before",
            err=True,
        )
    elif result.get("collected") is False:
        click.echo("not finished yet: run `geval batch collect` again later", err=True)


@click.group("batch")
def batch_group() -> None:
    """Write OpenAI Batch API request files and score the provider's output files.

    \b
    Examples:
      geval batch submit --prompt coherence --data golden --judge openai:gpt-4o-mini
      geval batch status batch_abc123
      geval batch collect batch_abc123 --out results.jsonl
    """


@batch_group.command("prepare")
@prompt_ref_option(help="Library prompt name[@version], or an exported prompt file.")
@data_ref_option(help="Library dataset name[@version], or a CSV/JSONL file with an 'id' field.")
@score_side_option
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False), help="The JSONL request file to write."
)
@judge_options
@db_option
@json_option
@workbench_errors
def prepare_command(
    prompt_ref: str,
    data_ref: str,
    side: str | None,
    out: str,
    judge_ref: str | None,
    mode: str | None,
    n: int | None,
    temperature: float | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Create a run and write its Batch API input file (one line per item and replica); --judge must be openai:MODEL.

    \b
    Examples:
      geval batch prepare --prompt coherence --data golden --judge openai:gpt-4o-mini --out batch.jsonl
      geval batch prepare --prompt coherence --data golden --side test --out test.jsonl   # a recorded use
      geval batch collect output.jsonl errors.jsonl --out results.jsonl    # the provider's files, downloaded
    """
    from ..run.batch import batch_plan, prepare_planned
    from ..run.plan import RunScope

    check_output(out)
    library, prompt, settings, dataset = resolve_inputs(
        db, prompt_ref, data_ref, judge_ref, None, mode, n, temperature
    )
    if settings.mode == "auto":
        click.echo(
            "warning: a batch cannot fall back mid-way: auto asks for logprobs, and items "
            "without them get an error (prepare a sampling batch for those)",
            err=True,
        )
    plan = batch_plan(library, prompt, dataset, settings, RunScope(side=side), file=True)
    _show_plan(plan, as_json)
    result = prepare_planned(library, plan, out)
    if as_json:
        echo_json(result)
        return
    click.echo(f"run {result['run_id']}: {result['requests']} requests written to {result['path']}")
    click.echo(
        "Upload it with purpose 'batch', create a batch for endpoint /v1/chat/completions, and when it "
        "completes run `geval batch collect OUTPUT.jsonl [ERRORS.jsonl]`.",
        err=True,
    )


def _show_plan(plan: RunPlan, as_json: bool) -> None:
    """The plan's warnings and its line (which judge scores what), on stderr before anything is recorded."""
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    if not as_json:
        click.echo(plan.describe(), err=True)


@batch_group.command("submit")
@prompt_ref_option(help="Library prompt name[@version], or an exported prompt file.")
@data_ref_option(help="Library dataset name[@version], or a CSV/JSONL file.")
@score_side_option
@judge_options
@base_url_option
@db_option
@json_option
@workbench_errors
def submit_command(
    prompt_ref: str,
    data_ref: str,
    side: str | None,
    judge_ref: str | None,
    mode: str | None,
    n: int | None,
    temperature: float | None,
    base_url: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Create a run and send its requests to the provider's batch engine (OpenAI Batches, Gemini Batch API).

    \b
    Examples:
      geval batch submit --prompt coherence --data golden --judge openai:gpt-4o-mini
      geval batch submit --prompt coherence --data golden --judge gemini:gemini-2.5-flash --json
      geval batch submit --prompt coherence --data golden --side test    # the sealed side, its use recorded
    """
    from ..run.batch import BATCH_DISCOUNT, batch_plan, run_items
    from ..run.batch_engines import submit_planned
    from ..run.cost import estimate_cost
    from ..run.plan import RunScope

    library, prompt, settings, dataset = resolve_inputs(
        db, prompt_ref, data_ref, judge_ref, base_url, mode, n, temperature
    )
    plan = batch_plan(library, prompt, dataset, settings, RunScope(side=side))
    _show_plan(plan, as_json)
    items = run_items(library, plan.dataset.id, plan.item_ids)
    estimate = estimate_cost(prompt, items, plan.settings, store=library)
    result = submit_planned(library, plan)
    usd = None if estimate["usd"] is None else estimate["usd"] * BATCH_DISCOUNT
    result["estimated_usd"] = usd  # batch requests are billed at half the live price
    if as_json:
        echo_json(result)
        return
    _echo_status(result)
    cost = "unpriced" if usd is None else f"about ${usd:.4f} at the batch discount"
    click.echo(
        f"{result['requests']} requests, {cost}; follow it with `geval batch status {result['batch_id']}`",
        err=True,
    )


@batch_group.command("submit-panel")
@click.argument("panel_ref")
@data_ref_option(help="Library dataset name[@version].", library_only=True)
@score_side_option
@click.option(
    "--member-base-url",
    "base_urls",
    multiple=True,
    help="PROMPT=URL: the server a member's batch goes to (repeatable; default: its provider's API).",
)
@db_option
@json_option
@workbench_errors
def submit_panel_command(
    panel_ref: str, data_ref: str, side: str | None, base_urls: tuple[str, ...], db: str | None, as_json: bool
) -> None:
    """Send each member of panel PANEL_REF to its provider's batch engine, one batch (and run) per member, each
    with the member's own frozen judge. Collect them with `geval batch collect`; `geval panel score` then reuses
    the members' runs and makes no live call for the items the batches answered.

    \b
    Examples:
      geval batch submit-panel trio --data golden
      geval batch submit-panel trio --data golden --member-base-url coherence-mini=https://proxy.example/v1 --json
    """
    from prompt_library import open_library

    from ..providers.registry import check_judge
    from ..run.batch_engines import submit_planned
    from ..run.panel import get_panel, plan_panel
    from .common import pairs

    urls = pairs(base_urls, "--member-base-url")
    with open_library(db) as library:
        panel = get_panel(library, panel_ref)
        dataset = library.get_dataset(data_ref)
        plans = plan_panel(library, panel, dataset.id, urls, side=side)  # a URL naming no member is refused
        for plan in plans:
            plan.require_ready()
            check_judge(plan.settings)  # every member's key and limits before any batch is sent
            _show_plan(plan, as_json)
        results = [{"prompt": plan.prompt.label, **submit_planned(library, plan)} for plan in plans]
    if as_json:
        echo_json({"panel": panel.label, "batches": results})
        return
    for result in results:
        click.echo(
            f"{result['prompt']}: batch {result['batch_id']} (run {result['run_id']}), "
            f"{result['requests']} requests",
            err=True,
        )


@batch_group.command("status")
@click.argument("batch_id")
@base_url_option
@db_option
@json_option
@workbench_errors
def status_command(batch_id: str, base_url: str | None, db: str | None, as_json: bool) -> None:
    """The provider's status of a submitted batch.

    \b
    Examples:
      geval batch status batch_abc123
      geval batch status batch_abc123 --json    # batch_id, run_id, status, counts
    """
    from ..run.batch_engines import batch_status

    result = batch_status(open_library(db), batch_id, base_url)
    result.pop("_batch")
    if as_json:
        echo_json(result)
    else:
        _echo_status(result)


@batch_group.command("collect")
@click.argument("refs", nargs=-1, required=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Results file (default: stdout).")
@base_url_option
@db_option
@json_option
@workbench_errors
def collect_command(
    refs: tuple[str, ...], out: str | None, base_url: str | None, db: str | None, as_json: bool
) -> None:
    """Score a batch into its run, as a live run would: BATCH_ID (downloads its results; idempotent, resumable)
    or Batch API output (and error) files downloaded by hand.

    The results go to --out, else stdout; with BATCH_ID and --json, stdout holds the batch's status as one JSON
    object and no results are written (`geval runs export RUN_ID` writes them).

    \b
    Examples:
      geval batch collect batch_abc123 --out results.jsonl
      geval batch collect output.jsonl errors.jsonl --out results.jsonl
      geval batch collect batch_abc123 --json    # collected when done; prints its status, run_id
    """
    from pathlib import Path

    from ..run.batch import collect_batch
    from ..run.batch_engines import collect_remote

    library = open_library(db)
    if len(refs) == 1 and not Path(refs[0]).is_file():
        result = collect_remote(library, refs[0], base_url)
        if as_json:
            echo_json(result)
        else:
            _echo_status(result)
        if result["collected"] and not as_json:
            write_results(library, result["run_id"], out)
        return
    missing = [r for r in refs if not Path(r).is_file()]
    if missing:
        raise click.BadParameter(f"no such file: {missing[0]}", param_hint="REFS")
    summaries = collect_batch(library, list(refs))
    for number, summary in enumerate(summaries):
        missing_items = library.get_run(summary.run_id).extra.get("batch_missing", 0)
        click.echo(
            f"run {summary.run_id} {summary.status}: {summary.scored} scored, {summary.failed} errors, "
            f"{summary.skipped} collected before, {missing_items} not in these files",
            err=True,
        )
        write_results(library, summary.run_id, out, append=number > 0)
