"""Signed run digests: what a shared library or export can promise beyond its unkeyed hashes.

Anyone who can write a library file can recompute its row hashes and digests. An HMAC-SHA256 over a run's
row hash and digest, with a key only its owner holds (a file, or $GEVAL_SIGNING_KEY), cannot be recomputed
without that key. The key is read when signing or checking and never stored in the library.
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


def signing_key(key_file: str | Path | None) -> bytes:
    """The key from a file (its bytes, trailing newline dropped), else $GEVAL_SIGNING_KEY."""
    if key_file is not None:
        key = Path(key_file).read_bytes().rstrip(b"\r\n")
    else:
        key = os.environ.get(KEY_VARIABLE, "").encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(f"a signing key of at least {MIN_KEY_BYTES} bytes is needed: pass --key-file FILE or set "
                          f"{KEY_VARIABLE} (e.g. `openssl rand -hex 32 > signing.key`; keep it out of the library)")
    return key


def run_statement(library: Any, run_id: str) -> dict[str, Any]:
    """What a signature covers: the run's id, its row hash and the digest of its judgments, recomputed now."""
    run = library.get_run(run_id)
    stored = library._one("SELECT * FROM runs WHERE id = ?", [run["id"]])
    rows = library._rows("SELECT * FROM judgments WHERE run_id = ?", [run["id"]])
    return {"run_id": run["id"], "run_hash": row_hash("runs", stored),
            "digest": run_digest(row_hash("judgments", r) for r in rows),
            "judgments": len(latest_attempts(rows)), "algorithm": "hmac-sha256"}


def sign_run(library: Any, run_id: str, key: bytes) -> dict[str, Any]:
    """The run's statement with its HMAC-SHA256 signature."""
    statement = run_statement(library, run_id)
    return {**statement, "signature": _mac(statement, key)}


def check_signature(library: Any, signed: dict[str, Any], key: bytes) -> None:
    """IntegrityError unless the signature is the key's over the run as the library holds it now."""
    claimed = {k: v for k, v in signed.items() if k != "signature"}
    if not hmac.compare_digest(_mac(claimed, key), str(signed.get("signature", ""))):
        raise IntegrityError("the signature was not made with this key over this statement (a forged or edited "
                             "signature file, or another key)")
    now = run_statement(library, str(signed.get("run_id")))
    changed = [k for k in ("run_hash", "digest", "judgments") if now[k] != claimed.get(k)]
    if changed:
        raise IntegrityError(f"run {now['run_id']} differs from what was signed ({', '.join(changed)}): its record or "
                             "its judgments changed after signing")


def _mac(statement: dict[str, Any], key: bytes) -> str:
    return hmac.new(key, canonical_json(statement).encode("utf-8"), hashlib.sha256).hexdigest()
