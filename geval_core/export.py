"""Frozen prompts as self-contained, hash-checked JSON files; scoring from one; judgments as CSV/JSONL."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .errors import InputError, IntegrityError, LogprobsUnavailableError
from .judgment import Judgment
from .prompts import content_hash, template_of
from .types import Dimension, FrozenPrompt, Item, JudgeSettings, Scale

if TYPE_CHECKING:
    from .providers.base import Judge

SCHEMA_VERSION = 1
FORMAT = "geval-workbench/prompt"
HASH_NOTE = "sha256 of the canonical JSON of geval_core.prompts.metric_fields (every field but name/version)"
JUDGMENT_FIELDS = Judgment.columns()

SNIPPET = '''\
from geval_core.export import load_prompt, score_item

prompt = load_prompt("{path}")  # refuses a file whose content does not match its hash
# The judge comes from the file's settings; API keys from the environment (OPENAI_API_KEY, ...).
result = score_item(prompt, {fields})
print(result.score, result.distribution)  # weighted score; p(rating) for every rating
'''


def export_prompt(prompt: FrozenPrompt, agreement: dict[str, Any] | None = None,
                  path: str | None = None) -> dict[str, Any]:
    """Everything needed to score with this prompt elsewhere, plus its hash and optional agreement.

    `path` is the file name the usage snippet loads (default name@version.json).
    """
    dim, judge = prompt.dimension, prompt.dimension.judge
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "name": prompt.name,
        "version": prompt.version,
        "created_at": prompt.created_at,
        "content_hash": prompt.id,
        "hash": HASH_NOTE,
        "dimension": dim.name,
        "definition": dim.definition,
        "scale": {"min": dim.scale.min, "max": dim.scale.max},
        "anchors": {str(k): dim.anchors[k] for k in sorted(dim.anchors)},
        "inputs": list(dim.inputs),
        "steps": list(dim.steps),
        "steps_model": dim.steps_model,
        "template": template_of(dim),
        "judge": {"provider": judge.provider, "model": judge.model, "base_url": judge.base_url},
        "decoding": {"temperature": judge.temperature, "n": judge.n, "top_logprobs": judge.top_logprobs,
                     "max_tokens": judge.max_tokens, "seed": judge.seed},
        "scoring": {"mode": judge.mode, "ratings": dim.scale.points,
                    "score": "sum over allowed ratings r of p(r) * r, renormalised over the allowed ratings"},
        "agreement": agreement,
        "usage": production_snippet(prompt, path),
    }


def _require(data: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise InputError(f"not a prompt export: missing {', '.join(missing)}", field=missing[0])


def prompt_from_export(data: dict[str, Any]) -> FrozenPrompt:
    """Rebuild the frozen prompt; IntegrityError when the content does not match its hash."""
    if not isinstance(data, dict):
        raise InputError("not a prompt export: expected a JSON object")
    _require(data, "schema_version", "content_hash", "dimension", "definition", "scale", "anchors", "inputs",
             "steps", "template", "judge", "decoding", "scoring")
    if not isinstance(data["schema_version"], int) or data["schema_version"] > SCHEMA_VERSION:
        raise InputError(f"export schema_version {data['schema_version']!r} is newer than this workbench "
                         f"reads ({SCHEMA_VERSION}); upgrade geval-workbench", field="schema_version")
    try:
        judge = JudgeSettings(**data["judge"], **data["decoding"], mode=data["scoring"]["mode"])
        dim = Dimension(
            name=data["dimension"], definition=data["definition"], scale=Scale(**data["scale"]),
            anchors={int(k): v for k, v in data["anchors"].items()}, inputs=tuple(data["inputs"]),
            steps=tuple(data["steps"]), steps_model=data.get("steps_model") or "", template=data["template"],
            judge=judge,
        )
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise InputError(f"not a valid prompt export: {exc}") from None
    actual = content_hash(dim)
    if actual != data["content_hash"]:
        raise IntegrityError(f"the export's content does not match its hash (stored "
                             f"{str(data['content_hash'])[:12]}, computed {actual[:12]}): the file was "
                             "changed after export; export it again from the library")
    return FrozenPrompt(actual, str(data.get("name") or dim.name.lower()), int(data.get("version") or 1), dim,
                        str(data.get("created_at") or ""))


def write_export(prompt: FrozenPrompt, path: str | Path, agreement: dict[str, Any] | None = None) -> Path:
    """Write the export JSON to `path` (UTF-8, indented)."""
    path = Path(path)
    path.write_text(json.dumps(export_prompt(prompt, agreement, path.name), indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def _read_json(path: str | Path, what: str) -> Any:
    """The JSON in a file; InputError naming the file (and the line for broken JSON)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"cannot read the {what}: broken JSON: {exc.msg} at column {exc.colno}",
                         file=str(path), line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read the {what}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); "
                         "save the file as UTF-8", file=str(path),
                         line=1 + exc.object[:exc.start].count(b"\n")) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=str(path)) from None


def read_export(path: str | Path) -> dict[str, Any]:
    """The JSON of an export file; InputError when it is not readable JSON."""
    return _read_json(path, "prompt export")


def read_agreement(path: str | Path) -> dict[str, Any]:
    """An agreement JSON object for an export (e.g. `geval agree --json` output); InputError otherwise."""
    data = _read_json(path, "agreement file")
    if not isinstance(data, dict):
        raise InputError(f"expected one JSON object (e.g. the output of `geval agree --json`), got "
                         f"{type(data).__name__}", file=str(path))
    return data


def load_prompt(path: str | Path) -> FrozenPrompt:
    """Load an exported prompt file for production scoring (hash-checked)."""
    return prompt_from_export(read_export(path))


def production_snippet(prompt: FrozenPrompt, path: str | None = None) -> str:
    """A few lines of Python that load this export and score one item."""
    fields = "{" + ", ".join(f'"{f}": {f}' for f in prompt.dimension.inputs) + "}"
    return SNIPPET.format(path=path or f"{prompt.name}@{prompt.version}.json", fields=fields)


def score_item(prompt: FrozenPrompt, fields: dict[str, str], judge: Judge | None = None) -> Judgment:
    """Score one item with a frozen prompt: one judge call (two in auto mode without logprobs)."""
    from .providers import get_judge
    from .run.calls import build_request
    from .scoring import score_reply

    settings = prompt.dimension.judge
    judge = judge if judge is not None else get_judge(settings)
    item = Item("item", {k: str(v) for k, v in fields.items()})
    mode = "sampling" if settings.mode == "sampling" else "logprobs"
    reply = judge.judge(build_request(prompt, item, settings, mode))
    try:
        scored = score_reply(reply, prompt.dimension.scale, mode)
    except LogprobsUnavailableError:
        if settings.mode != "auto":
            raise
        reply = judge.judge(build_request(prompt, item, settings, "sampling"))
        scored = score_reply(reply, prompt.dimension.scale, "sampling")
    return Judgment.from_score(item.id, scored, model_version=reply.model_version, fallback=scored.mode != mode,
                               input_tokens=reply.usage.input_tokens, output_tokens=reply.usage.output_tokens,
                               latency_s=reply.latency_s)


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps({str(k): v for k, v in value.items()} if isinstance(value, dict) else list(value),
                          ensure_ascii=False)
    return "" if value is None else value


def write_judgments(rows: Iterable[dict[str, Any]], out: TextIO, format: str = "jsonl") -> None:
    """Write judgments to an open text stream as CSV (nested values as JSON text) or JSONL."""
    rows = list(rows)
    if format not in ("csv", "jsonl"):
        raise InputError(f"judgments export format must be csv or jsonl, got {format!r}")
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in JUDGMENT_FIELDS))
    columns = [*JUDGMENT_FIELDS, *extra]
    if format == "jsonl":
        for row in rows:
            record = {k: row.get(k) for k in columns}
            if isinstance(record.get("distribution"), dict):
                record["distribution"] = {str(k): v for k, v in record["distribution"].items()}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})


def export_judgments(rows: Iterable[dict[str, Any]], path: str | Path, format: str | None = None) -> Path:
    """Write judgments to a .csv or .jsonl file; format defaults from the suffix (else jsonl)."""
    path = Path(path)
    format = (format or path.suffix.lstrip(".").lower() or "jsonl")
    if format not in ("csv", "jsonl"):
        raise InputError(f"judgments export format must be csv or jsonl, got {format!r}", file=str(path))
    with path.open("w", encoding="utf-8", newline="") as out:
        write_judgments(rows, out, format)
    return path
