"""The local judge's speed work (issue 15) keeps every answer: exact prefix reuse, stopping at the rating, FIFO lock."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from geval_core.providers import local_judge as lj
from geval_core.providers.fair_lock import FairLock
from geval_core.providers.local_judge import LocalJudge
from geval_core.run.calls import build_request
from prompt_library import Library


def _wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_fair_lock_admits_threads_in_arrival_order():
    lock, order = FairLock(), []

    def worker(n: int) -> None:
        with lock:
            order.append(n)

    threads = []
    with lock:
        for n in range(8):
            threads.append(threading.Thread(target=worker, args=(n,)))
            threads[-1].start()
            _wait_for(lambda n=n: lock.waiting == n + 1)  # thread n is queued before n + 1 arrives
    for thread in threads:
        thread.join(10)
    assert order == list(range(8))
    assert lock.waiting == 0


def test_fair_lock_is_exclusive():
    lock, inside, most = FairLock(), [0], [0]

    def worker() -> None:
        for _ in range(200):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                inside[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most[0] == 1 and lock.waiting == 0


class FakeLlama:
    """Just what _eval_prompt touches: the cached token ids and the batches it evaluates."""

    def __init__(self, n_batch: int) -> None:
        self.n_batch, self.n_tokens, self.input_ids, self.batches = n_batch, 0, np.zeros(64, np.intc), []

    def eval(self, tokens: list[int]) -> None:
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.batches.append(len(tokens))


@pytest.mark.parametrize("length", range(2, 20))
def test_prompt_batches_are_never_a_single_token(length):
    llm = FakeLlama(n_batch=4)
    LocalJudge("x.gguf")._eval_prompt(llm, list(range(length)))
    assert sum(llm.batches) == length and min(llm.batches) >= 2 and max(llm.batches) <= 4
    assert llm.input_ids[:length].tolist() == list(range(length))


def test_reuse_runs_to_the_first_difference_and_leaves_two_tokens():
    exact, legacy, llm = LocalJudge("x.gguf"), LocalJudge("x.gguf", exact_reuse=False), FakeLlama(n_batch=4)
    exact._eval_prompt(llm, list(range(10)))
    changed = [*range(7), 70, 80, 90]
    assert exact._eval_prompt(llm, changed) == 7 and llm.batches[-1] == 3
    assert exact._eval_prompt(llm, changed) == 8 and llm.batches[-1] == 2  # the same prompt again
    assert legacy._eval_prompt(llm, list(range(10))) == 4  # the old scheme: whole batches only
    assert LocalJudge("x.gguf", prefix_cache=False)._eval_prompt(llm, changed) == 0


# ---- with the real model ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_requests(tmp_path_factory):
    """Logprobs-mode requests for the first sample items, as a run builds them (~500-token prompts)."""
    library = Library(tmp_path_factory.mktemp("speed") / "lib.db")
    prompt = library.get_prompt("coherence")
    items = library.dataset_items(library.get_dataset("sample").id)[:4]
    return [build_request(prompt, item, prompt.dimension.judge, "logprobs") for item in items]


def _shared(a: list[int], b: list[int]) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


@pytest.mark.slow
def test_warm_evaluation_gives_the_cold_logits_bit_for_bit(local_judge, sample_requests):
    """Exact reuse (cache up to the first differing token) changes no logit over the whole vocabulary."""
    llm = lj._load(local_judge.model_path, local_judge.n_ctx, local_judge.n_threads, local_judge.n_batch)
    ids = [local_judge._prompt_ids(llm, r) for r in sample_requests]
    with lj._LOCK:
        for before, after in itertools.pairwise(ids):
            llm.n_tokens = 0
            assert local_judge._eval_prompt(llm, after) == 0  # cold: nothing cached
            cold = local_judge._last_logits(llm)
            llm.n_tokens = 0
            local_judge._eval_prompt(llm, before)
            reused = local_judge._eval_prompt(llm, after)
            assert reused == _shared(before, after)  # exact: not rounded down to a batch boundary
            assert reused % local_judge.n_batch and reused > len(after) // 2
            assert np.array_equal(local_judge._last_logits(llm), cold)
        # The same prompt again: all but its last two tokens reused, still the cold answer.
        assert local_judge._eval_prompt(llm, ids[-1]) == len(ids[-1]) - 2
        assert np.array_equal(local_judge._last_logits(llm), cold)


@pytest.mark.slow
def test_warm_and_cold_judges_report_the_same_ratings(gguf_path, sample_requests):
    warm, cold = LocalJudge(gguf_path), LocalJudge(gguf_path, prefix_cache=False)
    warm.judge(sample_requests[0])
    for request in sample_requests[1:3]:
        hot = warm.judge(request)
        assert hot.raw["prefix_reused_tokens"] > 0
        assert hot.choices == cold.judge(request).choices


@pytest.mark.slow
def test_logprobs_mode_stops_decoding_at_the_rating(gguf_path, sample_requests):
    request = replace(sample_requests[0], max_tokens=5)
    short = LocalJudge(gguf_path).judge(request)
    full = LocalJudge(gguf_path, stop_at_rating=False).judge(request)
    first = short.choices[0].positions[0]
    assert short.choices[0].text == first.token and first.token.strip() in {"1", "2", "3", "4", "5"}
    assert short.usage.output_tokens == 1 and short.raw["decode_steps"] == 0
    assert len(short.choices[0].positions) == 1
    # The distribution that scoring reads is the one the full reply starts with.
    assert full.choices[0].positions[0] == first
    assert full.choices[0].text.startswith(first.token)
    assert full.raw["decode_steps"] == full.usage.output_tokens - 1 >= 1


@pytest.mark.slow
def test_only_a_primed_greedy_logprobs_reply_stops_early(local_judge, sample_requests):
    llm = lj._load(local_judge.model_path, local_judge.n_ctx, local_judge.n_threads, local_judge.n_batch)
    one, four, word = (llm.tokenize(t.encode(), add_bos=False, special=False)[0] for t in ("1", "4", "Good"))
    primed = replace(sample_requests[0], max_tokens=5)
    ten = replace(primed, ratings=tuple(range(1, 11)))
    assert local_judge._last_step(llm, primed, four) == 0
    assert local_judge._last_step(llm, primed, one) == 0  # 1-5: "1" is a whole rating
    assert local_judge._last_step(llm, ten, one) == 1  # 1-10: the next position splits "1" from "10"
    assert local_judge._last_step(llm, ten, four) == 0
    assert local_judge._last_step(llm, primed, word) == 4  # no rating yet: the reply goes on
    for other in (
        replace(primed, temperature=1.0),
        replace(primed, logprobs=False, top_logprobs=0),
        replace(primed, assistant_prefix=None),
    ):  # sampling, or the probe's unprimed count
        assert local_judge._last_step(llm, other, four) == 4


@pytest.mark.slow
def test_concurrent_judge_calls_enter_the_model_in_arrival_order(gguf_path, sample_requests, monkeypatch):
    judge, entered = LocalJudge(gguf_path), []
    prompt_ids = judge._prompt_ids
    monkeypatch.setattr(judge, "_prompt_ids", lambda llm, r: entered.append(r) or prompt_ids(llm, r))
    order = [sample_requests[i] for i in (2, 0, 3, 1)]
    threads = []
    with lj._LOCK:
        for n, request in enumerate(order):
            threads.append(threading.Thread(target=judge.judge, args=(replace(request, max_tokens=1),)))
            threads[-1].start()
            _wait_for(lambda n=n: lj._LOCK.waiting == n + 1)
    for thread in threads:
        thread.join(60)
    assert [r.messages for r in entered] == [r.messages for r in order]
