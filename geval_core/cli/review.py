"""`geval review`: the items a person should rate next, from one run (the Rate page's review queue)."""

from __future__ import annotations

from typing import Any

import click

from prompt_library import open_library

from ..diagnostics.review import ORDERS, review_queue
from ..run.splits import sealed_note, sealed_run
from .common import complete_run, db_option, echo_json, json_option, note_unsaved, workbench_errors
from .runs import side_option


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def review_rows(library, run_id: str, human: str | None, order: str, side: str = "dev") -> dict[str, Any]:
    """The run, the human rating name used and every item in queue order: on a split dataset the items of
    `side` (the sealed test side's only when asked, and the read is recorded)."""
    run = library.get_run(run_id)
    name = human or library.get_prompt(run.prompt_id).name
    view, scope = sealed_run(library, run, side, "review")
    ids = [i.id for i in view.dataset_items(run.dataset_id)]
    judged = {r["item_id"]: r for r in view.judgments(run.id)}
    people = view.human_means(run.dataset_id, name)
    queue = review_queue(ids, judged, people, order)
    split = {k: scope[k] for k in ("side", "split", "withheld")} if scope["side"] else {}
    return {
        "run": run.id,
        "dataset_id": run.dataset_id,
        "human": name,
        "order": order,
        "rated": sum(r["human"] is not None for r in queue),
        **split,
        "items": queue,
    }


@click.command("review")
@click.argument("run_id", shell_complete=complete_run)
@click.option(
    "--human",
    default=None,
    help="Human rating name (default: the run's dimension): the dataset version's own; Rate-page ratings once saved.",
)
@click.option(
    "--order",
    type=click.Choice(list(ORDERS)),
    default="uncertain",
    show_default=True,
    help="; ".join(f"{k}: {v}" for k, v in ORDERS.items()) + " (the Rate page's review queue orders)",
)
@click.option(
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(0, None),
    help="How many items to list (0: all).",
)
@side_option
@db_option
@json_option
@workbench_errors
def review_command(
    run_id: str, human: str | None, order: str, limit: int, side: str, db: str | None, as_json: bool
) -> None:
    """The review queue of RUN_ID: the items where a person's rating changes the most, first.

    "uncertain" puts the judge's least certain items first (spread of its rating distribution; unscored
    items before all); "disagree" puts rated items with the largest |judge - people| first. The Rate page
    offers the same queue. On a split dataset the queue holds the dev side's items unless --side test asks for
    the sealed ones. JSON keys: run, dataset_id, human, order, rated, (on a split dataset: side, split,
    withheld), items (item, judge, human, gap, sd, entropy, margin, reason).

    \b
    Examples:
      geval review 1a2b3c --limit 10
      geval review 1a2b3c --human coherence --order disagree --json
    """
    with open_library(db) as library:
        result = review_rows(library, run_id, human, order, side)
        note_unsaved(library, result["dataset_id"], result["human"])
    note = sealed_note(result)
    if note:
        click.echo(f"run {result['run']}: {note}", err=True)
    if limit:
        result["items"] = result["items"][:limit]
    if as_json:
        echo_json(result)
        return
    click.echo(
        f"run {result['run'][:12]}, human rating {result['human']} ({result['rated']} items rated), "
        f"order: {ORDERS[order]}"
    )
    click.echo(f"{'item':<24}{'judge':>7}{'human':>7}{'gap':>7}{'sd':>7}  reason")
    for row in result["items"]:
        click.echo(
            f"{row['item'][:23]:<24}{_fmt(row['judge']):>7}{_fmt(row['human']):>7}{_fmt(row['gap']):>7}"
            f"{_fmt(row['sd']):>7}  {row['reason']}"
        )
