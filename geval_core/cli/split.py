"""`geval split`: a dev / test split of a dataset version by group, stored with its hash."""

from __future__ import annotations

import click

from prompt_library import open_library

from ..run.splits import make_split
from .common import complete_dataset_name, db_option, echo_json, json_option, workbench_errors

__all__ = ["split_command"]


@click.command("split")
@click.argument("dataset", shell_complete=complete_dataset_name)
@click.option(
    "--dev",
    "dev",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.6,
    show_default=True,
    help="The share of groups on the dev side; the rest is the sealed test side.",
)
@click.option(
    "--by",
    "by",
    default="group",
    show_default=True,
    help="What is kept on one side: 'group' (the dataset's groups, e.g. documents) or 'none' (items).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="The shuffle's seed (same seed, same split)."
)
@db_option
@json_option
@workbench_errors
def split_command(dataset: str, dev: float, by: str, seed: int, db: str | None, as_json: bool) -> None:
    """Split DATASET (name[@version]) into dev and test by group: no group on both sides. The same
    dataset, share and seed give the same split (and hash); JSON lists the dev and test item ids.

    \b
    Examples:
      geval split golden --dev 0.6
      geval split golden@2 --dev 0.5 --by none --seed 7 --json
    """
    with open_library(db) as library:
        row = library.get_dataset(dataset)
        split, created = make_split(library, row.id, dev, None if by == "none" else by, seed)
    if as_json:
        echo_json({**split, "created": created, "dataset": row.label})
        return
    click.echo(
        f"{'split' if created else 'already split:'} {row.label} ({split['hash'][:12]}): "
        f"{len(split['dev'])} dev items in {split['groups']['dev']} groups, {len(split['test'])} test "
        f"items in {split['groups']['test']} groups (sealed)"
    )
