"""Items per second of the embedded judge on a SummEval subset stored in shuffled order, sent in dataset order
and in prefix-aware order (a document's summaries one after another), side by side in one run; the tokens the
judge evaluated per item; and whether every item's rating distribution is the same in both orders.

The embedded judge (SmolLM2 in llama.cpp, one call at a time) re-evaluates only what differs from its previous
prompt: the G-Eval prompt is the static rubric, then the document, then the summary, so the order decides
whether a document is read once or once per summary. Target: prefix-aware ≥ 2.5 × shuffled.

Run: .venv/bin/python bench/bench_prefix_order.py [DOCUMENTS] [SUMMARIES]
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SUMMEVAL = ROOT.parent / "shared" / "data" / "summeval" / "summeval.jsonl"
TARGET = 2.5


def subset(documents: int, summaries: int, seed: int = 7):
    """`documents` SummEval articles with `summaries` summaries each, in a shuffled order."""
    from geval_core.types import Item

    by_doc: dict[str, list[dict]] = {}
    with SUMMEVAL.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            by_doc.setdefault(row["doc_id"], []).append(row)
    docs = [d for d in by_doc if len(by_doc[d]) >= summaries][:documents]
    items = [
        Item(r["id"], {"document": r["source"], "summary": r["output"]}, {}, r["doc_id"])
        for d in docs
        for r in by_doc[d][:summaries]
    ]
    random.Random(seed).shuffle(items)
    return items


class Counting:
    """The local judge, counting the prompt tokens it really evaluated (what its prefix cache did not spare)."""

    def __init__(self, judge) -> None:
        self.inner, self.provider, self.primes = judge, judge.provider, judge.primes
        self.evaluated = 0

    def judge(self, request):
        reply = self.inner.judge(request)
        raw = reply.raw or {}
        self.evaluated += int(raw.get("prompt_tokens") or 0) - int(raw.get("prefix_reused_tokens") or 0)
        return reply


def run(lib, prompt, dataset, judge, prefix_order: bool) -> tuple[float, dict[str, dict]]:
    """(seconds, distributions by item) of one run of the dataset with the judge cache off."""
    from geval_core.run.options import RunOptions
    from geval_core.run.plan import RunScope, plan_run, record_run, start_run

    options = RunOptions(use_cache=False, prefix_order=prefix_order)
    plan = record_run(
        lib, plan_run(lib, prompt, dataset, scope=RunScope(new_run=True), concurrency=1, options=options)
    )
    began = time.perf_counter()
    start_run(lib, plan, judge)
    seconds = time.perf_counter() - began
    return seconds, {r["item_id"]: r["distribution"] for r in lib.judgments(plan.run_id)}


def main() -> None:
    from geval_core.providers.local_judge import LocalJudge
    from prompt_library import Library

    documents = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    summaries = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    items = subset(documents, summaries)
    with tempfile.TemporaryDirectory() as folder, Library(Path(folder) / "b.db") as lib:
        prompt = lib.get_prompt("coherence")
        dataset = lib.import_items("summeval-shuffled", items)
        judge = Counting(LocalJudge())
        from geval_core.run.calls import build_request

        # The model loads at its first call: made here, apart from both runs (a short unrelated prompt).
        judge.inner.judge(
            build_request(
                prompt,
                items[0].__class__("warm", {"document": "A.", "summary": "B."}),
                prompt.dimension.judge,
                "logprobs",
            )
        )
        results = {}
        for prefix_order in (False, True):
            judge.evaluated = 0
            seconds, dists = run(lib, prompt, dataset, judge, prefix_order)
            results[prefix_order] = (seconds, dists, judge.evaluated)
    (s_off, d_off, t_off), (s_on, d_on, t_on) = results[False], results[True]
    worst = max(abs(d_off[i][k] - d_on[i][k]) for i in d_off for k in d_off[i])
    n = len(items)
    print(
        f"SummEval, {documents} documents x {summaries} summaries stored shuffled; embedded judge, one call at a "
        f"time; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    print(f"dataset order:      {n / s_off:6.2f} items/s, {t_off / n:6.0f} prompt tokens evaluated per item")
    print(f"prefix-aware order: {n / s_on:6.2f} items/s, {t_on / n:6.0f} prompt tokens evaluated per item")
    print(
        f"speed-up {s_off / s_on:.2f}x (target {TARGET}x: {'met' if s_off / s_on >= TARGET else 'MISSED'}); "
        f"largest difference of any rating's probability between the orders: {worst:.2e}"
    )


if __name__ == "__main__":
    main()
