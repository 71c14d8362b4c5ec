"""`geval align`: disputed dev items, the sealed test side scored once per candidate, and the report with its
interval widened for every candidate evaluated there."""

from __future__ import annotations

from typing import Any

import click

from ..records import Dataset
from .common import (
    complete_dataset_name,
    complete_prompt_name,
    complete_run,
    data_ref_option,
    echo_json,
    library_command,
    note_unsaved,
    resamples_option,
)

__all__ = ["align_group"]


@click.group("align")
def align_group() -> None:
    """Align a prompt with people on a split dataset: dev to tune, the sealed test side once per candidate.

    \b
    Examples:
      geval align dev coherence@2 --data golden    # on a dataset `geval split` made dev and test
      geval align test coherence@2 --data golden
      geval align report coherence@2 --data golden
    """


def _human(library: Any, prompt: Any, dataset: Dataset, human: str | None) -> str:
    name = human or prompt.dimension.name.lower()
    note_unsaved(library, dataset.id, name)
    if name not in dataset.human:  # Rate-page ratings count once saved as a version (the note says so)
        raise click.UsageError(
            f"dataset {dataset.label} has no human rating {name!r} (has: "
            f"{', '.join(dataset.human) or 'none'}): name one with --human"
        )
    return name


@library_command(align_group, "disputed", lists=True)
@click.argument("run_id", shell_complete=complete_run)
@click.option("--human", default=None, help="The human rating (default: the prompt's dimension name).")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="How many items.")
def align_disputed(library: Any, run_id: str, human: str | None, limit: int, as_json: bool) -> None:
    """The dev items of RUN_ID where the judge and people differ most, by the scale point people gave.

    \b
    Examples:
      geval align disputed 1a2b3c --human coherence --limit 10
      geval align disputed 1a2b3c --json
    """
    from ..diagnostics.align import disputed_items
    from ..run.splits import evaluation_ids

    run = library.get_run(run_id)
    prompt = library.get_prompt(run.prompt_id)
    name = _human(library, prompt, library.get_dataset(run.dataset_id), human)
    only, scope = evaluation_ids(library, run.dataset_id, "dev", prompt.dimension.example_ids)
    rows = disputed_items(library, run.id, name, only, limit)
    if as_json:
        echo_json({"run": run.id, "human": name, "scope": scope, "items": rows})
        return
    for row in rows:
        raters = " ".join(f"{k.rsplit('.', 1)[1]}:{v:g}" for k, v in sorted(row["raters"].items()))
        click.echo(
            f"{row['item_id']:<16} people {row['human']:.2f} (point {row['point']}) judge "
            f"{row['score']:.2f} gap {row['gap']:+.2f}  {raters}"
        )


def _side_options(func):
    for option in reversed(
        (
            click.argument("prompt", shell_complete=complete_prompt_name),
            click.option(
                "--data",
                "data_ref",
                required=True,
                shell_complete=complete_dataset_name,
                help="The split library dataset name[@version].",
            ),
            click.option(
                "--judge", "judge_ref", default=None, help="Override the prompt's judge (as for geval score)."
            ),
            click.option(
                "--base-url", default=None, help="Your OpenAI-compatible server for the judge's requests."
            ),
            click.option(
                "--concurrency", type=click.IntRange(1, 64), default=None, help="Judge calls in flight."
            ),
            click.option(
                "--json", "as_json", is_flag=True, help="Print one JSON object (run id, items, candidates)."
            ),
        )
    ):
        func = option(func)
    return func


@library_command(align_group, "dev")
@_side_options
def align_dev(
    library: Any,
    prompt: str,
    data_ref: str,
    judge_ref: str | None,
    base_url: str | None,
    concurrency: int | None,
    as_json: bool,
) -> None:
    """Score PROMPT (frozen) on the dev side of the dataset's split (its example items left out); a finished
    run of the same prompt and settings on those items is reused. Compare runs with `geval compare`.

    \b
    Examples:
      geval align dev coherence@2 --data golden
      geval align dev coherence@2 --data golden --judge openai:gpt-4o-mini --concurrency 16 --json
    """
    _score_side(library, "dev", prompt, data_ref, judge_ref, base_url, concurrency, as_json)


@library_command(align_group, "test")
@_side_options
def align_test(
    library: Any,
    prompt: str,
    data_ref: str,
    judge_ref: str | None,
    base_url: str | None,
    concurrency: int | None,
    as_json: bool,
) -> None:
    """Score PROMPT (frozen) on the sealed test side of the dataset's split, and record the use. A finished
    run of the same prompt and settings on those items is reused, never paid twice; the use is recorded.

    \b
    Examples:
      geval align test coherence@2 --data golden
      geval align test coherence@2 --data golden --base-url http://127.0.0.1:8080/v1 --json
    """
    _score_side(library, "test", prompt, data_ref, judge_ref, base_url, concurrency, as_json)


def _score_side(
    library: Any,
    side: str,
    prompt: str,
    data_ref: str,
    judge_ref: str | None,
    base_url: str | None,
    concurrency: int | None,
    as_json: bool,
) -> None:
    from ..run.plan import RunScope, plan_run, record_run, start_run
    from ..run.splits import sealed_uses
    from .score import judge_choice

    frozen = library.get_prompt(prompt)
    dataset = library.get_dataset(data_ref)
    plan = plan_run(
        library,
        frozen,
        dataset,
        judge_choice(judge_ref, base_url, None, None, None),
        RunScope(side=side),
        concurrency=concurrency,
    )
    split = plan.split
    if split is None:  # before anything is scored: align compares sides of a split
        raise click.UsageError(
            f"dataset {dataset.label} has no split, so no {side} side: `geval split` makes one"
        )
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(plan.describe(), err=True)
    reused = (
        library.find_run(frozen.id, dataset.id, plan.settings, item_ids=list(plan.item_ids or ())) is not None
    )
    plan = record_run(library, plan)  # a use of the test side is recorded here
    summary = start_run(library, plan)
    candidates = len({u["prompt_id"] for u in sealed_uses(library, split)}) if side == "test" else None
    out = {
        "prompt": frozen.label,
        "prompt_id": frozen.id,
        "dataset": dataset.label,
        "split": split["hash"],
        "side": side,
        "run_id": plan.run_id,
        "reused": reused,
        "status": summary.status,
        f"{side}_items": plan.total,
        "judge_calls": summary.judge_calls,
        "candidates_on_test": candidates,
        "judge": plan.judge.describe(),
        "server": plan.judge.server,
    }
    if as_json:
        echo_json(out)
    else:
        recorded = (
            (f"; recorded: {candidates} prompt{'' if candidates == 1 else 's'} evaluated on this test side")
            if side == "test"
            else ""
        )
        click.echo(
            f"{frozen.label} on the {side} side of {dataset.label} ({plan.total} items): run "
            f"{plan.run_id} {summary.status}{recorded}",
            err=True,
        )
    if summary.status != "done":
        raise SystemExit(3)


@library_command(align_group, "report")
@click.argument("prompt", shell_complete=complete_prompt_name)
@data_ref_option(help="The split library dataset name[@version].", library_only=True)
@click.option(
    "--base", default=None, help="The prompt to compare with (default: version 1 of PROMPT's name)."
)
@click.option("--human", default=None, help="The human rating (default: the prompt's dimension name).")
@click.option(
    "--side",
    type=click.Choice(["dev", "test"]),
    default="test",
    show_default=True,
    help="test: the sealed side, with the corrected interval; dev: the tuning side.",
)
@resamples_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def align_report_command(
    library: Any,
    prompt: str,
    data_ref: str,
    base: str | None,
    human: str | None,
    side: str,
    resamples: int,
    as_json: bool,
) -> None:
    """Base vs candidate PROMPT on one side of the split: every figure's paired difference with its 95% interval,
    and on the test side the interval widened for the candidates evaluated there.

    \b
    Examples:
      geval align report coherence@2 --data golden --human coherence
      geval align report coherence@3 --base coherence@2 --data golden --side dev --json
    """
    from ..diagnostics.align import align_report

    candidate = library.get_prompt(prompt)
    base_prompt = library.get_prompt(base) if base else library.get_prompt(candidate.name, 1)
    if base_prompt.id == candidate.id:
        raise click.UsageError(f"{candidate.label} is its own base: name the prompt to compare with, --base")
    dataset = library.get_dataset(data_ref)
    name = _human(library, candidate, dataset, human)
    report = align_report(library, base_prompt.id, candidate.id, dataset.id, name, side, resamples)
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"{report['base']} -> {report['candidate']} on the {side} side of {report['dataset']} "
        f"({report['items']} items in {report['groups']} groups; {report['examples_left_out']} example "
        "items left out)"
    )
    click.echo(f"judges: {report['judges'][0]} -> {report['judges'][1]}")
    if report["different_judges"]:
        click.echo(f"warning: {report['different_judges']}", err=True)
    for name, fig in report["figures"].items():
        click.echo(
            f"{name:<16} {fig['first']:.3f} -> {fig['second']:.3f}: {fig['difference']:+.3f}"
            f"{_interval(fig['interval'])}"
            + (f" corrected{_interval(fig['corrected_interval'])}" if "corrected_interval" in fig else "")
        )
    if side == "test":
        many = "" if report["candidates_evaluated"] == 1 else "s"
        click.echo(
            f"{report['candidates_evaluated']} candidate{many} evaluated on this test side "
            f"({report['test_looks']} looks): corrected level {report['corrected_level']:.4f} "
            f"(Bonferroni); Holm-adjusted p ({report['holm_figure']}): {_p(report['holm_p'])}"
        )
    if report.get("withheld"):
        click.echo(f"interval withheld: {report['withheld']}")


def _interval(interval: list[float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:+.3f}, {interval[1]:+.3f}]"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
