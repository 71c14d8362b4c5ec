"""What a prompt may be called: names end up in tables, file names and generated code, so keep them plain."""

from __future__ import annotations

import re
import unicodedata

from ..errors import InputError

__all__ = [
    "NAME_RULE",
    "check_dimension_name",
    "check_name",
    "check_new_name",
    "is_name",
    "look_alike",
    "normal_name",
    "skeleton",
    "slug",
]

NAME_RULE = "letters, digits, spaces and - _ . only, starting with a letter or digit, at most 100 characters"


# Letters of other scripts drawn like Latin ones: "cоherence" (Cyrillic о) must not pass for "coherence".
_CONFUSABLE = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ɡ": "g",
        "α": "a",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "0": "o",
        "1": "l",
        "_": "-",
        " ": "-",
        ".": "-",
    }
)


def normal_name(name: str) -> str:
    """The name in Unicode NFKC form (full-width letters, ligatures and compatibility forms folded)."""
    return unicodedata.normalize("NFKC", name)


def skeleton(name: str) -> str:
    """What a name looks like: NFKC, case-folded, look-alike letters and separators mapped to one form."""
    return normal_name(name).casefold().translate(_CONFUSABLE)


def look_alike(name: str, existing: list[str]) -> str | None:
    """An existing name that `name` would be mistaken for (same look, other characters), or None."""
    mine = skeleton(name)
    return next((other for other in existing if other != name and skeleton(other) == mine), None)


def slug(name: str) -> str:
    """'Answer Relevance' -> 'answer-relevance': the library name of a dimension's prompts."""
    return re.sub(r"[^a-z0-9_.]+", "-", name.strip().lower()).strip("-._") or "prompt"


def is_name(name: object) -> bool:
    """Whether `name` follows NAME_RULE (Unicode letters and digits count; quotes, slashes, controls do not)."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 100
        and name[0].isalnum()
        and name == name.strip()
        and all(c.isalnum() or c in " -_." for c in name)
    )


def check_name(name: str, kind: str = "prompt") -> str:
    """The library name (NFKC-normalised) when it follows NAME_RULE; InputError saying the rule otherwise."""
    if not is_name(name):
        raise InputError(f"{kind} name {name!r} cannot be used: a name has {NAME_RULE}", field="name")
    return normal_name(name)


def check_new_name(name: str, known: list[str], kind: str) -> str:
    """check_name, and refused when it looks like one of the `known` names of its kind (other characters)."""
    label = check_name(name, kind)
    twin = look_alike(label, known)
    if twin is not None:
        raise InputError(
            f"the {kind} name {label!r} looks like the library's {twin!r} but is spelled with other "
            f"characters; use {twin!r} or a name that does not look like it",
            field="name",
        )
    return label


def check_dimension_name(name: str) -> None:
    """InputError when the dimension name holds control or invisible format characters (it ends the form line)."""
    bad = [c for c in name if unicodedata.category(c).startswith("C")]
    if bad:
        raise InputError(
            f"dimension name {name!r} holds a control or invisible character ({bad[0]!r}); "
            "the reply form ends on this name, so use visible characters only",
            field="name",
        )
