"""`geval verify`: recompute every hash in the library and check every protection trigger."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import click

from prompt_library import Library, LibraryIntegrityWarning, default_path, verify_library
from prompt_library.signing import KEY_VARIABLE, check_signature, sign_run, signed_file, signing_key
from prompt_library.verify import summary_line

from ..errors import InputError, IntegrityError, NotFoundError
from .common import db_option, echo_json, json_option, workbench_errors


@click.command("verify")
@db_option
@json_option
@click.option(
    "--sign",
    "sign_run_id",
    metavar="RUN",
    default=None,
    help="After a clean check, print a signature of this run (HMAC-SHA256 of its hash and digest).",
)
@click.option(
    "--check-signature",
    "signature_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Check a signature file made by --sign (or `runs export --sign`) against the library and "
    "against the file it signs (the one it names, beside it; or --file).",
)
@click.option(
    "--file",
    "signed_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The file a signature covers: with --sign its bytes are signed too; with --check-signature the "
    "file to check (default: the file the signature names, beside the signature).",
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False),
    default=None,
    help=f"The signing key (default: the key in ${KEY_VARIABLE} itself, not a file name); it is never "
    "stored in the library.",
)
@workbench_errors
def verify_command(
    db: str | None,
    as_json: bool,
    sign_run_id: str | None,
    signature_file: str | None,
    signed_path: str | None,
    key_file: str | None,
) -> None:
    """Check the library: every prompt, dataset, judgment, run, rating and cache hash, each finished run's
    digest, the schema, the migration records and the protection triggers.

    Exits 1 naming every object that differs. Nothing is repaired: protection re-created over data
    that may have been changed would bless the change.

    \b
    Examples:
      geval verify
      geval verify --sign 1a2b3c --file judgments.jsonl --key-file signing.key > judgments.jsonl.sig.json
      geval verify --check-signature judgments.jsonl.sig.json    # key from $GEVAL_SIGNING_KEY
    """
    if signed_path is not None and sign_run_id is None and signature_file is None:
        raise click.UsageError(
            "--file names the file a signature covers: use it with --sign RUN or --check-signature"
        )
    path = Path(db) if db else default_path()
    if not path.is_file():
        raise NotFoundError(f"no library file at {path}; pass --db FILE or set GEVAL_DB")
    with warnings.catch_warnings():
        # Missing triggers are reported below, as problems; the open-time warning would say it twice.
        warnings.simplefilter("ignore", LibraryIntegrityWarning)
        try:
            try:
                library = Library(path, seed_examples=False)
            except (
                IntegrityError
            ):  # a damaged schema or migration record: check the file as it is, unmigrated
                library = Library(path, seed_examples=False, migrate=False)
            with library:
                report = verify_library(library)
                if report["ok"] and sign_run_id is not None:
                    # Signed only when clean: a signature over edited rows would vouch for the edit.
                    echo_json(sign_run(library, sign_run_id, signing_key(key_file), signed_path))
                    return
                if signature_file is not None:
                    check_signature_file(library, signature_file, signed_path, key_file)
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
        if sign_run_id is not None:
            click.echo(f"run {sign_run_id} not signed: the library differs from what it recorded", err=True)
        click.echo(f"{len(report['problems'])} problems found in {path}", err=True)
        click.get_current_context().exit(1)


def check_signature_file(
    library: Library, signature_file: str, signed_path: str | None, key_file: str | None
) -> None:
    """Check a signature against the library and the file it covers; IntegrityError says what differs."""
    signed = read_signature(signature_file)
    target = signed_file(signature_file, signed, signed_path)
    check_signature(library, signed, signing_key(key_file), target)
    over = f" and over {target} as it is now" if target is not None else " (it covers no file)"
    click.echo(
        f"signature ok: made with this key, over run {signed['run_id']} as the library holds it now{over}",
        err=True,
    )


def read_signature(path: str) -> dict:
    """A signature file's JSON object (InputError when it is not one)."""
    try:
        signed = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a signature file ({exc})", file=path) from None
    if not isinstance(signed, dict) or "run_id" not in signed:
        raise InputError("not a signature file (no run_id)", file=path)
    return signed
