"""`geval compare`: two runs of the same items against people, as paired differences with intervals."""

from __future__ import annotations

import click

from prompt_library import open_library

from .common import (
    complete_run,
    db_option,
    echo_json,
    json_option,
    note_unsaved,
    resamples_option,
    workbench_errors,
)

__all__ = ["compare_command"]


@click.command("compare")
@click.argument("run_a", shell_complete=complete_run)
@click.argument("run_b", shell_complete=complete_run)
@click.option(
    "--human",
    required=True,
    help="The human rating name (the dataset version's own; Rate-page ratings once saved as a version).",
)
@resamples_option
@click.option(
    "--side",
    type=click.Choice(["dev", "test"]),
    default="dev",
    show_default=True,
    help="On a split dataset: the dev side, or the sealed test side (the use is recorded for RUN_B's "
    "prompt). Both prompts' example items are left out either way.",
)
@db_option
@json_option
@workbench_errors
def compare_command(
    run_a: str, run_b: str, human: str, resamples: int, side: str, db: str | None, as_json: bool
) -> None:
    """Spearman, Kendall, Pearson and quadratic kappa of RUN_A and RUN_B against people on the same items, and
    RUN_B - RUN_A with a 95% interval that resamples the dataset's groups for both runs at once (withheld under
    10 groups). On a split dataset, the dev side unless --side test.

    \b
    Examples:
      geval compare 1a2b3c 4d5e6f --human coherence
      geval compare 1a2b3c 4d5e6f --human coherence --side test --resamples 5000 --json
    """
    from ..diagnostics.compare import compare_runs  # numpy and scipy only when a comparison runs
    from ..run.splits import evaluation_ids

    with open_library(db) as library:
        first, second = library.get_run(run_a), library.get_run(run_b)
        examples = set().union(
            *(library.get_prompt(r.prompt_id).dimension.example_ids for r in (first, second))
        )
        only, scope = evaluation_ids(library, second.dataset_id, side, examples, second.prompt_id, second.id)
        result = {**compare_runs(library, run_a, run_b, human, resamples, only=only), "scope": scope}
        note_unsaved(library, second.dataset_id, human)
    if as_json:
        echo_json(result)
        return
    where = f" on the {scope['side']} side of split {scope['split'][:12]}" if scope.get("side") else ""
    click.echo(f"judges: {result['judges'][0]} -> {result['judges'][1]}")
    if result["different_judges"]:
        click.echo(f"warning: {result['different_judges']}", err=True)
    click.echo(
        f"{result['items']} items in {result['groups']} groups{where}; {result['resampled']} resampled"
    )
    for name, fig in result["figures"].items():
        low_high = (
            "" if fig["interval"] is None else f" [{fig['interval'][0]:+.3f}, {fig['interval'][1]:+.3f}]"
        )
        click.echo(f"{name:<9} {fig['first']:.3f} -> {fig['second']:.3f}: {fig['difference']:+.3f}{low_high}")
    if result.get("withheld"):
        click.echo(f"interval withheld: {result['withheld']}")
