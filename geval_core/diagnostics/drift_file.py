"""A drift watch outside the workbench, beside production scoring with an exported prompt.

`export_watch` writes one hash-checked file: the watch (its anchors, reference scores, alpha), each anchor's inputs,
people's rating and group, the reference run's judgment of it, and the checks so far; never a server URL (whoever
checks names their own). `drift_check_file` re-scores the anchors (or a seeded sample) with the exported prompt
through `score_items` (the production road, planned like every run, no cache), makes the check exactly as the
library does (diagnostics.drift_figures.check_body: the same test, e-value carried over, the same figures) and
appends it to the file. A file's owner can rewrite it and its hash: it shows that the file agrees with itself,
not that its checks are the ones made; the library's checks are the protected ones.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..prompts import canonical_hash
from ..run.splits import sealed_view
from ..store import Store
from ..types import FrozenPrompt
from .drift import WATCH_FIELDS, get_watch, sample_ids, watch_checks
from .drift_figures import check_body

__all__ = ["FORMAT", "drift_check_file", "export_watch", "read_watch"]

FORMAT = "geval-drift-watch/1"
KEPT = ("score", "distribution", "top_rating", "first_rating", "mode", "model_version")


def export_watch(store: Store, ref: str) -> dict[str, Any]:
    """Watch `ref` with everything a check needs, as one hash-checked document (no server URL)."""
    watch = get_watch(store, ref)
    prompt = store.get_prompt(watch["prompt"])
    view, _ = sealed_view(store, watch["dataset"])  # the anchors are on the dev side of a split dataset
    items = {i.id: i for i in view.dataset_items(watch["dataset"]) if i.id in watch["reference"]}
    people = view.human_means(watch["dataset"], watch["human"])
    reference = {r["item_id"]: r for r in store.judgments(watch["runs"][0]) if r["item_id"] in items}
    anchors = {
        i: {
            "fields": {k: items[i].fields.get(k) for k in prompt.dimension.inputs},
            "human": people.get(i),
            "group": items[i].group,
            "reference": {k: reference[i].get(k) for k in KEPT},
        }
        for i in watch["items"]
    }
    judge = {
        k: v for k, v in watch["judge"].items() if k != "base_url"
    }  # an export never carries an endpoint
    head = {k: watch[k] for k in (*WATCH_FIELDS, "id", "name", "version") if k != "judge"}
    checks = [
        {k: v for k, v in c.items() if k != "judge"} for c in watch_checks(store, watch)
    ]  # it names the server
    body = {
        "format": FORMAT,
        "watch": {**head, "judge": judge},
        "prompt_label": prompt.label,
        "anchors": anchors,
        "checks": checks,
    }
    return {**body, "hash": canonical_hash(body)}


def read_watch(path: str | Path) -> dict[str, Any]:
    """An exported watch, checked against its hash; InputError naming the file when it is not one or was edited."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the drift watch file: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(
            f"not a drift watch file (`geval drift export` writes one, format {FORMAT})", file=str(path)
        )
    body = {k: v for k, v in data.items() if k != "hash"}
    if canonical_hash(body) != data.get("hash"):
        raise InputError("the drift watch file does not match its hash: it was edited", file=str(path))
    return data


def _write(path: Path, body: dict[str, Any]) -> None:
    """The file with its new hash, replaced in one step (a crash leaves the old file whole)."""
    text = json.dumps({**body, "hash": canonical_hash(body)}, ensure_ascii=False, indent=1)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def drift_check_file(
    prompt: FrozenPrompt | str | Path,
    path: str | Path,
    sample: int | None = None,
    judge: str | None = None,
    base_url: str | None = None,
    seed: int | None = None,
    concurrency: int = 8,
) -> dict[str, Any]:
    """Re-score an exported watch's anchors (or `sample` of them) with the exported prompt, append the check to the
    file; the report (`verdict`: "drift" or "no drift", `checks`, `e_value`)."""
    from ..files.prompt_files import load_prompt
    from ..run.many_items import score_items

    data = read_watch(path)
    frozen = prompt if isinstance(prompt, FrozenPrompt) else load_prompt(prompt)
    watch, checks, anchors = data["watch"], data["checks"], data["anchors"]
    if frozen.id != watch["prompt"]:
        raise InputError(
            f"the watch is of prompt {data['prompt_label']} ({watch['prompt'][:12]}), not of "
            f"{frozen.label} ({frozen.id[:12]})",
            field="prompt",
        )
    ids = sample_ids(watch, len(checks) + 1, sample, seed)
    own = frozen.dimension.judge
    if judge is None and (watch["judge"].get("provider"), watch["judge"].get("model")) != (
        own.provider,
        own.model,
    ):
        judge = f"{watch['judge']['provider']}:{watch['judge']['model']}"  # the reference's judge
    judged = score_items(
        frozen,
        [{"id": i, **anchors[i]["fields"]} for i in ids],
        judge=judge,
        base_url=base_url,
        concurrency=concurrency,
        id_field="id",
        progress=False,
    )
    rows = {j.item_id: {k: getattr(j, k) for k in KEPT} for j in judged if j.error is None}
    body = check_body(
        watch,
        checks,
        rows,
        {i: a["reference"] for i, a in anchors.items()},
        {i: a["human"] for i, a in anchors.items() if a["human"] is not None},
        {i: a["group"] for i, a in anchors.items()},
    )
    at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    check = {
        **body,
        "seq": body["check"],
        "at": at,
        "errors": sum(j.error is not None for j in judged),
        "judge": judge or f"{own.provider}:{own.model}",
    }
    data = {k: v for k, v in data.items() if k != "hash"}
    data["checks"] = [*checks, check]
    _write(Path(path), data)
    alarm = next((c["alarm_at"] for c in data["checks"] if c.get("alarm_at")), None)
    return {
        "watch": {k: watch[k] for k in ("name", "version", "id", "prompt", "human", "alpha")},
        "checks": data["checks"],
        "check": check,
        "verdict": "drift" if alarm else "no drift",
        "alarm_at": alarm,
        "e_value": check["e_value"],
        "threshold": check["threshold"],
    }
