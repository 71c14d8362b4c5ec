"""Seconds per item of the embedded local judge (SmolLM2 in llama.cpp) on the sample set, against its compute limit.

Runs the seeded coherence prompt over the `sample` dataset through run_scoring (judge cache off, so
every item is really judged), with the judge's settings before issue 15 ("old": 64-token batches,
prefix reuse in whole batches, the full 5-token reply) and after ("new": 512-token batches, exact
prefix reuse, decoding stops at the rating). For each it prints the prompt-evaluation and decode
rates measured inside the calls, s/item, and the compute limit: prompt tokens actually evaluated /
eval tok/s + decode steps / decode tok/s, once with the rates measured in the run and once with
reference rates, the same for both (whole sample prompts cold in 512-token batches, the best rate
measured; 32 single-token decode steps).
--check N compares the rating log-probabilities of a cold and a warm (exact prefix reuse) evaluation.
Usage: bench_local.py [ITEMS] [--only old|new|cold] [--check N]   (cold: new without the prefix cache)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from geval_core.providers import local_judge as lj
from geval_core.run import RunOptions, run_scoring
from geval_core.run.calls import build_request
from geval_core.types import JudgeReply, JudgeRequest
from prompt_library import Library

SETTINGS = {
    "old": {"n_batch": 64, "exact_reuse": False, "stop_at_rating": False},
    "new": {},
    "cold": {"prefix_cache": False},
}


class Recording:
    """Wraps a judge and keeps each reply's raw facts (tokens evaluated and reused, timings)."""

    def __init__(self, judge: lj.LocalJudge) -> None:
        self.inner, self.provider, self.raws = judge, judge.provider, []

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Judge and record."""
        reply = self.inner.judge(request)
        self.raws.append(reply.raw)
        return reply


def sample(library: Library, limit: int | None):
    """The coherence prompt, the sample dataset's id and its first `limit` items."""
    prompt, dataset = library.get_prompt("coherence"), library.get_dataset("sample")
    return prompt, dataset["id"], library.dataset_items(dataset["id"])[:limit]


def requests(prompt, items) -> list[JudgeRequest]:
    """The logprobs-mode request of each item, as a run builds it."""
    return [build_request(prompt, item, prompt.dimension.judge, "logprobs") for item in items]


def reference_rates(judge: lj.LocalJudge, reqs: list[JudgeRequest]) -> tuple[float, float]:
    """(prompt tok/s, decode tok/s): whole prompts evaluated cold, then 32 single-token steps."""
    with lj._LOCK:
        llm = lj._load(judge.model_path, judge.n_ctx, judge.n_threads, judge.n_batch)
        ids = [judge._prompt_ids(llm, r) for r in reqs[:6]]
        start = time.perf_counter()
        for prompt in ids:
            llm.n_tokens = 0
            llm.eval(prompt)
        eval_tps = sum(map(len, ids)) / (time.perf_counter() - start)
        start = time.perf_counter()
        for token in ids[0][:32]:
            llm.eval([token])
            judge._last_logits(llm)
        decode_tps = 32 / (time.perf_counter() - start)
        llm.n_tokens = 0
    return eval_tps, decode_tps


def measure(library: Library, mode: str, limit: int | None, reference: tuple[float, float]) -> dict:
    """Score the sample set once with one mode's settings; per-item seconds, rates and the limits."""
    prompt, dataset_id, items = sample(library, limit)
    inner = lj.LocalJudge(**SETTINGS[mode])
    judge = Recording(inner)
    inner.judge(requests(prompt, items[:1])[0])  # load the model outside the timing, then start from an
    lj._load(inner.model_path, inner.n_ctx, inner.n_threads, inner.n_batch).n_tokens = 0  # empty cache
    ref_eval, ref_decode = reference
    run_id = library.create_run(prompt.id, dataset_id, prompt.dimension.judge, [i.id for i in items])
    start = time.perf_counter()
    run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=1, use_cache=False))
    per_item = (time.perf_counter() - start) / len(items)
    raws, rows = judge.raws, library.judgments(run_id)
    evaluated = statistics.mean(r["prompt_tokens"] - r["prefix_reused_tokens"] for r in raws)
    steps = statistics.mean(r["decode_steps"] for r in raws)
    eval_tps = sum(r["prompt_tokens"] - r["prefix_reused_tokens"] for r in raws) / sum(
        r["eval_s"] for r in raws
    )
    decode_tps = sum(r["decode_steps"] for r in raws) / max(sum(r["decode_s"] for r in raws), 1e-9)
    limit_run = evaluated / eval_tps + (steps / decode_tps if steps else 0.0)
    limit_ref = evaluated / ref_eval + steps / ref_decode
    return {
        "mode": mode,
        "items": len(items),
        "per_item": per_item,
        "prompt": statistics.mean(r["prompt_tokens"] for r in raws),
        "evaluated": evaluated,
        "steps": steps,
        "eval_tps": eval_tps,
        "decode_tps": decode_tps,
        "ref_eval": ref_eval,
        "ref_decode": ref_decode,
        "limit_run": limit_run,
        "limit_ref": limit_ref,
        "scores": [r["score"] for r in rows],
        "lengths": [r["prompt_tokens"] for r in raws],
    }


def report(r: dict) -> None:
    """Print one mode's figures."""
    print(
        f"{r['mode']:>4}: {r['items']} items, {r['per_item']:.3f} s/item; prompt {r['prompt']:.0f} tokens, "
        f"{r['evaluated']:.1f} evaluated, {r['steps']:.1f} decode steps per item"
    )
    decode = f"{r['decode_tps']:.0f} tok/s" if r["steps"] else "none"
    print(
        f"      in the run: eval {r['eval_tps']:.0f} tok/s, decode {decode} -> limit "
        f"{r['limit_run']:.3f} s/item, ratio {r['per_item'] / r['limit_run']:.2f}"
    )
    print(
        f"      reference:  eval {r['ref_eval']:.0f} tok/s, decode {r['ref_decode']:.0f} tok/s -> limit "
        f"{r['limit_ref']:.3f} s/item, ratio {r['per_item'] / r['limit_ref']:.2f}"
    )


def check(library: Library, n: int) -> None:
    """Cold vs warm (exact reuse after the previous item) rating log-probabilities on n sample items."""
    prompt, _, items = sample(library, n + 1)
    judge = lj.LocalJudge()
    reqs = requests(prompt, items)
    worst_rating = worst_vocab = alone_rating = alone_vocab = 0.0
    same = 0
    with lj._LOCK:
        llm = lj._load(judge.model_path, judge.n_ctx, judge.n_threads, judge.n_batch)
        ratings = list(judge._rating_ids(llm, reqs[0].ratings))
        ids = [judge._prompt_ids(llm, r) for r in reqs]
        for before, after in zip(ids, ids[1:], strict=False):
            llm.n_tokens = 0
            llm.eval(after)
            cold = lj._log_softmax(judge._last_logits(llm))
            llm.n_tokens = 0
            llm.eval(before)
            reused = judge._eval_prompt(llm, after)
            warm = lj._log_softmax(judge._last_logits(llm))
            same += bool(np.array_equal(cold, warm))
            llm.n_tokens = len(after) - 1  # what _eval_prompt avoids: the last token in a batch of its own
            llm.eval(after[-1:])
            alone = lj._log_softmax(judge._last_logits(llm))
            alone_rating = max(alone_rating, float(np.max(np.abs(cold[ratings] - alone[ratings]))))
            alone_vocab = max(alone_vocab, float(np.max(np.abs(cold - alone))))
            worst_rating = max(worst_rating, float(np.max(np.abs(cold[ratings] - warm[ratings]))))
            worst_vocab = max(worst_vocab, float(np.max(np.abs(cold - warm))))
            print(
                f"  {len(after)} tokens, {reused} reused: rating logprobs cold "
                f"{np.round(cold[ratings], 4).tolist()}, warm - cold max {np.max(np.abs(cold - warm)):.3g}"
            )
        llm.n_tokens = 0
    print(
        f"cold vs warm on {len(ids) - 1} items: {same} bit-identical; max abs logprob difference "
        f"{worst_rating:.3g} on the ratings, {worst_vocab:.3g} over the vocabulary; the last token "
        f"evaluated alone instead: {alone_rating:.3g} on the ratings, {alone_vocab:.3g} over the vocabulary"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("items", nargs="?", type=int, help="the first ITEMS sample items (default: all)")
    parser.add_argument("--only", choices=sorted(SETTINGS), help="one mode (default: old, then new)")
    parser.add_argument("--check", type=int, metavar="N", help="only compare cold and warm on N items")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        library = Library(Path(tmp) / "local.db")
        if args.check:
            check(library, args.check)
            return
        prompt, _, items = sample(library, None)
        reference = reference_rates(lj.LocalJudge(), requests(prompt, items))
        results = [
            measure(library, mode, args.items, reference)
            for mode in ([args.only] if args.only else ["old", "new"])
        ]
    for r in results:
        report(r)
    if len(results) == 2:
        old, new = results
        diffs = [
            (abs(a - b), n)
            for a, b, n in zip(old["scores"], new["scores"], new["lengths"], strict=True)
            if a is not None and b is not None and a != b
        ]
        print(
            f"new vs old: {old['per_item'] / new['per_item']:.2f}x faster; {len(diffs)} scores differ, "
            f"largest by {max(diffs, default=(0.0, 0))[0]:.2g}; their prompts' lengths "
            f"{sorted(n for _, n in diffs)} (old: a last batch of 1 token when the length is 1 mod 64)"
        )


if __name__ == "__main__":
    main()
