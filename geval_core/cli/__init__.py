"""The `geval` command: one module per command group, shared options in `_common`."""

from __future__ import annotations

import click

from .agree import agree
from .batch import batch_group
from .datasets import datasets
from .prompts import prompts
from .runs import runs
from .score import score_command

__all__ = ["cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="geval-workbench")
def cli() -> None:
    """G-Eval Workbench: design, freeze, run and calibrate LLM-as-a-judge prompts."""


for _command in (agree, prompts, datasets, runs, score_command, batch_group):
    cli.add_command(_command)
