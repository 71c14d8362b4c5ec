"""The DeepEval export: a Python file defining a GEval metric with the frozen steps, definition and rubric,
and `make_test_case`, which maps the prompt's inputs onto DeepEval's test-case fields."""

from __future__ import annotations

from ..types import ExportedJudge, FrozenPrompt
from .export_common import (
    comment_block,
    judge_losses,
    pass_rule,
    provenance,
    scale_share,
    share_formula,
    shows_definition,
)

# DeepEval's test-case fields, in the order the prompt's inputs take them (the last input is ACTUAL_OUTPUT).
# Never EXPECTED_OUTPUT: DeepEval's prompt shows it as "Expected Output", a reference answer, and a G-Eval input
# between the first and the judged one is a source (a document, a context), not that. DeepEval 4.3.1 has no
# other string field, so a second and third input go to the list fields, shown as Python's repr.
DEEPEVAL_FIELDS = ("INPUT", "CONTEXT", "RETRIEVAL_CONTEXT")
DEEPEVAL_LIST_FIELDS = ("CONTEXT", "RETRIEVAL_CONTEXT")  # typed List[str] by DeepEval's LLMTestCase
# DeepEval (4.1.10 to 4.3.1, the same list) weights a GEval score by log-probabilities only for these model names: the entries of
# deepeval/models/llms/constants.py OPENAI_MODELS_DATA with supports_log_probs=True (no_log_prob_support in
# metrics/g_eval/utils.py). Any other name, every self-hosted model among them, gets the judge's stated score.
DEEPEVAL_LOGPROB_MODELS = frozenset(
    {
        "gpt-3.5-turbo",
        "gpt-3.5-turbo-0125",
        "gpt-3.5-turbo-1106",
        "gpt-4",
        "gpt-4-0125-preview",
        "gpt-4-1106-preview",
        "gpt-4-turbo",
        "gpt-4-turbo-2024-04-09",
        "gpt-4-turbo-preview",
        "gpt-4-32k",
        "gpt-4-32k-0613",
        "gpt-4o",
        "gpt-4o-2024-05-13",
        "gpt-4o-2024-08-06",
        "gpt-4o-2024-11-20",
        "gpt-4o-mini",
        "gpt-4o-mini-2024-07-18",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-5.4",
        "gpt-5.4-2026-03-05",
    }
)

DEEPEVAL_TEMPLATE = '''\
{comment}"""A DeepEval GEval metric with the frozen evaluation steps: DeepEval uses them as given, never regenerating."""

from deepeval.metrics import GEval
from deepeval.metrics.g_eval import Rubric
from deepeval.test_case import LLMTestCase

try:  # DeepEval 3.9.9 and later name the test-case fields SingleTurnParams; earlier ones LLMTestCaseParams
    from deepeval.test_case import SingleTurnParams as _Params
except ImportError:
    from deepeval.test_case import LLMTestCaseParams as _Params

CONTENT_HASH = {hash}
{criteria}EVALUATION_STEPS = {steps}
# Each input of the frozen prompt and the DeepEval test-case field that carries it.
INPUT_FIELDS = {fields}
# DeepEval types these fields as lists of strings: make_test_case passes such an input as a one-element list.
LIST_FIELDS = {list_fields}
RUBRIC = {rubric}  # (rating, what it means), from the frozen anchors
{threshold_comment}
THRESHOLD = {threshold}

metric = GEval(
    name={name},
    evaluation_steps={steps_sent},
    rubric=[Rubric(score_range=(point, point), expected_outcome=text) for point, text in RUBRIC] or None,
    evaluation_params=[getattr(_Params, field) for field in INPUT_FIELDS.values()],
    model={model},
    threshold=THRESHOLD,
    top_logprobs={top_logprobs},
)


def make_test_case(**inputs: str) -> LLMTestCase:
    """A DeepEval test case from the frozen prompt's inputs by name, each in its INPUT_FIELDS field."""
    missing = [name for name in INPUT_FIELDS if name not in inputs]
    if missing:
        raise TypeError("make_test_case needs every input of the frozen prompt; missing: " + ", ".join(missing))
    fields = {{getattr(_Params, field).value: [inputs[name]] if field in LIST_FIELDS else inputs[name]
              for name, field in INPUT_FIELDS.items()}}
    fields.setdefault("input", "")  # LLMTestCase requires `input`; when no input maps to it, it is not judged
    return LLMTestCase(**fields)
'''


def deepeval_fields(prompt: FrozenPrompt) -> dict[str, str]:
    """Input -> DeepEval test-case field: the last input is ACTUAL_OUTPUT, the others INPUT, CONTEXT, ..."""
    *others, output = prompt.dimension.inputs
    return {**dict(zip(others, DEEPEVAL_FIELDS, strict=False)), output: "ACTUAL_OUTPUT"}


def deepeval_model(prompt: FrozenPrompt, facts: ExportedJudge) -> str | None:
    """The model name DeepEval is given: the frozen one for a judge whose models are OpenAI's, else none."""
    judge = prompt.dimension.judge
    return judge.model if facts.openai_model and judge.model else None


def criteria_step(prompt: FrozenPrompt) -> str:
    """The frozen definition as the template's criteria line shows it: 'Name (1-5) - definition'."""
    dim = prompt.dimension
    return f"{dim.name} ({dim.scale}) - {dim.definition.strip()}"


def weighting_loss(prompt: FrozenPrompt, model: str | None) -> list[str]:
    """What becomes of the frozen scoring rule (Eq. 1, or sampled ratings) in DeepEval, for this model name."""
    if (
        prompt.dimension.judge.mode == "sampling"
    ):  # sampling n is judge_losses' note; only a weighting differs
        return (
            [
                f"sampling mode: the frozen score weights no probabilities, but DeepEval weights its stated score "
                f"by log-probabilities for {model}"
            ]
            if model in DEEPEVAL_LOGPROB_MODELS
            else []
        )
    return [_weighting(model)]


def _weighting(model: str | None) -> str:
    """The logprobs-mode note: DeepEval weights in part for the models it lists, for any other not at all."""
    if model in DEEPEVAL_LOGPROB_MODELS:
        return (
            f"the probability weighting, in part: DeepEval weights its stated score by the top_logprobs of that "
            f"score's token for {model}, dropping alternatives under 1% and renormalising over the rest, not "
            "Eq. 1 over the rating position's full distribution"
        )
    named = f"for {model}" if model else "for a model you set"
    return (
        f"the probability weighting is lost {named}: DeepEval (4.1.10 to 4.3.1) weights only for the OpenAI models it "
        "lists as supporting logprobs (gpt-4o, gpt-4.1, gpt-4o-mini, ...), so it reads the one score the judge "
        "states" + ("" if model else " unless that model is one of them")
    )


def deepeval_losses(prompt: FrozenPrompt, model: str | None) -> list[str]:
    """Everything of this frozen prompt the DeepEval metric does not carry."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    fields = deepeval_fields(prompt)
    lost = [
        *weighting_loss(prompt, model),
        *judge_losses(prompt, "DeepEval"),
        "the frozen template: DeepEval writes its own prompt around the steps, the rubric and the test-case "
        "fields, and asks for a JSON verdict; the scale's score is normalised to 0-1",
        "field names: DeepEval shows the inputs as " + ", ".join(f"{k} -> {v}" for k, v in fields.items()),
    ]
    lists = [name for name, field in fields.items() if field in DEEPEVAL_LIST_FIELDS]
    if lists:
        lost.append(
            f"{', '.join(lists)} {'goes' if len(lists) == 1 else 'go'} into list fields (make_test_case wraps each as a one-element list); "
            "DeepEval shows a list to its judge as Python's repr, quotes and \\n escapes included (never "
            "EXPECTED_OUTPUT, which DeepEval shows as a reference answer; map an input that is one there "
            "by editing INPUT_FIELDS)"
        )
    if len(fields) < len(dim.inputs):
        lost.append(f"inputs beyond {len(DEEPEVAL_FIELDS) + 1}: DeepEval has no field for them")
    if not shows_definition(prompt):
        lost.append("the definition: the frozen template does not show it, so the metric leaves it out too")
    if getattr(dim, "examples", ()):  # rated items the template shows under their anchors
        lost.append("the rated examples under the anchors: DeepEval's rubric holds the anchor texts only")
    if not fits_rubric(prompt):
        lost.append(
            f"the anchors: the scale {dim.scale} lies outside DeepEval's 0-10 rubric ranges, so DeepEval "
            "rates on its own 0-10 scale"
        )
    if judge.temperature != 0:
        lost.append(
            f"temperature={judge.temperature}: DeepEval's model uses its own (0 unless TEMPERATURE is set)"
        )
    if judge.seed is not None:
        lost.append(f"seed={judge.seed}: DeepEval sends no seed")
    if judge.reasoning_effort:
        lost.append(
            f"reasoning_effort={judge.reasoning_effort}: a model name alone sends none; DeepEval's (4.1 to 4.3) "
            "OpenAIModel(model=..., generation_kwargs={'reasoning_effort': ...}) as model= can carry it"
        )
    if model is None:
        lost.append(f"the frozen judge {judge.judge_id}: set model= to a DeepEval model of your choice")
    return lost


def fits_rubric(prompt: FrozenPrompt) -> bool:
    """Whether the scale lies within DeepEval's 0-10 rubric ranges (Rubric refuses others)."""
    scale = prompt.dimension.scale
    return scale.min >= 0 and scale.max <= 10


def deepeval_threshold(prompt: FrozenPrompt, pass_at: float | None) -> tuple[float, list[str]]:
    """GEval's threshold on DeepEval's 0-1 score for the pass rule, and the comment lines that say it."""
    if pass_at is None:  # GEval's own default (0.5) would be a pass rule the frozen prompt never had
        return 0.0, pass_rule(
            prompt,
            None,
            "",
            "THRESHOLD is 0, so every scored item passes (GEval's default "
            "0.5 would be a rule the frozen prompt does not have).",
        )
    threshold, dim_scale = scale_share(prompt, pass_at), prompt.dimension.scale
    scale = (
        f"DeepEval reports (score - {dim_scale.min}) / {dim_scale.max - dim_scale.min} over the rubric's "
        f"{dim_scale} range"
        if fits_rubric(prompt)
        else "DeepEval rates 0-10 here and reports score / 10; the frozen scale is mapped linearly onto it"
    )
    how = (
        f"THRESHOLD = {share_formula(prompt, pass_at)} = {threshold!r} on DeepEval's 0-1 score ({scale}); "
        "GEval passes when score >= threshold."
    )
    return threshold, pass_rule(prompt, pass_at, how, "")


def deepeval_metric(prompt: FrozenPrompt, pass_at: float | None = None, *, facts: ExportedJudge) -> str:
    """A Python file defining `metric`, a DeepEval GEval with the frozen steps, definition, rubric and inputs."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    model = deepeval_model(prompt, facts)
    rubric = [(p, dim.anchors.get(p, "")) for p in dim.scale.points] if fits_rubric(prompt) else []
    threshold, rule = deepeval_threshold(prompt, pass_at)
    criteria, steps_sent = "", "EVALUATION_STEPS"
    if shows_definition(prompt):  # with evaluation_steps given, DeepEval never sends `criteria` to its judge
        criteria = (
            "# The frozen definition leads the steps: given evaluation_steps, DeepEval's prompt holds no "
            f"`criteria`.\nCRITERIA = {criteria_step(prompt)!r}\n"
        )
        steps_sent = "[CRITERIA, *EVALUATION_STEPS]"
    return DEEPEVAL_TEMPLATE.format(
        comment=comment_block(provenance(prompt, "DeepEval", deepeval_losses(prompt, model), rule)),
        hash=repr(prompt.id),
        criteria=criteria,
        steps=py_list(list(dim.steps)),
        fields=repr(deepeval_fields(prompt)),
        list_fields=repr(DEEPEVAL_LIST_FIELDS),
        rubric=py_list(rubric),
        threshold_comment=comment_block(rule).rstrip("\n"),
        threshold=repr(threshold),
        name=repr(dim.name),
        steps_sent=steps_sent,
        model=repr(model),
        top_logprobs=repr(judge.top_logprobs),
    )


def py_list(values: list) -> str:
    """A Python list literal, one repr'd value a line."""
    if not values:
        return "[]"
    return "[\n" + "".join(f"    {value!r},\n" for value in values) + "]"
