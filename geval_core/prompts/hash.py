"""The content hash that names a frozen prompt: sha256 over the canonical JSON of what defines the metric."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..types import Dimension, JudgeSettings
from .render import template_of

# Every prompt frozen before the floor existed was scored with this one: it keeps its hash.
DEFAULT_VALID_MASS_FLOOR = JudgeSettings().valid_mass_floor


def metric_fields(dimension: Dimension) -> dict:
    """Everything that defines the metric (what the content hash covers)."""
    judge = dimension.judge
    return {
        "name": dimension.name,
        "definition": dimension.definition,
        "scale": [dimension.scale.min, dimension.scale.max],
        "anchors": {str(k): dimension.anchors[k] for k in sorted(dimension.anchors)},
        "inputs": list(dimension.inputs),
        "steps": list(dimension.steps),
        "template": template_of(dimension),
        # Only when there are some: every prompt frozen before examples existed keeps its hash.
        **({"examples": [e.to_dict() for e in dimension.examples]} if dimension.examples else {}),
        "judge": {
            "provider": judge.provider,
            "model": judge.model,
            "mode": judge.mode,
            "n": judge.n,
            "temperature": judge.temperature,
            "top_logprobs": judge.top_logprobs,
            "max_tokens": judge.max_tokens,
            "seed": judge.seed,
            # Only when set: every prompt frozen before the setting existed keeps its hash.
            **({"reasoning_effort": judge.reasoning_effort} if judge.reasoning_effort is not None else {}),
            **(
                {"valid_mass_floor": judge.valid_mass_floor}
                if judge.valid_mass_floor != DEFAULT_VALID_MASS_FLOOR
                else {}
            ),
        },
    }


# json.dumps with options builds a new encoder per call; this one is built once (the same text).
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def canonical_json(value: Any) -> str:
    """A value's canonical JSON: sorted keys, no spaces, non-ASCII kept."""
    return _canonical(value)


def canonical_hash(value: Any) -> str:
    """sha256 hex of a value's canonical JSON (UTF-8)."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def content_hash(dimension: Dimension) -> str:
    """sha256 over the canonical JSON of the metric-defining fields."""
    return canonical_hash(metric_fields(dimension))
