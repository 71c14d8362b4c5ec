"""The scoring rules of the Inspect AI export as plain Python text: geval_core/scoring's weighted.py, think.py
and reply_check.py written out for a file that imports nothing of the workbench (never formatted: the export puts
the prompt's own constants, SCALE, VALID_MASS_FLOOR and PROMPT among them, in front of it).

tests/files/test_inspect_export.py checks these rules against geval_core's on the same token lists.
"""

from __future__ import annotations

RULES = '''
RATINGS = tuple(range(SCALE[0], SCALE[1] + 1))
SPELLINGS = {str(r): r for r in RATINGS}  # each rating's text ("-2" ... "10") -> the rating
MARKERS = "\\u2581\\u0120\\u010a"  # tokenizer marks for a leading space or newline (SentencePiece, GPT-2 bytes)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# A "1" alternative that could begin "10" makes the score undecidable only with at least this probability.
AMBIGUOUS_MASS = 0.01
ROUNDING = 1e-6  # APIs round log-probabilities: this far above 0 (or above a mass of 1) is rounding
NUMBER = re.compile(r"\\s*([+-]?[0-9]+(?:\\.[0-9]+)?)")  # ASCII digits only: strict


def render(fields: dict[str, str]) -> str:
    """The frozen prompt with this item's inputs, as the workbench renders it."""
    return "".join(part if isinstance(part, str) else fields[part[0]] for part in PROMPT)


# ---- reasoning replies: the answer starts after a <think> block (think.py) ----------------------------------

def think_end(text: str) -> int | None:
    """Where the answer starts after a <think> block: 0 without one, None while the block is unclosed."""
    close = text.find(THINK_CLOSE)
    if text.lstrip().lstrip(MARKERS).startswith(THINK_OPEN):
        return None if close < 0 else close + len(THINK_CLOSE)
    if close >= 0 and THINK_OPEN not in text[:close]:  # newer chat templates put <think> in the prompt
        return close + len(THINK_CLOSE)
    return 0


def answer_start(positions: list) -> int | None:
    """Index of the first position after a <think> block (0 without one); None when it never closes."""
    end = think_end("".join(token for token, _, _ in positions))
    if end is None or end == 0:
        return end
    offset = 0
    for i, (token, _, _) in enumerate(positions):
        if offset >= end:
            return i
        offset += len(token)
    return len(positions)


# ---- Eq. 1 at the rating position (weighted.py) --------------------------------------------------------------

def strip_token(token: str) -> str:
    """The token without spaces and tokenizer marks (" 3", "\\u25813" -> "3")."""
    return token.strip().strip(MARKERS).strip()


def rating_of(token: str) -> int | None:
    """The integer a token spells (ASCII digits, one leading minus), or None."""
    text = strip_token(token)
    digits = text[1:] if text.startswith("-") else text
    return int(text) if digits.isascii() and digits.isdigit() else None


def in_scale(value: int | None) -> bool:
    """Whether a rating is one the scale allows."""
    return value is not None and SCALE[0] <= value <= SCALE[1]


def pairs(alternatives: list) -> dict[str, float]:
    """Token -> logprob; a token listed twice is one alternative reported twice, so keep the larger."""
    best: dict[str, float] = {}
    for token, logprob in alternatives:
        logprob = float(logprob)
        if math.isnan(logprob):
            continue
        best[token] = max(logprob, best.get(token, -math.inf))
    return best


def weighted(alternatives: list) -> dict | None:
    """Eq. 1: sum of p(r) * r over the allowed ratings, renormalised over them; None without valid mass."""
    raw = {r: 0.0 for r in RATINGS}
    for token, logprob in pairs(alternatives).items():
        rating = rating_of(token)
        if rating in raw:
            raw[rating] += math.exp(min(logprob, 0.0))  # rounding can put a logprob a hair above 0
    mass = sum(raw.values())
    if mass <= 0.0:
        return None
    raw_score = sum(r * p for r, p in raw.items())
    score = min(max(raw_score / mass, float(SCALE[0])), float(SCALE[1]))  # float division can land a hair outside
    top = max(raw, key=lambda r: (raw[r], -r))  # ties go to the lower rating
    return {"score": score, "raw_score": raw_score, "distribution": {r: p / mass for r, p in raw.items()},
            "valid_mass": mass, "top_rating": top}


def alternatives_at(position: tuple) -> dict[str, float]:
    """The chosen token and its top alternatives (the chosen one may be missing from the list)."""
    token, logprob, top = position
    return pairs([*top, (token, logprob)])


def extends(text: str) -> bool:
    """Whether `text` is a proper prefix of an allowed rating ("-" of "-1", "1" of "10")."""
    return any(spelled != text and spelled.startswith(text) for spelled in SPELLINGS)


def starts_number(positions: list, i: int) -> bool:
    """A digit, or a minus followed by a digit (in the same token or the next): never a bullet's dash."""
    text = strip_token(positions[i][0])
    if text[:1].isascii() and text[:1].isdigit():
        return True
    if text == "-" and i + 1 < len(positions):
        following = strip_token(positions[i + 1][0])[:1]
        return following.isascii() and following.isdigit()
    return text[:1] == "-" and text[1:2].isascii() and text[1:2].isdigit()


def find_index(positions: list) -> int | None:
    """The rating position: the first token after any <think> block that starts a number; failing that, the
    first whose alternatives hold an allowed rating or the start of one (a primed judge)."""
    start = answer_start(positions)
    if start is None:
        return None  # still thinking when the reply stopped
    for i in range(start, len(positions)):
        if starts_number(positions, i):
            return i
    for i in range(start, len(positions)):
        if any(in_scale(rating_of(t)) or extends(strip_token(t)) for t in alternatives_at(positions[i])):
            return i
    return None


def stripped(position: tuple) -> dict[str, float]:
    """Stripped token -> probability at one position."""
    probs: dict[str, float] = {}
    for token, logprob in alternatives_at(position).items():
        key = strip_token(token)
        probs[key] = probs.get(key, 0.0) + math.exp(min(logprob, 0.0))
    return probs


def walk(positions: list, i: int, prefix: str, mass: float, whole: bool, paths: dict) -> None:
    """Spread `mass` (the probability of `prefix` before position i) over the ratings it can become: the chosen
    path is followed as far as it goes, the other branches end where the API's list does."""
    probs, chosen = stripped(positions[i]), strip_token(positions[i][0])
    for key, p in probs.items():
        text, share = prefix + key, mass * p
        piece = key.isascii() and key.isdigit() if prefix else (rating_of(key) is not None or key == "-")
        if not piece:  # the number ended (or never began) before this token
            if prefix in SPELLINGS:
                paths["ratings"][SPELLINGS[prefix]] += share
            continue
        if text in SPELLINGS and not extends(text):
            paths["ratings"][SPELLINGS[text]] += share
        elif extends(text) and key == chosen and i + 1 < len(positions):
            walk(positions, i + 1, text, share, whole, paths)
        elif text in SPELLINGS:  # a rating that might go on ("1" of "10"), its continuation not shown
            paths["ratings"][SPELLINGS[text]] += share
            if key == chosen:
                paths["cut_off"] = True
            elif not whole:
                paths["undecided"] += share
        elif extends(text):
            paths["unresolved"] += share
            paths["cut_off"] = paths["cut_off"] or key == chosen
    if prefix:  # what the list leaves out after a prefix: the end of a rating when the prefix is one
        rest = mass * max(0.0, 1.0 - sum(probs.values()))
        if prefix in SPELLINGS:
            paths["ratings"][SPELLINGS[prefix]] += rest
        else:
            paths["unresolved"] += rest


def position_score(positions: list) -> tuple[dict | None, bool]:
    """Eq. 1 of one reply's token positions, and whether a rating spelled over several tokens is undecided."""
    index = find_index(positions)
    if index is None:
        return None, False
    whole = any(len(k) > 1 and k in SPELLINGS and not k.startswith("-") for k in stripped(positions[index]))
    paths = {"ratings": dict.fromkeys(RATINGS, 0.0), "unresolved": 0.0, "undecided": 0.0, "cut_off": False}
    walk(positions, index, "", 1.0, whole, paths)
    ambiguous = (paths["cut_off"] or paths["undecided"] >= AMBIGUOUS_MASS
                 or paths["unresolved"] >= AMBIGUOUS_MASS)
    alternatives = [(str(r), math.log(p)) for r, p in paths["ratings"].items() if p > 0.0]
    return weighted(alternatives), ambiguous


def impossible(choices: list) -> str | None:
    """Where a reply's log-probabilities are impossible (NaN, infinite, above 0, more than all the mass on the
    ratings), or None (reply_check.py)."""
    several = len(choices) > 1
    for c, (_, positions) in enumerate(choices, 1):
        for p, (token, logprob, top) in enumerate(positions or (), 1):
            best: dict[str, float] = {}
            for alt_token, value in [(token, logprob), *top]:
                value = float(value)
                if math.isnan(value) or math.isinf(value) or value > ROUNDING:
                    return f"{f'choice {c}, ' if several else ''}position {p}: log-probability {value} for {alt_token!r}"
                best[alt_token] = max(value, best.get(alt_token, -math.inf))
            rated = sum(math.exp(lp) for alt, lp in best.items() if in_scale(rating_of(alt)))
            if rated > 1.0 + ROUNDING:
                return f"position {p}: the allowed ratings carry probability {rated:.6g} in all"
    return None


def logprobs_result(choices: list) -> dict:
    """The item's weighted score: the mean over the replies that have a rating position, and no score below
    the valid-mass floor."""
    problem = impossible(choices)
    if problem is not None:
        return {"score": None, "note": f"the judge sent impossible log-probabilities: {problem}"}
    scored = []
    for _, positions in choices:
        if positions:
            result, ambiguous = position_score(positions)
            if result is not None:
                scored.append((result, ambiguous))
    if not scored:
        return {"score": None, "note": f"no rating on the {SCALE[0]}-{SCALE[1]} scale in the reply"}
    k = len(scored)
    result = {"score": statistics.fmean(w["score"] for w, _ in scored),
              "raw_score": statistics.fmean(w["raw_score"] for w, _ in scored),
              "distribution": {r: sum(w["distribution"][r] for w, _ in scored) / k for r in RATINGS},
              "valid_mass": statistics.fmean(w["valid_mass"] for w, _ in scored),
              "top_rating": scored[0][0]["top_rating"], "ambiguous": any(a for _, a in scored), "mode": "logprobs"}
    if result["valid_mass"] < VALID_MASS_FLOOR:
        result["note"] = (f"the judge put {result['valid_mass']:.1%} of the probability on the ratings (the floor is "
                          f"{VALID_MASS_FLOOR:.0%})")
        result["score"] = result["raw_score"] = None
    return result


# ---- sampled replies (weighted.py) ---------------------------------------------------------------------------

def parse_reply(text: str) -> float | None:
    """The number a reply starts with after any <think> block ("4", " 3.5 - good"), else None ("Score: 4")."""
    end = think_end(text or "")
    if end is None:
        return None
    text = (text or "")[end:]
    match = NUMBER.match(text)
    if not match:
        return None
    after = text[match.end():match.end() + 1]
    if after and (after.isalnum() or after == "_" or (after == "." and text[match.end() + 1:][:1].isdigit())):
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def sampled_result(texts: list[str]) -> dict:
    """The mean of the replies that parse strictly and lie on the scale."""
    values = [v for v in map(parse_reply, texts) if v is not None and SCALE[0] <= v <= SCALE[1]]
    if not values:
        return {"score": None, "note": f"none of the {len(texts)} replies is a rating on the scale", "mode": "sampling"}
    return {"score": statistics.fmean(values), "values": values, "parsed": len(values),
            "unparsed": len(texts) - len(values), "mode": "sampling"}
'''
