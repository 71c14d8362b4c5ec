"""`geval stability`: score a sample K times before freezing and report how often ratings change."""

from __future__ import annotations

import click

from prompt_library import Library, open_library

from ..diagnostics.stability import StabilityRun, draft_prompt, run_stability
from ..errors import NotFoundError
from ..providers.registry import default_concurrency
from ..types import FrozenPrompt
from .common import (
    data_options,
    data_ref_option,
    db_option,
    echo_json,
    file_mapping,
    json_option,
    judge_options,
    planned_judge,
    prompt_ref_option,
    refuse_hopeless,
    resolve_data,
    resolve_prompt,
    table,
    workbench_errors,
)


def _draft(library: Library, ref: str) -> FrozenPrompt:
    """A draft by id or name (the newest draft of that name), as an in-memory prompt."""
    if ref.isdigit():
        return draft_prompt(library.get_draft(int(ref)), f"draft-{ref}")
    drafts = library.list_drafts()
    for row in drafts:
        if row["name"].strip().lower() == ref.strip().lower():
            return draft_prompt(library.get_draft(row["id"]), f"draft-{row['id']}")
    known = ", ".join(f"{r['id']} ({r['name']})" for r in drafts) or "none"
    raise NotFoundError(f"no draft {ref!r}; drafts: {known}")


def prompt_or_draft(library: Library, ref: str) -> tuple[FrozenPrompt, bool]:
    """(prompt, frozen): draft:ID or draft:NAME, else a frozen prompt, else a draft of that name or id."""
    kind, sep, rest = ref.partition(":")
    if sep and kind.lower() == "draft":
        return _draft(library, rest), False
    try:
        return resolve_prompt(library, ref), True
    except NotFoundError as exc:
        try:
            return _draft(library, ref), False
        except NotFoundError:
            raise exc from None


def _print(result: StabilityRun) -> None:
    report = result.report
    how = "steps regenerated each repeat, " if result.regenerate_steps else ""
    click.echo(
        f"{result.prompt}: {report.repeats} repeats of {report.items} items ({how}{result.mode} mode, "
        f"temperature {result.temperature})"
    )
    rows = [
        {
            "id": i.id,
            "ratings": " ".join("-" if r is None else f"{r:g}" for r in i.ratings),
            "flip_rate": "n/a" if i.flip_rate is None else f"{i.flip_rate:.2f}",
            "sd": "n/a" if i.sd is None else f"{i.sd:.3f}",
            "range": "n/a" if i.range is None else f"{i.range:.3f}",
        }
        for i in report.per_item
    ]
    table(rows, ["id", "ratings", "flip_rate", "sd", "range"])
    for n, steps in enumerate(result.steps, 1):
        click.echo(f"steps of repeat {n}: " + " | ".join(steps))
    for failure in result.failures:
        click.echo(f"no steps: {failure}")
    if result.run_ids:
        click.echo(f"runs: {', '.join(result.run_ids)}")
    click.echo(report.summary())


@click.command("stability")
@prompt_ref_option(
    help="A frozen prompt name[@version] or id, or a draft: draft:ID or draft:NAME (a name no frozen "
    "prompt has is looked up among the drafts)."
)
@data_ref_option(help="Library dataset name[@version], or a CSV/JSONL/JSON file.")
@data_options
@click.option(
    "--repeats",
    type=click.IntRange(2, 100),
    default=3,
    show_default=True,
    help="How many times every item is scored.",
)
@click.option(
    "--regenerate-steps",
    is_flag=True,
    help="Generate the evaluation steps again for every repeat (as tools that never freeze them do); "
    "nothing is stored.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N items of the data.")
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the first repeat; repeat i uses SEED+i [default: the prompt's seed, else unseeded].",
)
@judge_options
@click.option(
    "--base-url",
    default=None,
    help="Your OpenAI-compatible server for openai:MODEL; the key comes from OPENAI_API_KEY.",
)
@click.option(
    "--timeout", type=click.FloatRange(0.1, 600), default=60.0, show_default=True, help="Seconds per call."
)
@click.option("--quiet", "-q", is_flag=True, help="No progress or warnings on stderr.")
@db_option
@json_option
@workbench_errors
def stability_command(
    prompt_ref: str,
    data_ref: str,
    id_field: str,
    inputs: tuple[str, ...],
    repeats: int,
    regenerate_steps: bool,
    limit: int | None,
    seed: int | None,
    judge_ref: str | None,
    mode: str | None,
    n: int | None,
    temperature: float | None,
    base_url: str | None,
    timeout: float,
    quiet: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """Score a sample K times and report per item how often its likeliest rating flips and how far its
    weighted score moves, before the prompt is frozen.

    \b
    The likeliest rating is the top rating in logprobs mode and the modal reply in sampling mode; the flip
    rate is the share of pairs of repeats that disagree; sd (n - 1) and range are over the weighted scores.
    Repeats sample at the prompt's temperature (repeat i with seed SEED+i). A frozen prompt with the steps
    kept is run as stored runs without the judge cache; a draft, or --regenerate-steps, is judged in memory.
    JSON keys: repeats, items, flip_rate (mean), items_changed, items_moved_half_point, per_item (id,
    ratings, scores, flip_rate, sd, range), summary, warnings, run_ids, steps.

    \b
    Examples:
      geval stability --prompt coherence --data sample --repeats 5 --limit 20
      geval stability --prompt draft:coherence-v2 --data sample --limit 10 --json
      geval stability --prompt coherence --data sample --regenerate-steps --judge openai:gpt-4o-mini
    """
    from ..diagnostics.stability import repeat_warnings
    from ..providers import get_judge

    with open_library(db) as library:
        prompt, frozen = prompt_or_draft(library, prompt_ref)
        planned = planned_judge(library, prompt.dimension.judge, judge_ref, base_url, mode, n, temperature)
        settings, warnings = planned.settings, list(planned.warnings)  # printed as the judge was planned
        refuse_hopeless(library, settings)
        if not quiet:
            click.echo(planned.describe(), err=True)
        dataset = resolve_data(library, data_ref, prompt, file_mapping(id_field, inputs))
        items = library.dataset_items(dataset.id)[:limit]
        if not quiet:
            for warning in repeat_warnings(settings, regenerate_steps):
                click.echo(f"warning: {warning}", err=True)

        def progress(done: int, total: int) -> None:
            if not quiet:
                click.echo(f"repeat {done} of {total} scored", err=True)

        result = run_stability(
            prompt,
            items,
            get_judge(settings, timeout=timeout),
            repeats,
            settings=settings,
            store=library if frozen else None,
            dataset_id=dataset.id,
            regenerate_steps=regenerate_steps,
            seed=seed,
            concurrency=default_concurrency(settings),
            on_repeat=progress,
        )
    result.warnings = [*warnings, *result.warnings]
    if as_json:
        echo_json(result.to_dict())
    else:
        _print(result)
