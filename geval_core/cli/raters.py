"""`geval raters`: how well the human raters of a dataset agree with each other, and the human ceiling."""

from __future__ import annotations

from typing import Any

import click

from prompt_library import open_library

from ..types import Scale
from .agree import _fmt as _f
from .agree import _parse_scale
from .common import complete_dataset_name, complete_run, db_option, echo_json, json_option, workbench_errors


def _print(result: dict[str, Any]) -> None:
    ci = result["ci"]
    per_item = ", ".join(f"{n} items with {k}" for k, n in result["raters_per_item"].items())
    click.echo(
        f"{result['dataset']} ({result['dataset_id'][:12]}), human rating {result['human']}: "
        f"{result['raters']} raters ({', '.join(result['rater_keys'])}), scale {result['scale']}"
    )
    click.echo(
        f"items with 2+ ratings {result['items']} of {result['items_total']}; "
        f"pairable values {result['pairable_values']}; ratings per item: {per_item}"
    )
    for metric in ("nominal", "ordinal", "interval"):
        click.echo(
            f"Krippendorff's alpha, {metric:<9}{_f(result[f'alpha_{metric}'], ci.get(f'alpha_{metric}'))}"
        )
    if result["bootstrap"]:
        if result.get("ci_warning"):
            click.echo(f"({result['ci_warning']})")
        else:
            click.echo(
                f"(intervals: {result['bootstrap']} resamples of the {result['ci_units']} "
                f"{result['ci_resampled']}; {result['ci_method']})"
            )
        if result.get("ci_flag"):
            click.echo(f"CAUTION: {result['ci_flag']}")
    click.echo(f"quadratic kappa, mean over rater pairs: {_f(result['kappa_quadratic_mean'])}")
    for pair in result["pairwise_kappa_quadratic"]:
        click.echo(f"  {pair['a']} vs {pair['b']}: {_f(pair['kappa'])} on {pair['items']} items")
    if result["ceiling"]:
        click.echo("human ceiling (each rater vs the mean of the others; the judge vs every rater's mean):")
        for row in result["ceiling"]:
            click.echo(
                f"  {row['who']:<20} Spearman {_f(row['spearman'], row['ci'].get('spearman'))}   "
                f"kappa quadratic {_f(row['kappa_quadratic'])}   ({row['reading']}, {row['items']} items)"
            )


@click.command("raters")
@click.argument("dataset", shell_complete=complete_dataset_name)
@click.option(
    "--human", required=True, help="Rating name: items carry NAME.0, NAME.1, ... per rater (and NAME)."
)
@click.option(
    "--run",
    "run_id",
    default=None,
    shell_complete=complete_run,
    help="A library run on this dataset: adds the judge beside the human ceiling.",
)
@click.option(
    "--scale",
    callback=_parse_scale,
    default=None,
    help="Scale for kappa, e.g. 1-5 (default: the run's prompt scale, else spanned by the ratings).",
)
@click.option(
    "--bootstrap",
    default=0,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Resamples of items for 95% intervals of alpha (and of the ceiling's figures).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for the bootstrap.")
@click.option("--pooled", is_flag=True, help="Ceiling on all items pooled, even when items have groups.")
@db_option
@json_option
@workbench_errors
def raters_command(
    dataset: str,
    human: str,
    run_id: str | None,
    scale: Scale | None,
    bootstrap: int,
    seed: int,
    pooled: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """Inter-rater agreement of DATASET[@VERSION]: Krippendorff's alpha, pairwise kappa, raters per item.

    Alpha is computed nominal, ordinal and interval from the coincidence matrix over every item with two
    or more ratings; JSON keys alpha_nominal, alpha_ordinal, alpha_interval, items, raters,
    pairable_values (and ci, pairwise_kappa_quadratic, raters_per_item, spread, ceiling).

    \b
    Examples:
      geval raters golden --human coherence
      geval raters golden@2 --human coherence --run 1a2b3c --bootstrap 1000 --json
    """
    from ..stats.stored import dataset_raters  # numpy only when run

    with open_library(db) as library:
        result = dataset_raters(library, dataset, human, scale, bootstrap, seed, run_id, grouped=not pooled)
    if as_json:
        echo_json(result)
    else:
        _print(result)
