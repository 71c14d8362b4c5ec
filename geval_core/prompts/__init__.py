"""A prompt from its parts: rendering, the content hash, names, inputs, pre-freeze checks, evaluation steps.

The package re-exports the rendering and hashing names, so `from geval_core.prompts import render` works.
"""

from .hash import canonical_hash, canonical_json, content_hash, metric_fields
from .render import (
    DIMENSION_FIELDS,
    FORM_HEADER,
    INTRO,
    PLACEHOLDER,
    default_template,
    field_title,
    form_line,
    format_anchors,
    format_steps,
    messages,
    placeholders,
    render,
    template_of,
)

__all__ = [
    "DIMENSION_FIELDS",
    "FORM_HEADER",
    "INTRO",
    "PLACEHOLDER",
    "canonical_hash",
    "canonical_json",
    "content_hash",
    "default_template",
    "field_title",
    "form_line",
    "format_anchors",
    "format_steps",
    "messages",
    "metric_fields",
    "placeholders",
    "render",
    "template_of",
]
