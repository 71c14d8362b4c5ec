"""The Inspect AI export: a self-contained Python file defining an Inspect task whose scorer asks the judge with
the frozen prompt's one message, reads the log-probabilities at the rating position and scores Eq. 1 with the
valid-mass floor, by the rules of geval_core/scoring (written out in inspect_rules_code, never imported).

Every value from the prompt is a Python literal (repr) in a constant; comment lines are made single-line.
"""

from __future__ import annotations

from ..types import ExportedJudge, FrozenPrompt
from .export_common import comment_block, one_line, pass_rule, provenance, rendered_with
from .inspect_rules_code import RULES
from .inspect_scorer_code import IMPORTS, TASK

DOCSTRING = (
    '"""An Inspect AI task scoring items with a frozen G-Eval prompt as the G-Eval Workbench does: the same '
    "message,\nthe rating position's log-probabilities, Eq. 1 over the allowed ratings and no score below "
    'the valid-mass floor."""\n\n'
)
HEADING = (
    "What this file does not reproduce (its scores are the frozen metric's on the same replies: the same "
    "message, Eq. 1 renormalised over the allowed ratings, the valid-mass floor, signed and multi-token "
    "ratings, <think> blocks, the auto-mode fallback; these are the workbench's run rules around a score):"
)


def prompt_pieces(prompt: FrozenPrompt) -> list[str | tuple[str]]:
    """The rendered prompt as fixed text and (input name,) slots, in order."""
    pieces: list[str | tuple[str]] = []

    def kept(piece: str | tuple[str]) -> str:
        pieces.append(piece)
        return ""

    # rendered_with visits the fixed text and the slots in order; record them instead of joining them.
    rendered_with(prompt, kept, lambda name: kept((name,)))
    return [piece for piece in pieces if piece != ""]


def generate_config(prompt: FrozenPrompt, logprobs: bool) -> str:
    """The GenerateConfig(...) of the frozen decoding: with log-probabilities, or for n sampled replies."""
    judge = prompt.dimension.judge
    args: dict[str, object] = {"temperature": judge.temperature, "max_tokens": judge.max_tokens}
    if logprobs:
        args.update(logprobs=True, top_logprobs=judge.top_logprobs)
    if judge.n > 1:  # the workbench asks for n replies in every mode
        args["num_choices"] = judge.n
    if judge.seed is not None:
        args["seed"] = judge.seed
    if judge.reasoning_effort:
        args["reasoning_effort"] = judge.reasoning_effort
    return "GenerateConfig(" + ", ".join(f"{key}={value!r}" for key, value in args.items()) + ")"


def inspect_losses(prompt: FrozenPrompt, facts: ExportedJudge) -> list[str]:
    """The workbench's run rules around a score that the Inspect task does not follow, for this prompt."""
    judge = prompt.dimension.judge
    lost = [
        "retries: the workbench asks a failed call again (up to 5 attempts) and asks again when a reply's "
        "log-probabilities are impossible; here Inspect's own retries answer failed calls, and a reply with "
        "impossible log-probabilities is unscored",
        "the context check: the workbench never sends an item too long for the judge's context; here the "
        "server refuses it",
        "the judge cache and each judgment's provenance (server, request and reply hashes): Inspect's log keeps "
        "its own record",
    ]
    if judge.n > 1:
        lost.append(
            f"n={judge.n}: the workbench asks a server that returns fewer replies again until it has "
            f"{judge.n}; here the replies the server returns are scored"
        )
    if judge.mode != "logprobs":
        lost.append(
            "the sampling reducer: always the mean, the workbench's default (another is a run option)"
        )
    if judge.reasoning_effort:
        lost.append(
            "a reasoning model's budget: the workbench sends max_completion_tokens (the reply budget plus "
            f"room to reason); here Inspect's provider sends max_tokens={judge.max_tokens} its own way"
        )
    if facts.primed_in_process:
        lost.append(
            "the embedded judge (a GGUF run in-process by llama-cpp-python, its reply primed with the form's "
            f"'- {one_line(prompt.dimension.name)}: '): name a model serving the same GGUF (e.g. llama.cpp's "
            "server through openai-api/...); a chat API is not primed, and another runtime may answer "
            "differently"
        )
    return lost


def inspect_rule(prompt: FrozenPrompt, pass_at: float | None) -> list[str]:
    """The comment lines saying the pass rule as the task applies it."""
    how = (
        f"PASS_AT = {pass_at!r}: a scored sample's metadata says whether it passed, and the `passed` metric is the "
        "share of scored items passing (the weighted score, as the workbench applies the rule)."
    )
    return pass_rule(prompt, pass_at, how, "PASS_AT is None: Inspect reports the mean score and its stderr.")


def model_hint(prompt: FrozenPrompt) -> str:
    """How Inspect names the frozen judge, for the usage line (a comment)."""
    judge = prompt.dimension.judge
    prefix = {"openai": "openai/", "gemini": "google/", "vertex": "google/"}.get(judge.provider)
    return one_line(prefix + judge.model) if prefix and judge.model else "MODEL"


def usage(prompt: FrozenPrompt) -> list[str]:
    """The comment lines saying how to run the file."""
    inputs = ", ".join(prompt.dimension.inputs)
    return [
        f"Run: inspect eval THIS_FILE --model {model_hint(prompt)} -T dataset=items.jsonl",
        f"The dataset: a JSONL or CSV file with a text field for each input ({inputs}); an `id` field names "
        "the items.",
        "The judge: --model, or --model-role grader=MODEL, or -T judge=MODEL; an OpenAI-compatible server as "
        "openai-api/NAME/MODEL with NAME_BASE_URL (and NAME_API_KEY) set.",
        "An item without a score (below the floor, no rating in the reply) is unscored, with the reason.",
    ]


def py_pieces(pieces: list[str | tuple[str]]) -> str:
    """The prompt pieces as a Python list literal, one piece a line."""
    return "[\n" + "".join(f"    {piece!r},\n" for piece in pieces) + "]"


def constants(prompt: FrozenPrompt, pass_at: float | None) -> str:
    """The prompt's own values as Python literals."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    logprobs = generate_config(prompt, True) if judge.mode in ("logprobs", "auto") else "None"
    sampling = generate_config(prompt, False) if judge.mode in ("sampling", "auto") else "None"
    return (
        f"\nCONTENT_HASH = {prompt.id!r}\nPROMPT_LABEL = {prompt.label!r}\n"
        f"INPUTS = {tuple(dim.inputs)!r}  # the frozen prompt's inputs in order; the last one is judged\n"
        f"SCALE = {(dim.scale.min, dim.scale.max)!r}  # the allowed ratings, both ends included\n"
        f"VALID_MASS_FLOOR = {judge.valid_mass_floor!r}  # less probability on the ratings: no score\n"
        f"PASS_AT = {pass_at!r}  # the pass rule on the scale (None: no rule)\n"
        "# The frozen prompt's one user message: its fixed text, and (name,) where an item's input goes.\n"
        f"PROMPT = {py_pieces(prompt_pieces(prompt))}\n"
        f"# The frozen decoding (mode {judge.mode}): the rating position's log-probabilities, then (auto mode, "
        "a reply without them) n sampled replies.\n"
        f"LOGPROBS_CONFIG = {logprobs}\nSAMPLING_CONFIG = {sampling}\n"
    )


def inspect_task(prompt: FrozenPrompt, pass_at: float | None = None, *, facts: ExportedJudge) -> str:
    """A Python file defining the Inspect task `geval` and its scorer `geval_judge` for the frozen prompt."""
    head = [
        *provenance(
            prompt, "Inspect AI", inspect_losses(prompt, facts), inspect_rule(prompt, pass_at), HEADING
        ),
        *usage(prompt),
    ]
    return comment_block(head) + DOCSTRING + IMPORTS + constants(prompt, pass_at) + RULES + "\n" + TASK
