"""The fixed Python of the Inspect AI export around its scoring rules (inspect_rules_code): the imports, and the
scorer, metric, solver and task that ask the judge and score its reply. Plain text, never formatted: the export
puts the prompt's own values (literals) in front of it."""

from __future__ import annotations

IMPORTS = """\
from __future__ import annotations

import math
import re
import statistics

from inspect_ai import Task, task
from inspect_ai.dataset import Sample, csv_dataset, json_dataset
from inspect_ai.model import ChatMessageUser, GenerateConfig, ModelOutput, get_model
from inspect_ai.scorer import SampleScore, Score, Target, mean, metric, scorer, stderr
from inspect_ai.solver import TaskState, solver
"""

TASK = '''
# ---- Inspect ---------------------------------------------------------------------------------------------------

def choices_of(output: ModelOutput) -> list:
    """Each reply's text and its positions [(token, logprob, [(token, logprob), ...]), ...], None without."""
    replies = []
    for choice in output.choices:
        content = choice.logprobs.content if choice.logprobs is not None else None
        positions = [(lp.token, lp.logprob, [(t.token, t.logprob) for t in lp.top_logprobs or []])
                     for lp in content] if content else None
        replies.append((choice.message.text, positions))
    return replies


async def judge_item(model, fields: dict[str, str]) -> dict:
    """Ask the judge as the frozen prompt does and score its reply: log-probabilities first (logprobs and auto
    mode), n sampled replies in sampling mode and when an auto-mode reply has none."""
    messages = [ChatMessageUser(content=render(fields))]
    if LOGPROBS_CONFIG is not None:
        choices = choices_of(await model.generate(messages, config=LOGPROBS_CONFIG))
        if any(positions for _, positions in choices):
            return logprobs_result(choices)
        if SAMPLING_CONFIG is None:
            return {"score": None, "note": "the judge returned no log-probabilities (this prompt's mode is logprobs)"}
    output = await model.generate(messages, config=SAMPLING_CONFIG)
    return {**sampled_result([text for text, _ in choices_of(output)]), "fallback": LOGPROBS_CONFIG is not None}


@metric
def passed():
    """The share of scored items whose score is at least PASS_AT (the exported pass rule)."""
    def share(scores: list[SampleScore]) -> float:
        values = [s.score.as_float() for s in scores if not math.isnan(s.score.as_float())]
        return sum(v >= PASS_AT for v in values) / len(values) if values else 0.0
    return share


@scorer(metrics=[mean(), stderr(), *([passed()] if PASS_AT is not None else [])])
def geval_judge(judge: str | None = None):
    """The frozen G-Eval prompt as an Inspect scorer: the judge is `judge`, else the grader role, else the model
    under evaluation. The judged text is the sample's own (its last input), else the solver's output."""
    async def score(state: TaskState, target: Target) -> Score:
        fields = dict(state.metadata.get("inputs") or {})
        fields.setdefault(INPUTS[-1], state.output.completion)
        missing = [name for name in INPUTS if not isinstance(fields.get(name), str)]
        if missing:
            raise ValueError(f"the sample has no text for the input {missing[0]!r} (inputs: {', '.join(INPUTS)})")
        model = get_model(judge) if judge else get_model(role="grader")
        result = await judge_item(model, fields)
        metadata = {"content_hash": CONTENT_HASH, **result}
        if result["score"] is None:
            return Score.unscored(reason=result["note"], explanation=result["note"], metadata=metadata)
        if PASS_AT is not None:
            metadata["passed"] = result["score"] >= PASS_AT
        answer = result.get("top_rating", (result.get("values") or [None])[0])
        return Score(value=result["score"], answer=str(answer), explanation=explain(result), metadata=metadata)
    return score


def explain(result: dict) -> str:
    """One line saying how the score came about."""
    if result["mode"] == "sampling":
        return f"mean of {result['parsed']} parsed replies {result['values']} ({result['unparsed']} unparsed)"
    shares = ", ".join(f"{r}: {p:.3f}" for r, p in result["distribution"].items())
    return (f"Eq. 1 over ratings {SCALE[0]}-{SCALE[1]}: {shares}; valid mass {result['valid_mass']:.1%}; "
            f"top rating {result['top_rating']}")


def record_to_sample(record: dict) -> Sample:
    """One item of the dataset file: a text field per input (as the workbench requires), its id when it has one."""
    bad = [name for name in INPUTS if not isinstance(record.get(name), str)]
    if bad:
        raise ValueError(f"item {record.get('id', '?')}: {bad[0]!r} is missing or not text; the file needs a text "
                         f"field for each input: {', '.join(INPUTS)}")
    fields = {name: record[name] for name in INPUTS}
    return Sample(input=fields[INPUTS[0]], id=record.get("id"), metadata={"inputs": fields})


@solver
def items_as_given():
    """The items carry what is judged: nothing to generate before the scorer."""
    async def solve(state: TaskState, generate):
        return state
    return solve


@task
def geval(dataset: str, judge: str | None = None) -> Task:
    """Score a JSONL or CSV file of items (a field per input, an optional id) with the frozen prompt."""
    reader = csv_dataset if str(dataset).lower().endswith(".csv") else json_dataset
    return Task(dataset=reader(dataset, sample_fields=record_to_sample), solver=items_as_given(),
                scorer=geval_judge(judge), metadata={"content_hash": CONTENT_HASH, "prompt": PROMPT_LABEL})
'''
