"""Exports other judge tools load: a DeepEval GEval metric, a promptfoo llm-rubric assertion, an OpenAI
score_model grader (the graders API), an Inspect AI task. Each names the frozen prompt (hash) it came from, states
every setting the tool cannot reproduce, and carries the pass rule (`pass_at`, a rating on the prompt's scale) in
the tool's terms.

One module per tool (export_deepeval, export_promptfoo, export_openai, export_inspect) and export_common for what
they share; this module is the table the CLI's --format and the Library page read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..types import ExportedJudge, FrozenPrompt
from .export_common import check_pass_at, one_line, provenance, rendered_with
from .export_deepeval import DEEPEVAL_FIELDS, DEEPEVAL_LOGPROB_MODELS, deepeval_fields, deepeval_metric
from .export_inspect import inspect_task
from .export_openai import item_fields, openai_grader, openai_template_text
from .export_promptfoo import (
    PROMPTFOO_LOADER_PREFIXES,
    nunjucks_text,
    promptfoo_assertion,
    promptfoo_text,
    promptfoo_threshold,
    unloadable,
    yaml_scalar,
)
from .prompt_files import export_filename, export_prompt

__all__ = [
    "DEEPEVAL_FIELDS",
    "DEEPEVAL_LOGPROB_MODELS",
    "EXPORT_FORMATS",
    "FORMATS",
    "PROMPTFOO_LOADER_PREFIXES",
    "ExportFormat",
    "check_pass_at",
    "deepeval_fields",
    "deepeval_metric",
    "inspect_task",
    "item_fields",
    "nunjucks_text",
    "one_line",
    "openai_grader",
    "openai_template_text",
    "promptfoo_assertion",
    "promptfoo_text",
    "promptfoo_threshold",
    "provenance",
    "rendered_with",
    "tool_export",
    "tool_filename",
    "unloadable",
    "yaml_scalar",
]

# A writer: (prompt, agreement, pass rule, the judge's facts) -> the file's text.
Writer = Callable[[FrozenPrompt, "dict[str, Any] | None", "float | None", ExportedJudge], str]


@dataclass(frozen=True)
class ExportFormat:
    """One export format: how it is named to people, the file name's suffix, its MIME type, its writer."""

    label: str
    suffix: str
    mime: str
    write: Writer
    pass_rule: bool = True  # whether the format carries a pass rule (--pass-at)


def _json_export(
    prompt: FrozenPrompt, agreement: dict[str, Any] | None, _pass_at: float | None, _facts: ExportedJudge
) -> str:
    return (
        json.dumps(
            export_prompt(prompt, agreement, tool_filename(prompt, "json")), indent=2, ensure_ascii=False
        )
        + "\n"
    )


def tool_export(
    prompt: FrozenPrompt,
    fmt: str,
    agreement: dict[str, Any] | None = None,
    pass_at: float | None = None,
    *,
    facts: ExportedJudge,
) -> str:
    """The export of `prompt` in one of FORMATS, as text ready to write to a file.

    `pass_at` is the pass rule, a rating on the prompt's scale (InputError outside it, or for a format
    without pass rules). `facts` are the frozen judge's provider facts (providers.exports passes its spec's).
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}", field="format")
    if pass_at is not None and not EXPORT_FORMATS[fmt].pass_rule:
        raise InputError(f"the {fmt} export carries no pass rule", field="pass_at")
    check_pass_at(prompt, pass_at)
    return EXPORT_FORMATS[fmt].write(prompt, agreement, pass_at, facts)


def tool_filename(prompt: FrozenPrompt, fmt: str) -> str:
    """name@version plus the format's suffix (a file name, never a path)."""
    return export_filename(prompt).removesuffix(".json") + EXPORT_FORMATS[fmt].suffix


# Every format, stated once: the CLI's --format choices and the Library page's radio read this table.
EXPORT_FORMATS = {
    "json": ExportFormat(
        "JSON (this workbench, hash-checked)", ".json", "application/json", _json_export, pass_rule=False
    ),
    "deepeval": ExportFormat(
        "DeepEval metric (.py)",
        ".deepeval.py",
        "text/x-python",
        lambda prompt, _, pass_at, facts: deepeval_metric(prompt, pass_at, facts=facts),
    ),
    "promptfoo": ExportFormat(
        "promptfoo assertion (.yaml)",
        ".promptfoo.yaml",
        "application/yaml",
        lambda prompt, _, pass_at, facts: promptfoo_assertion(prompt, pass_at, facts=facts),
    ),
    # The Evals API is deprecated (shutdown November 30, 2026); its score_model grader lives on in the graders API.
    "openai-grader": ExportFormat(
        "OpenAI grader (.json, graders API)",
        ".openai-grader.json",
        "application/json",
        lambda prompt, _, pass_at, facts: openai_grader(prompt, pass_at, facts=facts),
    ),
    "inspect": ExportFormat(
        "Inspect AI task (.py)",
        ".inspect.py",
        "text/x-python",
        lambda prompt, _, pass_at, facts: inspect_task(prompt, pass_at, facts=facts),
    ),
}
FORMATS = tuple(EXPORT_FORMATS)
