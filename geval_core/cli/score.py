"""`geval score`: run a frozen prompt over a dataset and write one JSON line per item."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from prompt_library import Library

from ..judgment import Judgment
from ..records import Run
from ..run.options import RunOptions, RunSummary
from ..run.pacing import Gate
from ..run.results import RESULT_KEYS, OrderedResults, output_line, write_values
from ..run.totals import TALLY_KEY
from ._interrupt import EXIT_INTERRUPTED, stop_on_interrupt
from .common import (
    bounded_option,
    check_output,
    data_options,
    data_ref_option,
    db_option,
    file_mapping,
    judge_options,
    pinned_judge,
    prompt_ref_option,
    resolve_data,
    resolve_prompt,
    score_side_option,
    workbench_errors,
    write_lines,
)

if TYPE_CHECKING:
    from prompt_library import DatasetMapping

    from ..run.plan import JudgeChoice, RunPlan

EXIT_FAILED, EXIT_NO_SCORES = 3, 4
__all__ = [
    "RESULT_KEYS",
    "exit_code",
    "exit_for",
    "output_line",
    "score_command",
    "summary_text",
    "write_results",
]


def write_results(library: Library, run_id: str, out: str | None, append: bool = False) -> None:
    """Every judgment of the run as JSON lines, to --out or stdout, read from the library a page at a time."""
    values = library.iter_judgment_values(run_id)
    if out and out != "-":  # "-" is stdout, as in every Unix tool
        with Path(out).open("a" if append else "w", encoding="utf-8") as handle:
            write_values(handle, values)
    else:
        write_values(sys.stdout, values)


def summary_text(summary: RunSummary, run: Run) -> str:
    """The one-paragraph account printed after a run."""
    rate = summary.judged / summary.seconds if summary.seconds else 0.0
    cost = "" if run.cost_usd is None else f", ${run.cost_usd:.4f}"
    if cost and run.extra.get(
        "cost_upper_bound"
    ):  # cached tokens priced at the full input rate: no cached rate
        cost += " at most"
    cached = (
        f" (of which {run.extra['cached_input_tokens']} cached)"
        if run.extra.get("cached_input_tokens")
        else ""
    )
    floor = f" ({summary.below_floor} below the valid-mass floor)" if summary.below_floor else ""
    return (
        f"run {summary.run_id} {summary.status}: {summary.scored} scored, {summary.null_scores} without a "
        f"score{floor}, {summary.failed} errors, {summary.cached} from cache, {summary.fallbacks} fell back to "
        f"sampling, {summary.skipped} done before; {summary.judge_calls} judge calls in "
        f"{summary.seconds:.1f}s ({rate:.1f} items/s; {summary.setup_seconds:.1f}s more loading the judge); "
        f"tokens {run.input_tokens} in{cached} / "
        f"{run.output_tokens} out{cost}"
    )


@click.command("score")
@prompt_ref_option(
    help="Library prompt name[@version], or an exported prompt file (or --panel).", required=False
)
@click.option(
    "--panel",
    "panel_ref",
    default=None,
    help="Score with a frozen panel of judges instead: one run per member (reused when it exists); each "
    "results row has the panel's score and distribution and every member's score under members.",
)
@click.option(
    "--member-base-url",
    "member_urls",
    multiple=True,
    help="With --panel: PROMPT=URL, the OpenAI-compatible server a member's requests go to (repeatable).",
)
@data_ref_option(help="Library dataset name[@version], or a CSV/JSONL/JSON file.")
@score_side_option
@data_options
@judge_options
@click.option(
    "--base-url",
    default=None,
    help="Your server for this run: an OpenAI-compatible one (vLLM, Ollama, llama.cpp) for openai:MODEL. "
    "Requests and the key go here, never to a URL stored with a prompt or file. No credentials in "
    "the URL: the key comes from OPENAI_API_KEY.",
)
@bounded_option(
    RunOptions,
    "concurrency",
    default=None,
    help="Judge calls in flight [default: 1 for the local judge, which runs one call at a time; else 8].",
)
@bounded_option(RunOptions, "max_attempts", default=5, show_default=True, help="Tries per call.")
@click.option(
    "--timeout", type=click.FloatRange(0.1, 600), default=60.0, show_default=True, help="Seconds per call."
)
@click.option(
    "--rpm", type=click.FloatRange(min=0.1), default=None, help="At most this many requests per minute."
)
@click.option(
    "--tpm",
    type=click.FloatRange(min=1),
    default=None,
    help="At most this many tokens per minute (estimated from the rendered prompts).",
)
@bounded_option(
    RunOptions,
    "retry_cap",
    default=30.0,
    show_default=True,
    help="Longest pause in seconds; a judge asking to wait longer stops the run (resume later).",
)
@bounded_option(
    RunOptions,
    "fail_fast",
    default=5,
    show_default=True,
    help="Stop when the first this many items all fail (0: never).",
)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Results file (default: stdout).")
@db_option
@click.option(
    "--sample",
    "sample",
    type=click.IntRange(min=1),
    default=None,
    help="Score a random sample of about this many items: whole groups when the data has groups (the "
    "figures read per group), else items; a new run of its own.",
)
@click.option("--seed", "sample_seed", type=int, default=None, help="The --sample's draw [default: 0].")
@click.option("--run", "run_id", default=None, help="Resume this run id.")
@click.option("--new-run", is_flag=True, help="Start a new run even when an unfinished one would be resumed.")
@click.option("--no-cache", is_flag=True, help="Ask the judge even for requests answered before.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the run's summary as one JSON object on stdout (run id, status, counts, exit code); "
    "the results then go only to --out FILE (--out - with --json is refused: stdout holds one of "
    "them, never both).",
)
@workbench_errors
def score_command(
    prompt_ref: str,
    data_ref: str,
    judge_ref: str | None,
    base_url: str | None,
    mode: str | None,
    n: int | None,
    temperature: float | None,
    concurrency: int,
    max_attempts: int,
    timeout: float,
    out: str | None,
    db: str | None,
    run_id: str | None,
    new_run: bool,
    no_cache: bool,
    quiet: bool,
    rpm: float | None,
    tpm: float | None,
    retry_cap: float,
    fail_fast: int,
    id_field: str,
    inputs: tuple[str, ...],
    as_json: bool,
    panel_ref: str | None = None,
    member_urls: tuple[str, ...] = (),
    side: str | None = None,
    sample: int | None = None,
    sample_seed: int | None = None,
) -> None:
    """Score a dataset with a frozen prompt (or a panel); an interrupted run resumes where it stopped.

    \b
    Exit codes: 0 the run is done with scores; 1 bad input or settings (nothing was scored);
    2 bad command line; 3 the run stopped as hopeless (the message says why; fix it, then run the
    same command to resume); 4 the run ended with no score; 130 interrupted (run it again to resume);
    141 the output's reader closed it early.

    \b
    Examples:
      geval score --prompt coherence --data sample --out results.jsonl
      geval score --prompt coherence --data mine.csv --id key --input document=source --input summary=output
      geval score --prompt coherence --data golden --judge openai:gpt-4o-mini --out results.jsonl --json
      geval score --prompt coherence --data golden --sample 50 --seed 1    # a first look at 50 items
    """
    from prompt_library import open_library

    from ..run.plan import RunScope, plan_of_run, plan_run, record_run, sample_items

    check_output(out)  # before anything is paid for
    summary_needs_file(as_json, out)
    if (prompt_ref is None) == (panel_ref is None):
        raise click.UsageError("name the prompt to score with (--prompt) or a panel (--panel), one of them")
    choice = judge_choice(judge_ref, base_url, mode, n, temperature)
    if sample is not None and (panel_ref is not None or run_id is not None):
        raise click.UsageError(
            "--sample draws the items of a new run of one prompt: leave out --panel and --run"
        )
    if sample_seed is not None and sample is None:
        raise click.UsageError("--seed draws a --sample: name the sample's size with --sample N")
    if panel_ref is not None:
        _score_panel(
            db, panel_ref, data_ref, member_urls, choice, file_mapping(id_field, inputs), side, out, as_json
        )
        return
    library = open_library(db)
    prompt = resolve_prompt(library, prompt_ref)
    dataset = resolve_data(library, data_ref, prompt, file_mapping(id_field, inputs))
    library.bound_page_cache()  # memory stays flat however long the run
    options = RunOptions(
        max_attempts=max_attempts,
        use_cache=not no_cache,
        rpm=rpm,
        tpm=tpm,
        retry_cap=retry_cap,
        fail_fast=fail_fast,
    )
    if run_id is not None:
        plan = plan_of_run(library, run_id, choice, concurrency=concurrency, options=options)
        if plan.dataset.id != dataset.id:
            raise click.UsageError(
                f"run {plan.run_id} scores {plan.dataset.label}, not {dataset.label}: "
                "name its dataset with --data, or leave out --run"
            )
    else:
        ids = (
            None if sample is None else sample_items(library, prompt, dataset, sample, sample_seed or 0, side)
        )
        plan = plan_run(
            library,
            prompt,
            dataset,
            choice,
            RunScope(side=side, item_ids=ids, new_run=new_run),
            concurrency=concurrency,
            options=options,
        )
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    if not quiet:
        click.echo(plan.describe(), err=True)  # which judge scores what, before anything is sent
    plan = record_run(library, plan)
    assert plan.run_id is not None  # a recorded plan names its run
    if plan.judged_before and not quiet:
        click.echo(
            f"resuming run {plan.run_id}: {plan.judged_before} of {plan.total} items judged before", err=True
        )
    summary = _score_streamed(
        plan, plan.run_id, library, quiet, out, writes=bool(out or not as_json), timeout=timeout
    )
    run = library.get_run(plan.run_id)
    if not quiet:
        click.echo(summary_text(summary, run), err=True)
    scored = scored_in_run(library, run)
    if as_json:
        code = exit_code(summary, scored)
        click.echo(
            json.dumps(
                {
                    **summary.to_dict(),
                    "scored_in_run": scored,
                    "out": out,
                    "exit_code": code,
                    "prompt": prompt.label,
                    "prompt_id": prompt.id,
                    "dataset": plan.dataset.label,
                    "side": plan.side,
                    "judge": plan.judge.describe(),
                    "server": plan.judge.server,
                }
            )
        )
    exit_for(summary, plan.run_id, scored)


def summary_needs_file(as_json: bool, out: str | None) -> None:
    """--json prints the run's summary on stdout: refuse --out - beside it, which would put the results there too
    (a JSON object after the JSON lines, or, for a panel, no results at all)."""
    if as_json and out == "-":
        raise click.UsageError(
            "--json prints the run's summary on stdout, and --out - the results: name a results "
            "file with --out FILE (or leave out --json to stream the results)"
        )


def judge_choice(
    judge_ref: str | None, base_url: str | None, mode: str | None, n: int | None, temperature: float | None
) -> JudgeChoice:
    """The command line's judge options as the plan takes them (a bad --judge is a usage error here)."""
    from ..run.plan import JudgeChoice

    if judge_ref is not None:
        judge_ref = pinned_judge(judge_ref)
    return JudgeChoice(judge_ref, base_url, mode, n, temperature)


def scored_in_run(library: Library, run: Run) -> int:
    """How many of the run's items have a score, over every session: from the totals it keeps."""
    tally = run.extra.get(TALLY_KEY)
    if isinstance(tally, dict) and tally.get("rows") == library.judgment_row_count(run.id):
        return int(tally["scored"])
    return library.scored_count(run.id)


def _score_streamed(
    plan: RunPlan, run_id: str, library: Library, quiet: bool, out: str | None, writes: bool, timeout: float
) -> RunSummary:
    """The planned run over its items read a page at a time; with `writes`, its results (to `out`, else stdout)
    written as judgments commit, in dataset order."""
    if not writes:
        return _run_with_bar(plan, plan.items(library), library, quiet, timeout)
    with _results_handle(out) as handle:
        results = OrderedResults(library, run_id, handle)
        summary = _run_with_bar(
            plan, plan.items(library, on_batch=results.batch_read), library, quiet, timeout, results
        )
        results.close()
    if results.failure is not None:
        raise results.failure  # after the run is finished: a closed pipe exits 141, a full disk says so
    return summary


@contextmanager
def _results_handle(out: str | None) -> Iterator[IO[str]]:
    """The results file, or stdout for none or "-"."""
    if out and out != "-":
        with Path(out).open("w", encoding="utf-8") as handle:
            yield handle
    else:
        yield sys.stdout


def _run_with_bar(
    plan: RunPlan,
    items: Any,
    library: Library,
    quiet: bool,
    timeout: float,
    results: OrderedResults | None = None,
) -> RunSummary:
    """start_run with a click progress bar on stderr (the results may be going to stdout)."""
    from ..run.plan import start_run

    cancel = threading.Event()
    options = plan.options
    gate = Gate(options.concurrency, options.rpm, options.tpm)

    # Off a terminal click prints only the label, a stray "coherence@1" line in a log: no bar there.
    def gate_state(_: int | None) -> str:
        return gate.describe()

    with (
        click.progressbar(
            length=plan.total,
            label=f"{plan.prompt.label} ",
            file=sys.stderr,
            hidden=quiet or not sys.stderr.isatty(),
            show_pos=True,
            item_show_func=gate_state,
        ) as bar,
        stop_on_interrupt(cancel),
    ):
        bar.update(plan.judged_before)
        position = [plan.judged_before]

        def progress(done: int, total: int, judgment: Judgment) -> None:
            if results is not None:
                results.committed(judgment)
            if done > position[0]:
                bar.update(done - position[0])
                position[0] = done

        return start_run(
            library, plan, items=items, on_progress=progress, cancel=cancel, gate=gate, timeout=timeout
        )


def _score_panel(
    db: str | None,
    panel_ref: str,
    data_ref: str,
    member_urls: tuple[str, ...],
    choice: JudgeChoice,
    mapping: DatasetMapping | None,
    side: str | None,
    out: str | None,
    as_json: bool,
) -> None:
    """`geval score --panel`: the panel's rows to --out (or stdout), its summary with the members' alpha."""
    from prompt_library import open_library

    from .panel import panel_line, run_panel

    if any(v is not None for v in (choice.judge, choice.mode, choice.n, choice.temperature)):
        raise click.UsageError(
            "a panel's members keep their own frozen judges: --judge, --mode, --n and "
            "--temperature are for --prompt (freeze a member with the judge you want)"
        )
    with open_library(db) as library:
        result, lines = run_panel(
            library,
            panel_ref,
            data_ref,
            member_urls,
            None,
            base_url=choice.base_url,
            mapping=mapping,
            side=side,
        )
    if (out and out != "-") or not as_json:  # --json alone: the summary is stdout
        write_lines(lines, out)
    if as_json:
        click.echo(json.dumps({**result, "out": out}, ensure_ascii=False))
    else:
        click.echo(panel_line(result), err=True)
    if any(m["status"] != "done" for m in result["member_runs"]):
        raise RunEnded(
            "a member's run did not finish: `geval runs show RUN` says why; run the same command "
            "again to resume it",
            EXIT_FAILED,
        )


def exit_code(summary: RunSummary, scored: int) -> int:
    """The exit code exit_for ends with (0 when the run is done with scores)."""
    if summary.status == "cancelled":
        return EXIT_INTERRUPTED
    if summary.status == "failed":
        return EXIT_FAILED
    return EXIT_NO_SCORES if scored == 0 else 0


def exit_for(summary: RunSummary, run_id: str, scored: int | None = None) -> None:
    """Leave with the documented exit code when the run did not end done with scores; `scored` counts the
    run's scored items over every session, so a re-run of the same state exits as the first run did."""
    code = exit_code(summary, summary.scored if scored is None else scored)  # the one ladder of codes
    if code == EXIT_INTERRUPTED:
        click.echo(f"interrupted; run the same command again to resume run {run_id}", err=True)
        raise SystemExit(code)
    if code == EXIT_FAILED:
        raise RunEnded(summary.error or "the run failed", code)
    if code == EXIT_NO_SCORES:
        raise RunEnded(
            f"run {run_id} scored no item: see the errors with `geval runs show {run_id} --judgments`", code
        )


class RunEnded(click.ClickException):
    """A run that ended without a usable result, with its own exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code
