"""Signed run digests: what a shared library or export can promise beyond its unkeyed hashes.

Anyone who can write a library file can recompute its row hashes and digests. An HMAC-SHA256 over a run's
row hash and digest, with a key only its owner holds (a file, or $GEVAL_SIGNING_KEY), cannot be recomputed
without that key. The key is read when signing or checking and never stored in the library.

A signature made for a file (`runs export --sign`, `verify --sign RUN --file FILE`) also covers that file's bytes:
its name and sha256 are in the signed statement, and a check reads the file again, so an edited export fails.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

from geval_core.errors import ConfigError, IntegrityError
from geval_core.prompts import canonical_json

from .hashes import row_hash, run_digest
from .runs import latest_attempts

KEY_VARIABLE = "GEVAL_SIGNING_KEY"
MIN_KEY_BYTES = 16
SIGNATURE_SUFFIX = ".sig.json"  # FILE.sig.json signs FILE


def signing_key(key_file: str | Path | None) -> bytes:
    """The key from a file (its bytes, trailing newline dropped), else $GEVAL_SIGNING_KEY."""
    if key_file is not None:
        key = Path(key_file).read_bytes().rstrip(b"\r\n")
    else:
        key = os.environ.get(KEY_VARIABLE, "").encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"a signing key of at least {MIN_KEY_BYTES} bytes is needed: pass --key-file FILE or set "
            f"{KEY_VARIABLE} (e.g. `openssl rand -hex 32 > signing.key`; keep it out of the library)"
        )
    return key


def run_statement(library: Any, run_id: str) -> dict[str, Any]:
    """What a signature covers: the run's id, its row hash and the digest of its judgments, recomputed now."""
    run = library.get_run(run_id)
    stored = library._one("SELECT * FROM runs WHERE id = ?", [run.id])
    rows = library._rows("SELECT * FROM judgments WHERE run_id = ?", [run.id])
    return {
        "run_id": run.id,
        "run_hash": row_hash("runs", stored),
        "digest": run_digest(row_hash("judgments", r) for r in rows),
        "judgments": len(latest_attempts(rows)),
        "algorithm": "hmac-sha256",
    }


def sign_run(library: Any, run_id: str, key: bytes, file: str | Path | None = None) -> dict[str, Any]:
    """The run's statement with its HMAC-SHA256 signature; with `file`, the statement covers its bytes too."""
    statement = run_statement(library, run_id)
    if file is not None:
        statement.update(file_statement(Path(file)))
    return {**statement, "signature": _mac(statement, key)}


def file_statement(path: Path) -> dict[str, Any]:
    """What a signature says about a file: its name (never its folder: the file travels with its signature),
    its size and the sha256 of its bytes."""
    data = path.read_bytes()
    return {"file": path.name, "file_bytes": len(data), "file_sha256": hashlib.sha256(data).hexdigest()}


def check_signature(library: Any, signed: dict[str, Any], key: bytes, file: str | Path | None = None) -> None:
    """IntegrityError unless the signature is the key's over the run as the library holds it now and, when
    `file` is given, over that file's bytes as they are now."""
    claimed = {k: v for k, v in signed.items() if k != "signature"}
    if not hmac.compare_digest(_mac(claimed, key), str(signed.get("signature", ""))):
        raise IntegrityError(
            "the signature was not made with this key over this statement (a forged or edited "
            "signature file, or another key)"
        )
    if file is not None:
        check_file(claimed, Path(file))
    now = run_statement(library, str(signed.get("run_id")))
    changed = [k for k in ("run_hash", "digest", "judgments") if now[k] != claimed.get(k)]
    if changed:
        raise IntegrityError(
            f"run {now['run_id']} differs from what was signed ({', '.join(changed)}): its record or "
            "its judgments changed after signing"
        )


def check_file(claimed: dict[str, Any], path: Path) -> None:
    """IntegrityError unless `path` holds the very bytes the (already authenticated) statement was made over."""
    if "file_sha256" not in claimed:
        raise IntegrityError(
            f"the signature covers run {claimed.get('run_id')} in the library, not {path}: it was "
            "made without a file (or before signatures covered files); sign the file again with "
            f"`geval runs export {claimed.get('run_id')} -o {path.name} --sign`"
        )
    if not path.is_file():
        raise IntegrityError(
            f"{path}, the file this signature covers, is not there; pass the file with --file FILE"
        )
    now = file_statement(path)
    if now["file_sha256"] != claimed["file_sha256"]:
        raise IntegrityError(
            f"{path} differs from the file that was signed ({now['file_bytes']} bytes, sha256 "
            f"{now['file_sha256'][:12]}…; signed: {claimed.get('file_bytes')} bytes, sha256 "
            f"{str(claimed['file_sha256'])[:12]}…): it was changed after signing"
        )


def signed_file(
    signature: str | Path, claimed: dict[str, Any], explicit: str | Path | None = None
) -> Path | None:
    """The file a signature is checked against: `explicit`, else the file it names beside it, else the file its
    own name implies (FILE for FILE.sig.json) when that exists; None when it signs the run alone."""
    if explicit is not None:
        return Path(explicit)
    folder = Path(signature).parent
    if claimed.get("file"):
        return (
            folder / Path(str(claimed["file"])).name
        )  # a name, not a path: it never points out of its folder
    name = Path(signature).name
    implied = folder / name[: -len(SIGNATURE_SUFFIX)] if name.endswith(SIGNATURE_SUFFIX) else None
    return implied if implied is not None and implied.is_file() else None


def _mac(statement: dict[str, Any], key: bytes) -> str:
    return hmac.new(key, canonical_json(statement).encode("utf-8"), hashlib.sha256).hexdigest()
