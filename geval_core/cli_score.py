"""`geval score`: run a frozen prompt over a dataset and write one JSON line per item."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import click

from .errors import GEvalError, InputError
from .types import MODES, FrozenPrompt, JudgeSettings

JUDGE_HELP = "local | openai:MODEL | gemini:MODEL (default: the prompt's own judge)"
RESUMABLE = ("running", "cancelled")


def open_db(db: str | None) -> Any:
    """The library at --db ($GEVAL_DB or ./geval.db when not given)."""
    from prompt_library import Library

    return Library(db)


def resolve_prompt(library: Any, ref: str) -> FrozenPrompt:
    """A library name[@version] or id, or an exported prompt file (frozen into the library as is)."""
    path = Path(ref)
    if path.suffix.lower() == ".json" or path.is_file():
        if not path.is_file():
            raise InputError("no such prompt file", file=ref)
        return library.import_prompt(path).prompt
    return library.get_prompt(ref)


def parse_judge(ref: str) -> tuple[str, str | None]:
    """'openai:gpt-4o' -> ('openai', 'gpt-4o'); 'local' -> ('local', None)."""
    provider, _, model = ref.partition(":")
    hosted = provider in ("openai", "gemini")
    # "scripted" is the test judge: accepted, not advertised.
    if not (hosted or provider in ("local", "scripted")) or (hosted and not model):
        raise click.BadParameter(f"{ref!r}: use local, openai:MODEL or gemini:MODEL", param_hint="--judge")
    return provider, model or None


def effective_settings(frozen: JudgeSettings, judge: str | None, base_url: str | None, mode: str | None,
                       n: int | None, temperature: float | None) -> tuple[JudgeSettings, list[str]]:
    """The prompt's settings with the command line's overrides, and a warning for each metric change.

    The frozen settings are the metric; an override makes a run that is not comparable item by item
    with runs of the prompt's own settings, so it is allowed, recorded on the run, and warned about.
    """
    changes: dict[str, Any] = {}
    if judge is not None:
        provider, model = parse_judge(judge)
        changes["provider"] = provider
        changes["model"] = model or (frozen.model if frozen.provider == "local" else JudgeSettings().model)
        if provider != frozen.provider:
            changes["base_url"] = None  # the prompt's server belongs to its own provider
    changes.update({k: v for k, v in (("mode", mode), ("n", n), ("temperature", temperature)) if v is not None})
    if base_url is not None:
        changes["base_url"] = base_url
    try:
        settings = replace(frozen, **changes)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    changed = [f"{name} {getattr(frozen, name)!r} -> {getattr(settings, name)!r}"
               for name in ("provider", "model", "mode", "n", "temperature")
               if getattr(settings, name) != getattr(frozen, name)]
    warnings = [] if not changed else [
        "overriding the prompt's frozen judge settings: " + ", ".join(changed) + ". Scores of this run are "
        "not comparable item by item with runs of the prompt's own settings; the run records what was used."
    ]
    return settings, warnings


def data_mapping(path: Path, prompt: FrozenPrompt) -> Any:
    """id from "id"; the prompt's inputs when every one is a field, else every other top-level string field."""
    from prompt_library import DatasetMapping

    from .datafiles import read_rows

    first = next((row for _, row in read_rows(path)), None)
    if first is None:
        raise InputError("the file has no rows", file=str(path))
    if "id" not in first:
        raise InputError("every row needs an 'id' field", file=str(path), line=1, field="id")
    wanted = prompt.dimension.inputs
    if all(f in first for f in wanted):
        inputs = {f: f for f in wanted}
    else:
        inputs = {k: k for k, v in first.items() if k != "id" and isinstance(v, str)}
        missing = [f for f in wanted if f not in inputs]
        if missing:
            raise InputError(f"the prompt reads {', '.join(wanted)} but rows have no {', '.join(missing)} "
                             f"(fields: {', '.join(first)})", file=str(path), line=1, field=missing[0])
    return DatasetMapping(id="id", inputs=inputs)


def resolve_data(library: Any, ref: str, prompt: FrozenPrompt) -> dict[str, Any]:
    """A library dataset name[@version], or a CSV/JSONL file imported as a dataset version."""
    path = Path(ref)
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json", ".csv", ".tsv") or path.is_file():
        name = path.stem.replace("@", "-") or "data"
        return library.import_dataset(path, name, data_mapping(path, prompt))
    return library.get_dataset(ref)


def resolve_inputs(db: str | None, prompt_ref: str, data_ref: str, judge_ref: str | None,
                   base_url: str | None, mode: str | None, n: int | None, temperature: float | None,
                   ) -> tuple[Any, FrozenPrompt, JudgeSettings, dict[str, Any]]:
    """(library, prompt, settings used, dataset) for a run; overrides of the frozen settings are warned."""
    library = open_db(db)
    prompt = resolve_prompt(library, prompt_ref)
    settings, warnings = effective_settings(prompt.dimension.judge, judge_ref, base_url, mode, n, temperature)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    return library, prompt, settings, resolve_data(library, data_ref, prompt)


def find_run(library: Any, prompt: FrozenPrompt, dataset: dict, settings: JudgeSettings) -> str | None:
    """The newest unfinished run of this prompt, dataset and judge settings: what a restart resumes."""
    judge = asdict(settings)
    for run in library.list_runs(prompt=prompt.id, dataset=dataset["id"]):
        if run["status"] in RESUMABLE and run["judge"] == judge and run.get("item_ids") is None:
            return run["id"]
    return None


def output_line(row: dict[str, Any]) -> dict[str, Any]:
    """One item of the results file: exactly the documented keys.

    "mode" is the mode the item was scored in, so an auto-mode fallback shows as "sampling"; the
    fallback flag, the cache flag and tokens stay in the library (`geval runs export RUN`).
    """
    distribution = {str(k): v for k, v in (row["distribution"] or {}).items()}
    return {
        "id": row["item_id"], "score": row["score"], "raw_score": row["raw_score"],
        "top_score": _number(row["top_score"]), "distribution": distribution,
        "valid_mass": row["valid_mass"], "replies": row["replies"], "parsed": row["parsed"],
        "unparsed": row["unparsed"], "mode": row["mode"], "model": row["model_version"], "error": row["error"],
    }


def _number(value: Any) -> Any:
    # SQLite hands back a whole rating as 3.0; the file says 3 (sampling's first reply may be 3.5).
    return int(value) if isinstance(value, float) and value.is_integer() else value


def write_results(library: Any, run_id: str, out: str | None, append: bool = False) -> None:
    """Every judgment of the run as JSON lines, to --out or stdout."""
    lines = (json.dumps(output_line(r), ensure_ascii=False) + "\n" for r in library.judgments(run_id))
    if out:
        with Path(out).open("a" if append else "w", encoding="utf-8") as handle:
            handle.writelines(lines)
    else:
        sys.stdout.writelines(lines)


def summary_text(summary: Any, run: dict[str, Any]) -> str:
    """The one-paragraph account printed after a run."""
    rate = summary.judged / summary.seconds if summary.seconds else 0.0
    cost = "" if run.get("cost_usd") is None else f", ${run['cost_usd']:.4f}"
    return (f"run {summary.run_id} {summary.status}: {summary.scored} scored, {summary.null_scores} without a "
            f"score, {summary.failed} errors, {summary.cached} from cache, {summary.fallbacks} fell back to "
            f"sampling, {summary.skipped} done before; {summary.judge_calls} judge calls in "
            f"{summary.seconds:.1f}s ({rate:.1f} items/s); tokens {run.get('input_tokens')} in / "
            f"{run.get('output_tokens')} out{cost}")


@click.command("score")
@click.option("--prompt", "prompt_ref", required=True, help="Library prompt name[@version], or an exported prompt file.")
@click.option("--data", "data_ref", required=True, help="Library dataset name[@version], or a CSV/JSONL file with an 'id' field.")
@click.option("--judge", "judge_ref", default=None, help=JUDGE_HELP)
@click.option("--base-url", default=None, help="An OpenAI-compatible server (vLLM, Ollama, llama.cpp) for openai:MODEL.")
@click.option("--mode", type=click.Choice(MODES), default=None, help="Override the prompt's scoring mode.")
@click.option("--n", type=click.IntRange(1, 100), default=None, help="Override the number of replies per item.")
@click.option("--temperature", type=click.FloatRange(0, 2), default=None, help="Override the temperature.")
@click.option("--concurrency", type=click.IntRange(1, 64), default=8, show_default=True, help="Judge calls in flight.")
@click.option("--max-attempts", type=click.IntRange(1, 20), default=5, show_default=True, help="Tries per call.")
@click.option("--timeout", type=click.FloatRange(0.1, 600), default=60.0, show_default=True, help="Seconds per call.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Results file (default: stdout).")
@click.option("--db", type=click.Path(dir_okay=False), default=None, help="Library file (default: $GEVAL_DB or ./geval.db).")
@click.option("--run", "run_id", default=None, help="Resume this run id.")
@click.option("--new-run", is_flag=True, help="Start a new run even when an unfinished one would be resumed.")
@click.option("--no-cache", is_flag=True, help="Ask the judge even for requests answered before.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
def score_command(prompt_ref: str, data_ref: str, judge_ref: str | None, base_url: str | None, mode: str | None,
                  n: int | None, temperature: float | None, concurrency: int, max_attempts: int, timeout: float,
                  out: str | None, db: str | None, run_id: str | None, new_run: bool, no_cache: bool,
                  quiet: bool) -> None:
    """Score a dataset with a frozen prompt; an interrupted run resumes where it stopped."""
    from .providers import get_judge
    from .runner import run_scoring

    try:
        library, prompt, settings, dataset = resolve_inputs(db, prompt_ref, data_ref, judge_ref, base_url, mode,
                                                            n, temperature)
        items = library.dataset_items(dataset["id"])
        run_id = run_id or (None if new_run else find_run(library, prompt, dataset, settings))
        if run_id is None:
            run_id = library.create_run(prompt.id, dataset["id"], settings)
        already = len(library.judged_item_ids(run_id))
        if already and not quiet:
            click.echo(f"resuming run {run_id}: {already} of {len(items)} items judged before", err=True)
        judge = get_judge(settings, timeout=timeout)
        summary = _run_with_bar(run_scoring, prompt, items, judge, library, run_id, settings, concurrency,
                                max_attempts, not no_cache, quiet, already)
    except GEvalError as exc:
        raise click.ClickException(str(exc)) from None
    write_results(library, run_id, out)
    if not quiet:
        click.echo(summary_text(summary, library.get_run(run_id)), err=True)
    if summary.status == "failed":
        raise click.ClickException(summary.error or "the run failed")


def _run_with_bar(run_scoring: Any, prompt: FrozenPrompt, items: list, judge: Any, library: Any, run_id: str,
                  settings: JudgeSettings, concurrency: int, max_attempts: int, use_cache: bool,
                  quiet: bool, already: int) -> Any:
    """run_scoring with a click progress bar on stderr (the results may be going to stdout)."""
    with click.progressbar(length=len(items), label=f"{prompt.label} ", file=sys.stderr,
                           hidden=quiet, show_pos=True) as bar:
        bar.update(already)
        position = [already]

        def progress(done: int, total: int, judgment: dict) -> None:
            bar.update(done - position[0])
            position[0] = done

        try:
            return run_scoring(prompt, items, judge, library, run_id, concurrency=concurrency,
                               on_progress=progress, max_attempts=max_attempts, settings=settings,
                               use_cache=use_cache)
        except KeyboardInterrupt:
            raise click.ClickException(f"interrupted; run the same command again to resume run {run_id}") from None
