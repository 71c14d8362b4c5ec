"""Seconds per item of the embedded local judge (SmolLM2 in llama.cpp) on the sample set.

Runs the seeded coherence prompt over the `sample` dataset twice through run_scoring (judge cache
off, so every item is really judged): with llama.cpp's shared-prefix KV reuse on (the default:
criteria and steps come first in the template, so consecutive prompts share them) and off.
Usage: bench_local.py [ITEMS] (default: the whole sample set).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from geval_core.providers.local_judge import LocalJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeReply, JudgeRequest
from prompt_library import Library


class Recording:
    """Wraps a judge and keeps each reply's raw facts (prompt tokens, reused prefix tokens)."""

    def __init__(self, judge: LocalJudge) -> None:
        self.inner, self.provider, self.raws = judge, judge.provider, []

    def judge(self, request: JudgeRequest) -> JudgeReply:
        reply = self.inner.judge(request)
        self.raws.append(reply.raw)
        return reply


def measure(library: Library, prefix_cache: bool, limit: int | None) -> dict:
    """Score the sample set once; per-item seconds and prefix reuse."""
    prompt = library.get_prompt("coherence")
    dataset = library.get_dataset("sample")
    items = library.dataset_items(dataset["id"])[:limit]
    judge = Recording(LocalJudge(prefix_cache=prefix_cache))
    judge.inner.judge(_warm_request(prompt, items[0]))  # load the model outside the timing
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge, [i.id for i in items])
    start = time.perf_counter()
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=1, use_cache=False))
    seconds = time.perf_counter() - start
    rows = library.judgments(run_id)
    return {
        "items": len(items), "seconds": seconds, "per_item": seconds / len(items),
        "latency_median": statistics.median(r["latency_s"] for r in rows),
        "prompt_tokens": statistics.mean(r["prompt_tokens"] for r in judge.raws),
        "reused": statistics.mean(r["prefix_reused_tokens"] for r in judge.raws),
        "scored": summary.scored, "valid_mass": statistics.mean(r["valid_mass"] or 0 for r in rows),
        "scores": [r["score"] for r in rows],
    }


def _warm_request(prompt, item) -> JudgeRequest:
    from geval_core.run.calls import build_request

    return build_request(prompt, item, prompt.dimension.judge, "logprobs")


def main() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        library = Library(Path(tmp) / "local.db")
        results = {flag: measure(library, flag, limit) for flag in (True, False)}
    on, off = results[True], results[False]
    for flag, r in ((True, on), (False, off)):
        label = "prefix cache on " if flag else "prefix cache off"
        print(f"{label}: {r['items']} items in {r['seconds']:.1f} s = {r['per_item']:.3f} s/item "
              f"(median call {r['latency_median']:.3f} s); prompt {r['prompt_tokens']:.0f} tokens, "
              f"{r['reused']:.0f} reused from the previous prompt; {r['scored']} scored, "
              f"mean valid mass {r['valid_mass']:.2f}")
    same = max(abs(a - b) for a, b in zip(on["scores"], off["scores"], strict=True) if a is not None and b is not None)
    print(f"speed-up from the shared prefix: {off['per_item'] / on['per_item']:.2f}x; "
          f"largest score difference between the two: {same:.2g}")


if __name__ == "__main__":
    main()
