"""`geval score`: run a frozen prompt over a dataset and write one JSON line per item."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click

from prompt_library import Library

from ..judgment import Judgment
from ..prompts.inputs import require_inputs
from ..providers.registry import allowed_concurrency, check_judge, default_concurrency
from ..run.feed import StreamedItems
from ..run.one_item import length_budget, overlong_warning
from ..run.options import RunOptions, RunSummary
from ..run.pacing import Gate
from ..run.results import RESULT_KEYS, OrderedResults, output_line, write_values
from ..run.totals import TALLY_KEY
from ..types import FrozenPrompt, JudgeSettings
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
    write_lines,
)

# A finished run is reported again (its errored items retried), not repeated: --new-run starts another.
RESUMABLE = ("running", "cancelled", "failed", "done")
EXIT_FAILED, EXIT_NO_SCORES = 3, 4
__all__ = ["RESULT_KEYS", "exit_code", "exit_for", "output_line", "score_command", "summary_text", "write_results"]


def write_results(library: Library, run_id: str, out: str | None, append: bool = False) -> None:
    """Every judgment of the run as JSON lines, to --out or stdout, read from the library a page at a time."""
    values = library.iter_judgment_values(run_id)
    if out and out != "-":  # "-" is stdout, as in every Unix tool
        with Path(out).open("a" if append else "w", encoding="utf-8") as handle:
            write_values(handle, values)
    else:
        write_values(sys.stdout, values)


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
@click.option("--prompt", "prompt_ref", default=None,
              help="Library prompt name[@version], or an exported prompt file (or --panel).")
@click.option("--panel", "panel_ref", default=None,
              help="Score with a frozen panel of judges instead: one run per member (reused when it exists); each "
                   "results row has the panel's score and distribution and every member's score under members.")
@click.option("--member-base-url", "member_urls", multiple=True,
              help="With --panel: PROMPT=URL, the OpenAI-compatible server a member's requests go to (repeatable).")
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
                  id_field: str, inputs: tuple[str, ...], as_json: bool, panel_ref: str | None = None,
                  member_urls: tuple[str, ...] = ()) -> None:
    """Score a dataset with a frozen prompt (or a panel); an interrupted run resumes where it stopped.

    \b
    Exit codes: 0 the run is done with scores; 1 bad input or settings (nothing was scored);
    2 bad command line; 3 the run stopped as hopeless (the message says why; fix it, then run the
    same command to resume); 4 the run ended with no score; 130 interrupted (run it again to resume);
    141 the output's reader closed it early.
    """
    from ..providers import get_judge
    from ..providers.on_demand import JudgeOnDemand

    check_output(out)  # before anything is paid for
    if (prompt_ref is None) == (panel_ref is None):
        raise click.UsageError("name the prompt to score with (--prompt) or a panel (--panel), one of them")
    if panel_ref is not None:
        _score_panel(db, panel_ref, data_ref, member_urls, out, as_json)
        return
    library, prompt, settings, dataset = resolve_inputs(db, prompt_ref, data_ref, judge_ref, base_url, mode,
                                                        n, temperature, file_mapping(id_field, inputs))
    check_judge(settings)  # before a run is recorded: a run without a key would stay "running" for good
    library.bound_page_cache()  # memory stays flat however long the run
    concurrency, lowered = allowed_concurrency(settings, concurrency or default_concurrency(settings))
    if lowered:
        click.echo(f"warning: {lowered}", err=True)
    check_dataset(library, prompt, settings, dataset)  # before a run is recorded or paid for
    if run_id is None:
        run_id = (library.create_run(prompt.id, dataset["id"], settings) if new_run else
                  library.find_or_create_run(prompt.id, dataset["id"], settings, RESUMABLE)[0])
    run = library.get_run(run_id)
    already = library.judged_count(run["id"])
    if already and not quiet:
        click.echo(f"resuming run {run_id}: {already} of {dataset['item_count']} items judged before", err=True)
    # Made at the first request: a re-run of a finished run, or one answered from the cache, needs no SDK.
    judge = JudgeOnDemand(settings.provider, lambda: get_judge(settings, timeout=timeout))
    options = RunOptions(settings=settings, concurrency=concurrency, max_attempts=max_attempts,
                         use_cache=not no_cache, rpm=rpm, tpm=tpm, retry_cap=retry_cap, fail_fast=fail_fast)
    summary = _score_streamed(prompt, dataset, run, judge, library, options, quiet, already, out,
                              writes=bool(out or not as_json))  # --json alone: the results go nowhere
    run = library.get_run(run_id)
    if not quiet:
        click.echo(summary_text(summary, run), err=True)
    scored = scored_in_run(library, run)
    if as_json:
        code = exit_code(summary, scored)
        click.echo(json.dumps({**summary.to_dict(), "scored_in_run": scored, "out": out, "exit_code": code,
                               "prompt": prompt.label, "prompt_id": prompt.id, "dataset": dataset["label"]}))
    exit_for(summary, run_id, scored)


def check_dataset(library: Library, prompt: FrozenPrompt, settings: JudgeSettings, dataset: dict[str, Any]) -> None:
    """Refuse a dataset lacking the prompt's inputs, and warn of items too long for the judge, without reading
    its items into memory (SQLite answers both from the stored rows)."""
    lacking = library.first_item_without(dataset["id"], prompt.dimension.inputs)
    if lacking is not None:
        require_inputs(prompt, [lacking], f"dataset {dataset['label']}")
    budget = length_budget(prompt, settings)
    if budget is not None:
        window, uses, chars = budget
        too_long = overlong_warning(window, library.item_ids_over(dataset["id"], uses, chars), dataset["item_count"])
        if too_long:
            click.echo(f"warning: {too_long}", err=True)


def scored_in_run(library: Library, run: dict[str, Any]) -> int:
    """How many of the run's items have a score, over every session: from the totals it keeps."""
    tally = run.get(TALLY_KEY)
    if isinstance(tally, dict) and tally.get("rows") == library.judgment_row_count(run["id"]):
        return int(tally["scored"])
    return library.scored_count(run["id"])


def _score_streamed(prompt: FrozenPrompt, dataset: dict[str, Any], run: dict[str, Any], judge: Any,
                    library: Library, options: RunOptions, quiet: bool, already: int, out: str | None,
                    writes: bool) -> RunSummary:
    """The run over the dataset read a page at a time; with `writes`, its results (to `out`, else stdout)
    written as judgments commit."""
    total = dataset["item_count"]
    if run["dataset_id"] != dataset["id"]:  # --run names a run of another dataset: a plain stream of its items
        summary = _run_with_bar(prompt, library.iter_dataset_items(dataset["id"]), total, judge, library,
                                run["id"], options, quiet, already)
        if writes:
            write_results(library, run["id"], out)
        return summary
    if not writes:
        items = StreamedItems(library.iter_dataset_items(dataset["id"]), total, already)
        return _run_with_bar(prompt, items, total, judge, library, run["id"], options, quiet, already)
    with _results_handle(out) as handle:
        results = OrderedResults(library, run["id"], handle)
        items = StreamedItems(library.iter_dataset_items(dataset["id"]), total, already, on_batch=results.batch_read)
        summary = _run_with_bar(prompt, items, total, judge, library, run["id"], options, quiet, already, results)
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


def _run_with_bar(prompt: FrozenPrompt, items: Any, total: int, judge: Any, library: Library, run_id: str,
                  options: RunOptions, quiet: bool, already: int,
                  results: OrderedResults | None = None) -> RunSummary:
    """run_scoring with a click progress bar on stderr (the results may be going to stdout)."""
    from ..run.runner import run_scoring

    cancel = threading.Event()
    gate = Gate(options.concurrency, options.rpm, options.tpm)
    # Off a terminal click prints only the label, a stray "coherence@1" line in a log: no bar there.
    with click.progressbar(length=total, label=f"{prompt.label} ", file=sys.stderr,
                           hidden=quiet or not sys.stderr.isatty(),
                           show_pos=True, item_show_func=lambda _: gate.describe()) as bar, stop_on_interrupt(cancel):
        bar.update(already)
        position = [already]

        def progress(done: int, total: int, judgment: Judgment) -> None:
            if results is not None:
                results.committed(judgment)
            if done > position[0]:
                bar.update(done - position[0])
                position[0] = done

        return run_scoring(prompt, items, judge, library, run_id, options, on_progress=progress, cancel=cancel,
                           gate=gate)


def _score_panel(db: str | None, panel_ref: str, data_ref: str, member_urls: tuple[str, ...], out: str | None,
                 as_json: bool) -> None:
    """`geval score --panel`: the panel's rows to --out (or stdout), its summary with the members' alpha."""
    from prompt_library import open_library

    from .panel import panel_line, run_panel

    with open_library(db) as library:
        result, lines = run_panel(library, panel_ref, data_ref, member_urls, None)
    if (out and out != "-") or not as_json:  # --json alone: the summary is stdout
        write_lines(lines, out)
    if as_json:
        click.echo(json.dumps({**result, "out": out}, ensure_ascii=False))
    else:
        click.echo(panel_line(result), err=True)
    if any(m["status"] != "done" for m in result["member_runs"]):
        raise RunEnded("a member's run did not finish: `geval runs show RUN` says why; run the same command "
                       "again to resume it", EXIT_FAILED)


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
