"""`geval verify`: recompute every hash in the library and check every protection trigger."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import click

from prompt_library import Library, LibraryIntegrityWarning, default_path, verify_library
from prompt_library.verify import summary_line

from ..errors import NotFoundError
from .common import db_option, echo_json, json_option, workbench_errors


@click.command("verify")
@db_option
@json_option
@workbench_errors
def verify_command(db: str | None, as_json: bool) -> None:
    """Check the library: prompt, dataset and cache hashes and the protection triggers.

    Exits 1 naming every object that differs. Nothing is repaired: protection re-created over data
    that may have been changed would bless the change.
    """
    path = Path(db) if db else default_path()
    if not path.is_file():
        raise NotFoundError(f"no library file at {path}; pass --db FILE or set GEVAL_DB")
    with warnings.catch_warnings():
        # Missing triggers are reported below, as problems; the open-time warning would say it twice.
        warnings.simplefilter("ignore", LibraryIntegrityWarning)
        try:
            with Library(path, seed_examples=False) as library:
                report = verify_library(library)
        except sqlite3.DatabaseError as exc:  # not SQLite at all, or damaged beyond reading its schema
            raise click.ClickException(f"{path} cannot be read as a library: {exc}") from None
    if as_json:
        echo_json(report)
    else:
        click.echo(summary_line(report))
        for problem in report["problems"]:
            click.echo(problem["text"])
        if report["ok"]:
            click.echo("ok: every hash matches its content and every protection trigger is in place")
    if not report["ok"]:
        click.echo(f"{len(report['problems'])} problems found in {path}", err=True)
        click.get_current_context().exit(1)
