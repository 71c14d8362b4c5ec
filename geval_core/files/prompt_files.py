"""Frozen prompts as self-contained, hash-checked JSON files (judgments files: judgment_files).

An export never says where requests go: it is written without a server URL, and a URL found in a file is
dropped with a warning (ExportWarning), so a file can never send the user's key elsewhere. The content hash
covers everything that decides what the judge is asked and how its reply is scored; the rest (name,
version, created_at, steps_model, agreement) is unverified metadata and labelled so. Attached agreement
carries its own hash and is dropped with a warning when it does not match.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import InputError, IntegrityError
from ..prompts import canonical_hash, content_hash, template_of
from ..prompts.checks import dimension_checks, errors
from ..prompts.names import check_dimension_name, is_name, slug
from ..types import Dimension, FrozenPrompt, JudgeSettings, Scale
from ..urls import shown_url
from .judgment_files import JUDGMENT_FIELDS, export_judgments, write_judgments

__all__ = [
    "JUDGMENT_FIELDS",
    "SCHEMA_VERSION",
    "ExportWarning",
    "LoadedExport",
    "agreement_hash",
    "export_filename",
    "export_judgments",
    "export_prompt",
    "load_prompt",
    "open_export",
    "production_snippet",
    "prompt_from_export",
    "read_agreement",
    "read_export",
    "write_export",
    "write_judgments",
]

SCHEMA_VERSION = 1
FORMAT = "geval-workbench/prompt"
HASH_NOTE = (
    "sha256 of the canonical JSON of geval_core.prompts.metric_fields: everything that decides what "
    "the judge is asked and how its reply is scored; the unverified_metadata fields are outside it"
)
UNVERIFIED = ("name", "version", "created_at", "steps_model", "agreement")
UNVERIFIED_NOTE = (
    "unverified metadata: labels outside the content hash. A version number counts within one "
    "library; the content hash is the prompt's identity across libraries. Attached agreement is "
    "checked against agreement_hash only."
)

# Every value is pasted with repr(): a name, path or field can never become code.
SNIPPET = """\
from geval_core.export import load_prompt, score_item

prompt = load_prompt({path})  # refuses a file whose content does not match its hash
fields = {fields}  # one item's inputs: put its texts here
# Keys come from the environment (OPENAI_API_KEY, ...) and go only to the server named here:
# base_url=None is the provider's own API; give your OpenAI-compatible server's URL to use that instead.
result = score_item(prompt, fields, base_url=None)
print(result.score, result.distribution)  # weighted score; p(rating) for every rating
"""


class ExportWarning(UserWarning):
    """Something in an export file was ignored (a server URL, agreement that fails its hash, a bad name)."""


@dataclass(frozen=True)
class LoadedExport:
    """A checked export: the prompt, its agreement (None when absent or failing its hash), what was ignored."""

    prompt: FrozenPrompt
    agreement: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)


def export_prompt(
    prompt: FrozenPrompt, agreement: dict[str, Any] | None = None, path: str | None = None
) -> dict[str, Any]:
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
        "unverified_metadata": {"fields": list(UNVERIFIED), "note": UNVERIFIED_NOTE},
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
        "judge": {"provider": judge.provider, "model": judge.model},  # no server: the user names it
        "decoding": {
            "temperature": judge.temperature,
            "n": judge.n,
            "top_logprobs": judge.top_logprobs,
            "max_tokens": judge.max_tokens,
            "seed": judge.seed,
            **({"reasoning_effort": judge.reasoning_effort} if judge.reasoning_effort else {}),
        },
        "scoring": {
            "mode": judge.mode,
            "ratings": dim.scale.points,
            "valid_mass_floor": judge.valid_mass_floor,
            "score": "sum over allowed ratings r of p(r) * r, renormalised over the allowed ratings; "
            "no score when p(allowed ratings) is below valid_mass_floor",
        },
        "agreement": agreement,
        "agreement_hash": None if agreement is None else agreement_hash(prompt.id, agreement),
        "usage": production_snippet(prompt, path),
    }


def _require(data: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise InputError(f"not a prompt export: missing {', '.join(missing)}", field=missing[0])


def agreement_hash(prompt_hash: str, agreement: dict[str, Any]) -> str:
    """sha256 binding attached agreement to one prompt: (prompt hash, dataset version hash, run id, figures)."""
    figures = json.loads(
        json.dumps(agreement, default=str)
    )  # hash what the file holds, after a JSON round trip
    return canonical_hash(
        {
            "prompt_hash": prompt_hash,
            "dataset_hash": figures.get("dataset_id"),
            "run_id": figures.get("run"),
            "figures": figures,
        }
    )


def _figures(block: dict[str, Any], fmt: Any) -> str:
    """'Spearman 0.412, quadratic kappa 0.301' of the judge's agreement."""
    return f"Spearman {fmt(block.get('spearman'))}, quadratic kappa {fmt(block.get('kappa_quadratic'))}"


def _span(summary: Any) -> str:
    """'0.612 to 0.734 (mean 0.690)' of a raters' summary, 'none' when no rater had a figure."""
    if not isinstance(summary, dict) or not summary.get("raters"):
        return "none"
    return f"{summary['min']:.3f} to {summary['max']:.3f} (mean {summary['mean']:.3f})"


def agreement_summary(agreement: dict[str, Any]) -> str:
    """The judge's figures beside the raters' own when the agreement carries them (exports before it do not)."""

    def fmt(value: Any) -> str:
        return "n/a" if not isinstance(value, int | float) else f"{value:.3f}"

    text = f"judge against people: {_figures(agreement, fmt)} ({agreement.get('reading', '?')} reading)"
    raters = agreement.get("raters")
    if not isinstance(raters, dict):
        return text + "; the raters' own agreement: not measured (no per-rater ratings)"
    return (
        f"{text}; the raters' own ({raters.get('against')}): Spearman {_span(raters.get('spearman'))}, "
        f"quadratic kappa {_span(raters.get('kappa_quadratic'))}"
    )


DECODING_FIELDS = ("temperature", "n", "top_logprobs", "max_tokens", "seed", "reasoning_effort")
JUDGE_FIELDS = ("provider", "model")


def _known(section: str, data: Any, allowed: tuple[str, ...], said: list[str]) -> dict[str, Any]:
    """A section's fields, only those an export has; a server URL anywhere is dropped with a warning (a file
    never chooses where requests and the key go), any other unknown field refused."""
    if not isinstance(data, dict):
        raise InputError(f"not a valid prompt export: {section} must be an object", field=section)
    data = dict(data)
    url = data.pop("base_url", None)
    if url:
        said.append(
            f"the export names a server ({shown_url(str(url))}) under {section}; ignored: a file never "
            "chooses where requests and your key go. Name your server yourself: --base-url, the "
            "sidebar's Base URL, or score_item(..., base_url=...)"
        )
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InputError(
            f"not a valid prompt export: {section} has unknown fields {', '.join(map(repr, unknown))}",
            field=f"{section}.{unknown[0]}",
        )
    return data


DIMENSION_TEXTS = ("name", "definition", "template", "steps_model")  # a dimension file's text fields
DIMENSION_KEYS = tuple(f.name for f in fields(Dimension))  # every key a dimension file may hold
EXPORT_TEXTS = (
    "dimension",
    "definition",
    "template",
    "steps_model",
)  # an export names the dimension "dimension"


def check_shape(data: Any, texts: tuple[str, ...], what: str, source: str | None = None) -> None:
    """Fields of the types a Dimension holds (`texts` text, inputs and steps lists of texts, anchors texts, scale
    and judge objects); InputError naming the first wrong one, before a check deep inside trips over it."""
    if not isinstance(data, dict):
        raise InputError(f"{what}: expected a JSON object, got {type(data).__name__}", file=source)
    for key in texts:
        if data.get(key) is not None and not isinstance(data[key], str):
            raise InputError(f"{what}: {key} must be text", file=source, field=key)
    for key in ("inputs", "steps"):
        value = data.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise InputError(f"{what}: {key} must be a list of texts", file=source, field=key)
    anchors = data.get("anchors")
    if anchors is not None and not (
        isinstance(anchors, dict) and all(isinstance(v, str) for v in anchors.values())
    ):
        raise InputError(f"{what}: anchors must map each scale point to a text", file=source, field="anchors")
    for key in ("scale", "judge"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise InputError(f"{what}: {key} must be an object", file=source, field=key)


def _dimension(data: dict[str, Any], judge_data: dict[str, Any], said: list[str]) -> Dimension:
    """The Dimension an export describes; InputError when a field has the wrong shape."""
    decoding = _known("decoding", data["decoding"], DECODING_FIELDS, said)
    try:
        floor = data["scoring"].get("valid_mass_floor", JudgeSettings().valid_mass_floor)
        judge = JudgeSettings(**judge_data, **decoding, mode=data["scoring"]["mode"], valid_mass_floor=floor)
        return Dimension(
            name=data["dimension"],
            definition=data["definition"],
            scale=Scale(**data["scale"]),
            anchors={int(k): v for k, v in data["anchors"].items()},
            inputs=tuple(data["inputs"]),
            steps=tuple(data["steps"]),
            steps_model=data.get("steps_model") or "",
            template=data["template"],
            judge=judge,
        )
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise InputError(f"not a valid prompt export: {exc}") from None


def _check_like_a_freeze(dim: Dimension) -> None:
    """The checks a freeze makes (import and load_prompt alike): InputError listing every failed one."""
    failed = errors(dimension_checks(dim))
    if failed:
        raise InputError(
            "the export's prompt fails the checks a freeze makes: "
            + "; ".join(f"{c.field}: {c.message}" for c in failed),
            field=failed[0].field,
        )
    check_dimension_name(dim.name)


def _judge_fields(data: dict[str, Any], said: list[str]) -> dict[str, Any]:
    """The export's judge fields without a server URL; a URL in the file is reported in `said`, never used."""
    return _known("judge", data["judge"], JUDGE_FIELDS, said)


def _checked_agreement(data: dict[str, Any], prompt_hash: str, said: list[str]) -> dict[str, Any] | None:
    """The attached agreement when it matches its own hash; otherwise None, with the reason in `said`."""
    agreement = data.get("agreement")
    if agreement is None:
        return None
    stored = data.get("agreement_hash")
    if not isinstance(agreement, dict) or stored is None or stored != agreement_hash(prompt_hash, agreement):
        why = "carries no agreement_hash" if stored is None else "does not match its agreement_hash"
        said.append(
            f"the attached agreement {why} (over this prompt's hash, the dataset version, the run and "
            "the figures); dropped: measure it again on a run of this prompt"
        )
        return None
    return agreement


def _label(data: dict[str, Any], dim: Dimension, said: list[str]) -> tuple[str, int]:
    """The export's name and version (unverified labels); a name that breaks the naming rule is replaced."""
    name = data.get("name") or slug(dim.name)
    if not is_name(name):
        said.append(
            f"the export's name {str(name)[:80]!r} is not a usable prompt name; using {slug(dim.name)!r}"
        )
        name = slug(dim.name)
    version = data.get("version")
    return name, version if isinstance(version, int) and not isinstance(version, bool) and version > 0 else 1


def open_export(data: dict[str, Any]) -> LoadedExport:
    """Check an export: content against its hash (IntegrityError), agreement against its own; no server kept."""
    if not isinstance(data, dict):
        raise InputError("not a prompt export: expected a JSON object")
    _require(
        data,
        "schema_version",
        "content_hash",
        "dimension",
        "definition",
        "scale",
        "anchors",
        "inputs",
        "steps",
        "template",
        "judge",
        "decoding",
        "scoring",
    )
    if not isinstance(data["schema_version"], int) or data["schema_version"] > SCHEMA_VERSION:
        raise InputError(
            f"export schema_version {data['schema_version']!r} is newer than this workbench "
            f"reads ({SCHEMA_VERSION}); upgrade geval-workbench",
            field="schema_version",
        )
    check_shape(data, EXPORT_TEXTS, "not a valid prompt export")
    said: list[str] = []
    dim = _dimension(data, _judge_fields(data, said), said)
    _check_like_a_freeze(dim)
    actual = content_hash(dim)
    if actual != data["content_hash"]:
        raise IntegrityError(
            f"the export's content does not match its hash (stored "
            f"{str(data['content_hash'])[:12]}, computed {actual[:12]}): the file was "
            "changed after export; export it again from the library"
        )
    agreement = _checked_agreement(data, actual, said)
    name, version = _label(data, dim, said)
    return LoadedExport(
        FrozenPrompt(actual, name, version, dim, str(data.get("created_at") or "")), agreement, said
    )


def prompt_from_export(data: dict[str, Any]) -> FrozenPrompt:
    """Rebuild the frozen prompt (IntegrityError when the content does not match its hash); ignored parts warn."""
    loaded = open_export(data)
    for message in loaded.warnings:
        warnings.warn(message, ExportWarning, stacklevel=2)
    return loaded.prompt


def write_export(prompt: FrozenPrompt, path: str | Path, agreement: dict[str, Any] | None = None) -> Path:
    """Write the export JSON to `path` (UTF-8, indented)."""
    path = Path(path)
    path.write_text(
        json.dumps(export_prompt(prompt, agreement, path.name), indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return path


TOO_DEEP = "nested too deeply to read (JSON nested thousands of levels)"


def parse_json(text: str, what: str, source: str) -> Any:
    """JSON text as data; InputError naming `source` for broken JSON (with its line) or JSON nested too deeply."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"cannot read the {what}: broken JSON: {exc.msg} at column {exc.colno}",
            file=source,
            line=exc.lineno,
        ) from None
    except RecursionError:  # Python's parser gives up past its recursion limit: no file of ours is that deep
        raise InputError(f"cannot read the {what}: {TOO_DEEP}", file=source) from None


def _read_json(path: str | Path, what: str) -> Any:
    """The JSON in a file; InputError naming the file (and the line for broken JSON)."""
    try:
        return parse_json(Path(path).read_text(encoding="utf-8"), what, str(path))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"cannot read the {what}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); "
            "save the file as UTF-8",
            file=str(path),
            line=1 + exc.object[: exc.start].count(b"\n"),
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=str(path)) from None


def read_export(path: str | Path) -> dict[str, Any]:
    """The JSON of an export file; InputError when it is not readable JSON."""
    return _read_json(path, "prompt export")


def read_agreement(path: str | Path) -> dict[str, Any]:
    """An agreement JSON object for an export (e.g. `geval agree --json` output); InputError otherwise."""
    data = _read_json(path, "agreement file")
    if not isinstance(data, dict):
        raise InputError(
            f"expected one JSON object (e.g. the output of `geval agree --json`), got {type(data).__name__}",
            file=str(path),
        )
    return data


def load_prompt(path: str | Path) -> FrozenPrompt:
    """Load an exported prompt file for production scoring (hash-checked; a server URL in it is ignored)."""
    loaded = open_export(read_export(path))
    for message in loaded.warnings:
        warnings.warn(f"{path}: {message}", ExportWarning, stacklevel=2)
    return loaded.prompt


def export_filename(prompt: FrozenPrompt) -> str:
    """name@version.json with anything but letters, digits and - _ . replaced (a file name, never a path)."""
    return re.sub(r"[^\w.-]+", "-", prompt.name).strip(".-") + f"@{prompt.version}.json"


def production_snippet(prompt: FrozenPrompt, path: str | None = None) -> str:
    """A few lines of Python that load this export and score one item; every value is a Python literal."""
    fields = (
        "{"
        + ", ".join(f"{f!r}: {'your ' + f.replace('_', ' ') + ' text'!r}" for f in prompt.dimension.inputs)
        + "}"
    )
    return SNIPPET.format(path=repr(str(path or export_filename(prompt))), fields=fields)
