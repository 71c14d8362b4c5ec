"""The `geval` command: agreement, the prompt library, scoring runs and batch files."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="geval-workbench")
def cli() -> None:
    """G-Eval Workbench: design, freeze, run and calibrate LLM-as-a-judge prompts."""


# Sub-commands live in their own modules and register themselves here.
