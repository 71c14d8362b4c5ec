"""The newcomer's path as steps, each with this library's state: what is done, what to do next and where.

define → generate steps → freeze → import rated data → score → agreement → export. The shipped examples
(four prompts and the sample set) do not count as the user's own work; they are named as examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from geval_core.prompts.hash import content_hash
from geval_core.types import HAND_WRITTEN

EXAMPLE_PROMPTS = ("coherence", "consistency", "fluency", "relevance")
EXAMPLE_DATASET = "sample"
# Kept with the pages' remembered choices: the run whose agreement with people was last shown, the prompt last
# exported. A step is done when the person did it, not when the data for it exists.
AGREEMENT_SEEN, EXPORTED = "start:agreement_seen", "start:exported"
REMEMBERED = "ui:kept"  # workbench_ui.state's setting (read here without Streamlit)


@dataclass(frozen=True)
class Step:
    """One step of the path: what it is, the page that does it, whether it is done, and what the library holds."""

    title: str
    page: str  # the app page's file, for st.switch_page / st.page_link
    done: bool
    state: str
    how: str


ALL_DONE = (
    "Every step is done: your prompt is frozen, checked against people and exported. From here: rate more items "
    "(Rate page), try another judge or a panel (Score page), watch for drift (Library page), or design the next "
    "dimension (Design page)."
)


def counted(n: int, noun: str) -> str:
    """'1 finished run', '2 finished runs', 'no finished run': words, not "(s)"."""
    return f"no {noun}" if n == 0 else f"{n} {noun}" + ("" if n == 1 else "s")


def mark(step: Step, upcoming: Step) -> str:
    """A step's state as a Material icon with a word (readable without an emoji font)."""
    if step.done:
        return ":material/check_circle: done"
    return ":material/arrow_forward: next" if step is upcoming else ":material/radio_button_unchecked: to do"


def open_drafts(lib: Any) -> list[dict[str, Any]]:
    """The drafts not frozen as they are (a draft whose content is a frozen prompt's is not open any more)."""
    frozen = {p["id"] for p in lib.list_prompts()}
    return [d for d in lib.list_drafts() if content_hash(lib.get_draft(d["id"])) not in frozen]


def own_prompts(lib: Any) -> list[dict[str, Any]]:
    """Every frozen prompt version but the shipped examples."""
    seeded = {p.id for p in (_example(lib, name) for name in EXAMPLE_PROMPTS) if p is not None}
    return [p for p in lib.list_prompts() if p["id"] not in seeded]


def examples(lib: Any) -> list[str]:
    """The labels (NAME@V) of the shipped example prompts this library holds."""
    return [p.label for p in (_example(lib, name) for name in EXAMPLE_PROMPTS) if p is not None]


def _example(lib: Any, name: str) -> Any:
    try:
        versions = lib.prompt_versions(name)
    except Exception:  # noqa: BLE001 - a library without the examples has none to leave out
        return None
    return versions[0] if versions else None


def path_state(lib: Any) -> list[Step]:
    """Every step of the path with this library's state."""
    own, drafts = own_prompts(lib), open_drafts(lib)
    generated = [p for p in own if lib.get_prompt(p["id"]).dimension.steps_model != HAND_WRITTEN]
    with_ratings = [d for d in lib.list_datasets() if d.human]
    rated = [d for d in with_ratings if d.name != EXAMPLE_DATASET]
    own_ids = {p["id"] for p in own}
    runs = [r for r in lib.list_runs() if r.prompt_id in own_ids]
    finished = [r for r in runs if r.status == "done"]
    rated_ids = {d.id for d in with_ratings}
    with_people = [r for r in finished if r.dataset_id in rated_ids]
    labels = ", ".join(f"{p['name']}@{p['version']}" for p in own[:3])
    kept = lib.get_setting(REMEMBERED) or {}
    seen = kept.get(AGREEMENT_SEEN) in {r.id for r in with_people}
    exported = kept.get(EXPORTED) in own_ids
    return [
        Step(
            "Describe one quality dimension",
            "app_pages/design.py",
            bool(drafts or own),
            f"{counted(len(own), 'frozen prompt')} of your own, "
            + (
                f"{counted(len(drafts), 'draft')} not frozen yet"
                if drafts
                else "no draft waiting to be frozen"
            )
            + f"; the examples ({', '.join(EXAMPLE_PROMPTS)}) show how",
            "A definition, a scale and a sentence for every point.",
        ),
        Step(
            "Let a model write the evaluation steps",
            "app_pages/design.py",
            bool(generated),
            f"{len(generated)} of your prompts have model-written steps",
            "Generate them once, read and edit them.",
        ),
        Step(
            "Freeze it into the library",
            "app_pages/design.py",
            bool(own),
            labels or "nothing frozen of your own yet",
            "A frozen prompt never changes; every run grades against it.",
        ),
        Step(
            "Import data people rated",
            "app_pages/datasets.py",
            bool(rated),
            ", ".join(d.label for d in rated[:3]) or f"only the example set {EXAMPLE_DATASET}",
            "A CSV or JSONL file with the inputs and the people's ratings.",
        ),
        Step(
            "Score it with a judge",
            "app_pages/score.py",
            bool(finished),
            f"{counted(len(finished), 'finished run')} of your prompts"
            + (f", {len(runs) - len(finished)} not finished" if len(runs) > len(finished) else ""),
            "Every item's rating distribution and weighted score.",
        ),
        Step(
            "Compare the judge with people",
            "app_pages/agreement.py",
            seen,
            _agreement_state(len(with_people), seen),
            "Spearman, Kendall and kappa with intervals, beside the raters' own agreement (the ceiling).",
        ),
        Step(
            "Export the frozen prompt",
            "app_pages/library.py",
            exported,
            "exported" if exported else "when its agreement is close enough to the raters' own for your use",
            "A hash-checked file, a production snippet, or a promptfoo, DeepEval or Inspect file.",
        ),
    ]


def _agreement_state(runs: int, seen: bool) -> str:
    if not runs:
        return "no run of yours on rated data yet"
    if not seen:
        return f"{counted(runs, 'run')} on rated data: open the Agreement page to see how the judge agrees with people"
    return f"{counted(runs, 'run')} on rated data; their agreement with people shown"


def newest_own_prompt(lib: Any) -> str | None:
    """The name of the person's most recently frozen prompt (the examples left out), None before the first."""
    own = own_prompts(lib)
    return max(own, key=lambda p: p["created_at"])["name"] if own else None


def next_step(steps: list[Step]) -> Step:
    """The first step not done (the last one when all are)."""
    return next((s for s in steps if not s.done), steps[-1])
