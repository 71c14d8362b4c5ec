"""The `geval` command: agreement, the prompt library, scoring runs and batch files."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="geval-workbench")
def cli() -> None:
    """G-Eval Workbench: design, freeze, run and calibrate LLM-as-a-judge prompts."""


# Sub-commands live in their own modules and register themselves here.
from .cli_agree import agree  # noqa: E402

cli.add_command(agree)
from .cli_library import register as _register_library  # noqa: E402

_register_library(cli)
from .cli_score import score_command  # noqa: E402

cli.add_command(score_command)
from .cli_batch import batch_group  # noqa: E402

cli.add_command(batch_group)
