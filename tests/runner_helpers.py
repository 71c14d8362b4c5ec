"""Shared set-up for the tests: the one Dimension builder, small libraries and runs."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import replace

from geval_core.errors import RetryableJudgeError
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.types import Choice, Dimension, Item, JudgeReply, JudgeRequest, JudgeSettings, Scale
from prompt_library import Library

WORKED = {"3": 0.6, "4": 0.3, "2": 0.05, "The": 0.05}
# The design's worked example: (0.6*3 + 0.3*4 + 0.05*2) / 0.95, and 3.1 before renormalising.
WORKED_SCORE = 3.1 / 0.95
WORKED_RAW = 3.1


def dimension(judge: JudgeSettings | None = None, **changes) -> Dimension:
    """The tests' one Dimension builder: a checkable 1-5 Coherence dimension over document and summary,
    with keyword overrides for any field (name=, scale=, anchors=, steps=, ...)."""
    base = Dimension(
        name="Coherence",
        definition="The collective quality of all sentences in the summary.",
        scale=Scale(1, 5),
        anchors={
            1: "Incoherent.",
            2: "Mostly incoherent.",
            3: "Partly coherent.",
            4: "Mostly coherent.",
            5: "Well structured and organized.",
        },
        inputs=("document", "summary"),
        steps=("Read the document.", "Read the summary.", "Assign a score for coherence."),
        judge=judge or JudgeSettings(),
    )
    return replace(base, **changes)


def make_items(count: int, prefix: str = "i") -> list[Item]:
    """Items with distinct texts (so their prompts, and cache keys, differ)."""
    return [
        Item(f"{prefix}{k:03d}", {"document": f"Document number {k}.", "summary": f"Summary {k}."})
        for k in range(count)
    ]


def setup_library(path, count: int = 6, judge: JudgeSettings | None = None, name: str = "Coherence"):
    """(library, prompt, items, dataset row) in a fresh library file without the seeded examples."""
    library = Library(path, seed_examples=False)
    prompt = library.freeze(dimension(judge, name=name)).prompt
    items = make_items(count)
    dataset = library.import_items("tiny", items)
    return library, prompt, items, dataset


def worked_judge() -> ScriptedJudge:
    """A scripted judge that always answers with the worked-example distribution."""
    return ScriptedJudge(lambda request: dict(WORKED))


class NoLogprobsJudge(ScriptedJudge):
    """Answers like ScriptedJudge but never returns positions (an API that refuses logprobs)."""

    def judge(self, request: JudgeRequest) -> JudgeReply:
        reply = super().judge(request)
        texts = ["4", "3", "4", "x"] * (request.n // 4 + 1)
        return JudgeReply(tuple(Choice(t) for t in texts[: request.n]), reply.model_version, reply.usage)


class FlakyJudge(ScriptedJudge):
    """Raises RetryableJudgeError `failures` times per prompt, then answers."""

    def __init__(self, failures: int, retry_after: float | None = None) -> None:
        super().__init__(lambda request: dict(WORKED))
        self.failures, self.retry_after = failures, retry_after
        self.seen: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def judge(self, request: JudgeRequest) -> JudgeReply:
        key = request.messages[0]["content"]
        with self.lock:
            times = self.seen.setdefault(key, [])
            times.append(time.monotonic())
            fail = len(times) <= self.failures
        if fail:
            raise RetryableJudgeError("HTTP 429 from test", retry_after=self.retry_after)
        return super().judge(request)


def close(a: float | None, b: float, tol: float = 1e-9) -> bool:
    """a is a number within tol of b."""
    return a is not None and math.isclose(a, b, abs_tol=tol)


def judged_run(lib: Library, finish: bool = True) -> tuple[str, dict[str, float]]:
    """A run of coherence@1 on `sample`: the human rating plus a per-item offset (high, imperfect agreement)."""
    items = lib.dataset_items(lib.get_dataset("sample").id)
    run_id = lib.create_run("coherence", "sample", lib.get_prompt("coherence").dimension.judge)
    judge = {}
    for n, item in enumerate(items):
        judge[item.id] = item.human["coherence"] + (0.4 if n % 3 == 0 else -0.2)
        lib.save_judgment(run_id, Judgment(item.id, score=judge[item.id], mode="logprobs"))
    if finish:
        lib.finish_run(run_id, model_version="scripted-1")
    return run_id, judge
