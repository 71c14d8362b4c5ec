"""The `geval` command: one module per command group, shared options in `_common`."""

from __future__ import annotations

import click

from .agree import agree
from .batch import batch_group
from .datasets import datasets
from .diagnostics import calibration_command, estimate_command
from .probes import probe_group
from .prompts import prompts
from .raters import raters_command
from .runs import runs
from .score import score_command
from .verify import verify_command

__all__ = ["cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="geval-workbench")
def cli() -> None:
    """G-Eval Workbench: design, freeze, run and calibrate LLM-as-a-judge prompts."""


for _command in (agree, prompts, datasets, runs, score_command, batch_group, verify_command):
    cli.add_command(_command)

# Judge diagnostics (issue 13).
for _command in (calibration_command, estimate_command, probe_group):
    cli.add_command(_command)

# Raters and the human ceiling (issue 12).
cli.add_command(raters_command)
