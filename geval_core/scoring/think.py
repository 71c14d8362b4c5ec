"""Reasoning replies: where the answer starts after a <think> block, in text and in token positions.

DeepSeek-R1 and Qwen3 served by vLLM, llama.cpp or Ollama write "<think>...</think>" before the answer;
the rating is read after the block, and a reply that stops inside it has no rating.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..types import Position

# Tokenizer markers for a leading space / newline (SentencePiece "▁", GPT-2 byte-level "Ġ" and "Ċ").
MARKERS = "▁ĠĊ"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def think_end(text: str) -> int | None:
    """Where the answer starts after a reasoning model's <think> block: 0 without one, None when unclosed.

    DeepSeek-R1 and Qwen3 served by vLLM, llama.cpp or Ollama write "<think>...</think>" before the answer.
    Newer R1 chat templates put the opening tag in the prompt, so the reply carries only "</think>".
    """
    close = text.find(THINK_CLOSE)
    if text.lstrip().lstrip(MARKERS).startswith(THINK_OPEN):  # token lists may carry a marker before it
        return None if close < 0 else close + len(THINK_CLOSE)
    if close >= 0 and THINK_OPEN not in text[:close]:
        return close + len(THINK_CLOSE)
    return 0


def final_text(text: str) -> str | None:
    """The reply after its <think> block (the whole reply without one); None while the block is unclosed."""
    end = think_end(text or "")
    return None if end is None else (text or "")[end:]


def answer_start(positions: Sequence[Position]) -> int | None:
    """Index of the first position after a <think> block (0 without one); None when the block never closes."""
    end = think_end("".join(p.token for p in positions))
    if end is None or end == 0:
        return end
    offset = 0
    for i, position in enumerate(positions):
        if offset >= end:
            return i
        offset += len(position.token)
    return len(positions)  # the reply ends with the closing tag: no answer after it
