"""The examples a new library starts with: four frozen prompts and the `sample` dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import geval_core
from geval_core.types import Dimension

from .datasets import DatasetMapping, read_items

if TYPE_CHECKING:
    from .library import Library


def sample_dir() -> Path:
    """The sample set's folder: geval_core/sample_data in an installed wheel, sample_data/ at a checkout's root."""
    installed = Path(geval_core.__file__).resolve().parent / "sample_data"
    return installed if installed.is_dir() else Path(__file__).resolve().parent.parent / "sample_data"


SAMPLE_DIR = sample_dir()
DIMENSIONS_FILE = SAMPLE_DIR / "dimensions.json"
SAMPLE_FILE = SAMPLE_DIR / "sample.jsonl"
SAMPLE_NAME = "sample"
SAMPLE_MAPPING = DatasetMapping(
    id="id",
    inputs={"document": "document", "summary": "summary"},
    human={d: f"ratings.{d}" for d in ("coherence", "consistency", "fluency", "relevance")},
    group="doc_id",
)
SEEDED_KEY = "seeded"


def example_dimensions() -> list[Dimension]:
    """The shipped example dimensions (coherence, consistency, fluency, relevance)."""
    data = json.loads(DIMENSIONS_FILE.read_text(encoding="utf-8"))
    return [Dimension.from_dict(d) for d in data["dimensions"]]


def seed(library: Library) -> None:
    """Freeze the example prompts and import the sample set (caller holds the write lock)."""
    for dimension in example_dimensions():
        library.freeze(dimension, name=dimension.name.lower())
    items = read_items(SAMPLE_FILE, SAMPLE_MAPPING)
    library.import_items(
        SAMPLE_NAME, items, source="sample_data/sample.jsonl (shipped example)", mapping=SAMPLE_MAPPING
    )
