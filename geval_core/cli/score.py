"""`geval score`: run a frozen prompt over a dataset and write one JSON line per item."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import click

from prompt_library import Library

from ..judgment import Judgment
from ..prompts.inputs import require_inputs
from ..providers.registry import allowed_concurrency, check_judge, default_concurrency
from ..run.one_item import overlong_items, overlong_warning
from ..run.options import RunOptions, RunSummary
from ..run.pacing import Gate
from ..types import FrozenPrompt
from ._interrupt import EXIT_INTERRUPTED, stop_on_interrupt
from .common import (
    bounded_option,
    check_output,
    data_options,
    db_option,
    file_mapping,
    judge_options,
    resolve_inputs,
    workbench_errors,
)

# A finished run is reported again (its errored items retried), not repeated: --new-run starts another.
RESUMABLE = ("running", "cancelled", "failed", "done")
EXIT_FAILED, EXIT_NO_SCORES = 3, 4
# The results file names the item "id" (what `geval agree --id-field` expects); the rest are Judgment's fields.
RESULT_KEYS = ("id", *Judgment.columns()[1:])


def output_line(row: dict[str, Any]) -> dict[str, Any]:
    """One item of the results file: the judgment's fields, the item id as "id".

    "mode" is the mode the item was scored in, so an auto-mode fallback shows as "sampling".
    """
    line = {"id": row["item_id"], **{k: row.get(k) for k in RESULT_KEYS[1:]}}
    line["distribution"] = {str(k): v for k, v in (row.get("distribution") or {}).items()}
    for key in ("top_rating", "first_rating"):
        line[key] = _as_written(line[key])
    return line


def _as_written(value: Any) -> Any:
    # SQLite hands back a whole rating as 3.0; the file says 3 (sampling's first reply may be 3.5).
    return int(value) if isinstance(value, float) and value.is_integer() else value


def write_results(library: Library, run_id: str, out: str | None, append: bool = False) -> None:
    """Every judgment of the run as JSON lines, to --out or stdout."""
    lines = (json.dumps(output_line(r), ensure_ascii=False) + "\n" for r in library.judgments(run_id))
    if out and out != "-":  # "-" is stdout, as in every Unix tool
        with Path(out).open("a" if append else "w", encoding="utf-8") as handle:
            handle.writelines(lines)
    else:
        sys.stdout.writelines(lines)


def summary_text(summary: RunSummary, run: dict[str, Any]) -> str:
    """The one-paragraph account printed after a run."""
    rate = summary.judged / summary.seconds if summary.seconds else 0.0
    cost = "" if run.get("cost_usd") is None else f", ${run['cost_usd']:.4f}"
    floor = f" ({summary.below_floor} below the valid-mass floor)" if summary.below_floor else ""
    return (f"run {summary.run_id} {summary.status}: {summary.scored} scored, {summary.null_scores} without a "
            f"score{floor}, {summary.failed} errors, {summary.cached} from cache, {summary.fallbacks} fell back to "
            f"sampling, {summary.skipped} done before; {summary.judge_calls} judge calls in "
            f"{summary.seconds:.1f}s ({rate:.1f} items/s; {summary.setup_seconds:.1f}s more loading the judge); "
            f"tokens {run.get('input_tokens')} in / "
            f"{run.get('output_tokens')} out{cost}")


@click.command("score")
@click.option("--prompt", "prompt_ref", required=True, help="Library prompt name[@version], or an exported prompt file.")
@click.option("--data", "data_ref", required=True, help="Library dataset name[@version], or a CSV/JSONL/JSON file.")
@data_options
@judge_options
@click.option("--base-url", default=None,
              help="Your server for this run: an OpenAI-compatible one (vLLM, Ollama, llama.cpp) for openai:MODEL. "
                   "Requests and the key go here, never to a URL stored with a prompt or file. No credentials in "
                   "the URL: the key comes from OPENAI_API_KEY.")
@bounded_option(RunOptions, "concurrency", default=None,
                help="Judge calls in flight [default: 1 for the local judge, which runs one call at a time; else 8].")
@bounded_option(RunOptions, "max_attempts", default=5, show_default=True, help="Tries per call.")
@click.option("--timeout", type=click.FloatRange(0.1, 600), default=60.0, show_default=True, help="Seconds per call.")
@click.option("--rpm", type=click.FloatRange(min=0.1), default=None, help="At most this many requests per minute.")
@click.option("--tpm", type=click.FloatRange(min=1), default=None,
              help="At most this many tokens per minute (estimated from the rendered prompts).")
@bounded_option(RunOptions, "retry_cap", default=30.0, show_default=True,
                help="Longest pause in seconds; a judge asking to wait longer stops the run (resume later).")
@bounded_option(RunOptions, "fail_fast", default=5, show_default=True,
                help="Stop when the first this many items all fail (0: never).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Results file (default: stdout).")
@db_option
@click.option("--run", "run_id", default=None, help="Resume this run id.")
@click.option("--new-run", is_flag=True, help="Start a new run even when an unfinished one would be resumed.")
@click.option("--no-cache", is_flag=True, help="Ask the judge even for requests answered before.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the run's summary as one JSON object on stdout (run id, status, counts, exit code); "
                   "the results then go only to --out.")
@workbench_errors
def score_command(prompt_ref: str, data_ref: str, judge_ref: str | None, base_url: str | None, mode: str | None,
                  n: int | None, temperature: float | None, concurrency: int, max_attempts: int, timeout: float,
                  out: str | None, db: str | None, run_id: str | None, new_run: bool, no_cache: bool,
                  quiet: bool, rpm: float | None, tpm: float | None, retry_cap: float, fail_fast: int,
                  id_field: str, inputs: tuple[str, ...], as_json: bool) -> None:
    """Score a dataset with a frozen prompt; an interrupted run resumes where it stopped.

    \b
    Exit codes: 0 the run is done with scores; 1 bad input or settings (nothing was scored);
    2 bad command line; 3 the run stopped as hopeless (the message says why; fix it, then run the
    same command to resume); 4 the run ended with no score; 130 interrupted (run it again to resume);
    141 the output's reader closed it early.
    """
    from ..providers import get_judge
    from ..providers.on_demand import JudgeOnDemand

    check_output(out)  # before anything is paid for
    library, prompt, settings, dataset = resolve_inputs(db, prompt_ref, data_ref, judge_ref, base_url, mode,
                                                        n, temperature, file_mapping(id_field, inputs))
    check_judge(settings)  # before a run is recorded: a run without a key would stay "running" for good
    concurrency, lowered = allowed_concurrency(settings, concurrency or default_concurrency(settings))
    if lowered:
        click.echo(f"warning: {lowered}", err=True)
    items = library.dataset_items(dataset["id"])
    require_inputs(prompt, items, f"dataset {dataset['label']}")  # before a run is recorded or paid for
    too_long = overlong_warning(*overlong_items(prompt, items, settings), len(items))
    if too_long:
        click.echo(f"warning: {too_long}", err=True)
    if run_id is None:
        run_id = (library.create_run(prompt.id, dataset["id"], settings) if new_run else
                  library.find_or_create_run(prompt.id, dataset["id"], settings, RESUMABLE)[0])
    already = len(library.judged_item_ids(run_id))
    if already and not quiet:
        click.echo(f"resuming run {run_id}: {already} of {len(items)} items judged before", err=True)
    # Made at the first request: a re-run of a finished run, or one answered from the cache, needs no SDK.
    judge = JudgeOnDemand(settings.provider, lambda: get_judge(settings, timeout=timeout))
    options = RunOptions(settings=settings, concurrency=concurrency, max_attempts=max_attempts,
                         use_cache=not no_cache, rpm=rpm, tpm=tpm, retry_cap=retry_cap, fail_fast=fail_fast)
    summary = _run_with_bar(prompt, items, judge, library, run_id, options, quiet, already)
    if out or not as_json:
        write_results(library, run_id, out)
    if not quiet:
        click.echo(summary_text(summary, library.get_run(run_id)), err=True)
    scored = library.scored_count(run_id)
    if as_json:
        code = exit_code(summary, scored)
        click.echo(json.dumps({**summary.to_dict(), "scored_in_run": scored, "out": out, "exit_code": code,
                               "prompt": prompt.label, "prompt_id": prompt.id, "dataset": dataset["label"]}))
    exit_for(summary, run_id, scored)


def _run_with_bar(prompt: FrozenPrompt, items: list, judge: Any, library: Library, run_id: str,
                  options: RunOptions, quiet: bool, already: int) -> RunSummary:
    """run_scoring with a click progress bar on stderr (the results may be going to stdout)."""
    from ..run.runner import run_scoring

    cancel = threading.Event()
    gate = Gate(options.concurrency, options.rpm, options.tpm)
    # Off a terminal click prints only the label, a stray "coherence@1" line in a log: no bar there.
    with click.progressbar(length=len(items), label=f"{prompt.label} ", file=sys.stderr,
                           hidden=quiet or not sys.stderr.isatty(),
                           show_pos=True, item_show_func=lambda _: gate.describe()) as bar, stop_on_interrupt(cancel):
        bar.update(already)
        position = [already]

        def progress(done: int, total: int, judgment: Judgment) -> None:
            bar.update(done - position[0])
            position[0] = done

        return run_scoring(prompt, items, judge, library, run_id, options, on_progress=progress, cancel=cancel,
                           gate=gate)


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
    if summary.status == "cancelled":
        click.echo(f"interrupted; run the same command again to resume run {run_id}", err=True)
        raise SystemExit(EXIT_INTERRUPTED)
    if summary.status == "failed":
        raise RunEnded(summary.error or "the run failed", EXIT_FAILED)
    if (summary.scored if scored is None else scored) == 0:
        raise RunEnded(f"run {run_id} scored no item: see the errors with `geval runs show {run_id} "
                       "--judgments`", EXIT_NO_SCORES)


class RunEnded(click.ClickException):
    """A run that ended without a usable result, with its own exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code
