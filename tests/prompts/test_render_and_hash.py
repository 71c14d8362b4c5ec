"""Rendering and hashing of judge prompts."""

from functools import partial

from runner_helpers import dimension

from geval_core.prompts import content_hash, default_template, form_line, placeholders, render
from geval_core.types import Dimension, Item, JudgeSettings, Scale

# A three-point Coherence dimension over document and summary.
coherence = partial(
    dimension,
    definition="The collective quality of all sentences.",
    scale=Scale(1, 3),
    anchors={1: "Incoherent.", 2: "Partly coherent.", 3: "Well structured."},
    steps=("Read the article.", "Read the summary.", "Rate it."),
)


def test_default_template_puts_fixed_part_first_and_ends_on_the_form():
    template = default_template(("document", "summary"))
    assert placeholders(template) == [
        "name",
        "scale",
        "definition",
        "anchors",
        "steps",
        "document",
        "summary",
    ]
    assert template.index("{{steps}}") < template.index("{{document}}")
    assert template.endswith("Evaluation Form (scores ONLY):\n\n- {{name}}:")


def test_render_fills_every_placeholder_and_never_expands_item_text():
    item = Item("a", {"document": "The {{name}} doc.", "summary": "S <script>"})
    text = render(coherence(), item)
    assert "Coherence (1-3) - The collective quality of all sentences." in text
    assert "- 3: Well structured.\n- 2: Partly coherent.\n- 1: Incoherent." in text
    assert "1. Read the article.\n2. Read the summary.\n3. Rate it." in text
    assert "The {{name}} doc." in text and "S <script>" in text
    assert text.endswith("- Coherence:")
    assert form_line(coherence()) == "- Coherence: "


def test_content_hash_covers_metric_but_not_server_url():
    base = coherence()
    same = Dimension(**{**base.__dict__, "judge": JudgeSettings(base_url="http://127.0.0.1:1/v1")})
    other = Dimension(**{**base.__dict__, "judge": JudgeSettings(temperature=1.0, mode="sampling", n=20)})
    assert content_hash(base) == content_hash(same)
    assert content_hash(base) != content_hash(other)
    assert len(content_hash(base)) == 64
