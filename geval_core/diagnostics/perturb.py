"""Damaged copies of an item's output, one kind per dimension, for the perturbation probes.

A judge of coherence should rate a summary lower once its sentences are shuffled; a judge of fluency
once words are dropped or doubled; of consistency once a number or a name is swapped; of relevance
once a sentence from another item is put in. Each function returns None when it cannot damage the
text (one sentence, no number or name): such items are left out of the probe, not counted as noticed.
"""

from __future__ import annotations

import random
import re

SENTENCE = re.compile(r"(?<=[.!?])\s+")
NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")
KINDS = {"coherence": "shuffle", "fluency": "words", "consistency": "swap", "relevance": "foreign"}


def sentences(text: str) -> list[str]:
    """The text split after ., ! or ? followed by white space."""
    return [s for s in SENTENCE.split(text.strip()) if s]


def shuffle_sentences(text: str, rng: random.Random) -> str | None:
    """The same sentences in another order (None with fewer than 2 distinct sentences)."""
    parts = sentences(text)
    if len(set(parts)) < 2:
        return None
    order = parts[:]
    while order == parts:
        rng.shuffle(order)
    return " ".join(order)


def drop_or_double_words(text: str, rng: random.Random, share: float = 0.15) -> str | None:
    """About `share` of the words dropped or doubled, at least one (None for fewer than 4 words)."""
    words = text.split()
    if len(words) < 4:
        return None
    picks = set(rng.sample(range(len(words)), max(1, round(share * len(words)))))
    out: list[str] = []
    for k, word in enumerate(words):
        if k not in picks:
            out.append(word)
        elif rng.random() < 0.5:
            out.extend([word, word])
    return " ".join(out)


def swap_fact(text: str, rng: random.Random) -> str | None:
    """One number changed, else two different names swapped (None when there is neither)."""
    numbers = list(NUMBER.finditer(text))
    if numbers:
        m = rng.choice(numbers)
        digits = re.sub(r"\D", "", m.group())
        new = str(int(digits) + rng.choice([1, 2, 3, 7]) * (1 if int(digits) < 5 else rng.choice([1, -1])))
        return text[: m.start()] + new + text[m.end() :]
    names = list(dict.fromkeys(m.group() for m in NAME.finditer(text)))
    if len(names) < 2:
        return None
    a, b = rng.sample(names, 2)
    return re.sub(rf"\b({re.escape(a)}|{re.escape(b)})\b", lambda m: b if m.group() == a else a, text)


def foreign_sentence(text: str, other: str, rng: random.Random) -> str | None:
    """A sentence of another item's text put in at a random place (None when `other` has none new)."""
    candidates = [s for s in sentences(other) if s not in text]
    if not candidates:
        return None
    parts = sentences(text) or [text]
    parts.insert(rng.randint(0, len(parts)), rng.choice(candidates))
    return " ".join(parts)


def kind_for(dimension_name: str) -> str | None:
    """The perturbation that a judge of this dimension should notice (None for other dimensions)."""
    name = dimension_name.lower()
    return next((kind for key, kind in KINDS.items() if key in name), None)


def perturb(kind: str, text: str, other: str, rng: random.Random) -> str | None:
    """A damaged copy of `text` of the given kind; `other` is another item's text (for "foreign")."""
    if kind == "shuffle":
        return shuffle_sentences(text, rng)
    if kind == "words":
        return drop_or_double_words(text, rng)
    if kind == "swap":
        return swap_fact(text, rng)
    if kind == "foreign":
        return foreign_sentence(text, other, rng)
    raise ValueError(f"unknown perturbation {kind!r}; known: {', '.join(KINDS.values())}")
