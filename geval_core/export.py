"""The production snippet's import: `from geval_core.export import load_prompt, score_item` (and
`score_items` for many rows at once).

Files and scoring live in their layers (files.prompt_files, run.one_item); this module keeps the documented
names where the snippet and its users find them.
"""

from .files.prompt_files import (
    JUDGMENT_FIELDS,
    SCHEMA_VERSION,
    ExportWarning,
    LoadedExport,
    agreement_hash,
    export_filename,
    export_judgments,
    export_prompt,
    load_prompt,
    open_export,
    production_snippet,
    prompt_from_export,
    read_agreement,
    read_export,
    write_export,
    write_judgments,
)
from .run.many_items import score_items
from .run.one_item import score_item

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
    "score_item",
    "score_items",
    "write_export",
    "write_judgments",
]
