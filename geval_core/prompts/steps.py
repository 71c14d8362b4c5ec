"""Auto chain-of-thought: a judge writes a dimension's evaluation steps once, a person reviews them.

Steps are generated on request only; freezing stores them, so every run of a frozen prompt grades
against the same steps. `drift` shows how much unfrozen steps change from one generation to the next.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from difflib import SequenceMatcher

from ..errors import GEvalError, JudgeError
from ..scoring.think import final_text
from ..types import Dimension, Judge, JudgeRequest, JudgeSettings
from . import field_title, format_anchors

PRIMER = "1."  # judges that can prime (local) start their reply here, so it opens with a step
STEPS_MAX_TOKENS = 256

# "1. x", "1) x", "(1) x", "Step 1: x", "**Step 1:** x", "1 - x"; not "1.5 points" or "1-5".
_NUMBERED = re.compile(
    r"^\s*(?:[*_#>]+\s*)?\(?(?:step\s*)?(\d{1,2})(?:\s*[.):]|\s+[-\u2013])\s*(?:[*_]+\s*)?(?!\d)(.*)$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*[-*\u2022+]\s+(.*)$")
# A numbered marker inside a line ("... article. 2. Compare ..."): split it onto its own line.
_INLINE = re.compile(r"(?<=[.!?;])\s+(?=(?:step\s*)?\d{1,2}[.):]\s)", re.IGNORECASE)
_MARKUP = re.compile(r"\*\*|__|`|^#+\s*")


def steps_prompt(dimension: Dimension) -> tuple[dict[str, str], ...]:
    """Chat messages asking a judge to turn the definition and anchors into numbered steps."""
    what = " and ".join(f"a {field_title(f).lower()}" for f in dimension.inputs) or "a text"
    content = (
        f"An evaluator will be given {what} and will rate it on one metric.\n\n"
        f"Evaluation Criteria:\n\n{dimension.name} ({dimension.scale}) - {dimension.definition.strip()}\n\n"
        f"{format_anchors(dimension)}\n\n"
        f"Write the evaluation steps the evaluator follows to assign the {dimension.name} score: "
        "3 to 6 short numbered steps (1., 2., 3., ...), one instruction per line, each starting with "
        'a verb (for example "Read ...", "Check whether ...", "Assign a score from '
        f'{dimension.scale.min} to {dimension.scale.max} ..."). Write only the numbered steps.'
    )
    return ({"role": "user", "content": content},)


def _clean(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split()).strip(" -:")


def _collect(lines: list[str]) -> tuple[list[str], list[str]]:
    """Numbered items (with their continuation lines and sub-bullets) and, separately, bullets."""
    numbered: list[str] = []
    bullets: list[str] = []
    last, current, gap = 0, None, False
    for line in lines:
        if not line.strip():
            gap = True
            continue
        item, bullet = _NUMBERED.match(line), _BULLET.match(line)
        if item:
            number = int(item.group(1))
            if numbered and number <= last:
                break  # the numbering starts over: a repeated list or an example, not more steps
            numbered.append(item.group(2))
            last, current, gap = number, "numbered", False
        elif bullet and current == "numbered":
            numbered[-1] += " " + bullet.group(1)  # a sub-point of the step above
        elif bullet and not numbered:
            bullets.append(bullet.group(1))
            current, gap = "bullet", False
        elif current and not gap:
            target = numbered if current == "numbered" else bullets
            target[-1] += " " + line.strip()  # the step continues on the next line
        else:
            current = None  # prose before, between or after the list
    return numbered, bullets


def parse_steps(text: str) -> list[str]:
    """Numbered (or bulleted) steps from a judge's reply; JudgeError when there are none."""
    lines = _INLINE.sub("\n", text.replace("\r\n", "\n")).split("\n")
    numbered, bullets = _collect(lines)
    steps: dict[str, str] = {}
    for raw in numbered or bullets:
        step = _clean(raw)
        if sum(ch.isalpha() for ch in step) >= 3:
            steps.setdefault(step.lower(), step)  # drop repeats, keep the first wording
    if not steps:
        preview = " ".join(text.split())[:200]
        raise JudgeError(
            f"could not find numbered evaluation steps in the judge's reply ({preview!r}); "
            "generate again or write the steps by hand"
        )
    return list(steps.values())


def generate_steps(
    dimension: Dimension,
    judge: Judge,
    settings: JudgeSettings | None = None,
    *,
    model: str | None = None,
    temperature: float = 0.0,
    max_tokens: int = STEPS_MAX_TOKENS,
    seed: int | None = None,
) -> tuple[list[str], str]:
    """Ask `judge` for the dimension's steps once: (steps, model version that wrote them)."""
    settings = settings or dimension.judge
    request = JudgeRequest(
        steps_prompt(dimension),
        model or settings.model,
        temperature=temperature,
        max_tokens=max_tokens,
        logprobs=False,
        top_logprobs=0,
        n=1,
        seed=seed,
        assistant_prefix=PRIMER,
    )
    reply = judge.judge(request)
    text = reply.choices[0].text if reply.choices else ""
    answer = final_text(text)
    if answer is None:
        raise JudgeError(
            "the judge's reply stopped inside its <think> block: no steps were written "
            f"(raise the reply budget above {max_tokens} tokens, or use a model that does not think)"
        )
    text = answer  # a reasoning model's thinking is not part of the steps
    if judge.primes:
        text = PRIMER + text  # the judge continued after the primer
    steps = parse_steps(text)
    if len(steps) > 1 and reply.usage.output_tokens >= max_tokens and _ends_inside(text, steps[-1]):
        steps = steps[:-1]  # the reply was cut off inside its last step: that step is unfinished
    return steps, reply.model_version


def _ends_inside(text: str, step: str) -> bool:
    """True when the reply's last line belongs to `step` (nothing came after the list)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and _clean(_NUMBERED.sub(r"\2", lines[-1])) in step


@dataclass(frozen=True)
class DriftReport:
    """How much k generations of the same dimension's steps differ."""

    steps: list[list[str]]
    model_version: str
    pairs: list[dict] = field(default_factory=list)  # {"a": i, "b": j, "similarity": ratio}
    mean_similarity: float | None = None
    failures: list[str] = field(default_factory=list)  # errors of generations that gave no steps

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


def similarity(a: list[str], b: list[str]) -> float:
    """difflib's ratio (0-1) between two step lists joined one step per line."""
    return SequenceMatcher(None, "\n".join(a), "\n".join(b), autojunk=False).ratio()


def drift(
    dimension: Dimension,
    judge: Judge,
    k: int = 3,
    settings: JudgeSettings | None = None,
    *,
    temperature: float = 0.7,
    seed: int | None = 0,
    max_tokens: int = STEPS_MAX_TOKENS,
    on_generation: Callable[[int, int], None] | None = None,
) -> DriftReport:
    """Generate the steps k times (seeds seed, seed+1, ...) and compare every pair of lists; `on_generation(done, k)`
    after each generation."""
    if k < 2:
        raise GEvalError(f"a drift check needs at least 2 generations, got k={k}")
    lists, failures, version = [], [], ""
    for i in range(k):
        try:
            steps, version = generate_steps(
                dimension,
                judge,
                settings,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=None if seed is None else seed + i,
            )
            lists.append(steps)
        except JudgeError as exc:
            failures.append(str(exc))
        if on_generation is not None:
            on_generation(i + 1, k)
    if len(lists) < 2:
        raise JudgeError(f"only {len(lists)} of {k} generations gave usable steps: {'; '.join(failures)}")
    pairs = [
        {"a": i, "b": j, "similarity": similarity(lists[i], lists[j])}
        for i, j in itertools.combinations(range(len(lists)), 2)
    ]
    mean = statistics.fmean(p["similarity"] for p in pairs)
    return DriftReport(lists, version, pairs, mean, failures)
