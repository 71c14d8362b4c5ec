"""The neutral data shapes every part of the workbench passes around.

Nothing here knows about a judge API, SQLite or Streamlit: providers produce `JudgeReply`,
scoring reads it, the library stores the dicts that `to_dict` makes.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from .errors import ConfigError

HAND_WRITTEN = "written by hand"


def steps_origin(steps_model: str) -> str:
    """'written by hand', or 'written by MODEL' for steps a model wrote."""
    return steps_model if steps_model == HAND_WRITTEN else f"written by {steps_model}"


Mode = Literal["logprobs", "sampling", "auto"]
MODES: tuple[str, ...] = get_args(Mode)
ScoredMode = Literal["logprobs", "sampling"]  # what one request asks for; auto resolves to one of them
# OpenAI's reasoning_effort values; None sends none (the model's own default).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")


def bounded(default: float | int, low: float | int, high: float | int, help: str) -> Any:
    """A dataclass field with its bounds and help stated once (read by checks, click and the pages)."""
    return field(default=default, metadata={"min": low, "max": high, "help": help})


@dataclass(frozen=True)
class Bounds:
    """The allowed range of one numeric setting and what it means."""

    min: float | int
    max: float | int
    help: str


@functools.cache  # fields never change; every judge request checks two of them
def bounds_of(cls: type, name: str) -> Bounds:
    """The bounds of a `bounded` field of a dataclass."""
    meta = next(f.metadata for f in fields(cls) if f.name == name)
    return Bounds(meta["min"], meta["max"], meta["help"])


def check_bounds(instance: Any) -> None:
    """ConfigError for the first bounded field outside its range."""
    for f in fields(instance):
        if "min" in f.metadata:
            value = getattr(instance, f.name)
            if not f.metadata["min"] <= value <= f.metadata["max"]:
                raise ConfigError(
                    f"{f.name} must be between {f.metadata['min']} and {f.metadata['max']}, got {value}"
                )


@dataclass(frozen=True)
class Scale:
    """An integer rating scale, both ends included (e.g. 1-5)."""

    min: int = 1
    max: int = 5

    def __post_init__(self) -> None:
        if int(self.min) != self.min or int(self.max) != self.max:
            raise ConfigError(f"scale ends must be integers, got {self.min}-{self.max}")
        if self.min > self.max:
            raise ConfigError(f"scale minimum {self.min} is above its maximum {self.max}")

    @property
    def points(self) -> list[int]:
        """Every allowed rating, lowest first."""
        return list(range(self.min, self.max + 1))

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and self.min <= value <= self.max

    def __str__(self) -> str:
        return f"{self.min}-{self.max}"


@dataclass(frozen=True)
class ExportedJudge:
    """What an export to another tool may say of the frozen judge: its provider's facts (ProviderSpec)."""

    openai_model: bool = (
        False  # other tools may name its model as an OpenAI model (promptfoo, DeepEval, graders)
    )
    primed_in_process: bool = False  # it runs in this process with its reply primed: no other tool reaches it


@dataclass(frozen=True)
class JudgeSettings:
    """Which judge scores a prompt and how: part of the frozen metric."""

    provider: str = "local"  # local | openai | gemini | vertex
    model: str = "smollm2-135m-instruct"
    base_url: str | None = None  # OpenAI-compatible server; not part of the metric hash
    mode: Mode = "logprobs"
    n: int = bounded(1, 1, 100, "replies per item (sampling mode averages them)")
    temperature: float = bounded(0.0, 0.0, 2.0, "sampling temperature")
    top_logprobs: int = bounded(20, 0, 20, "alternatives per position (the APIs give at most 20)")
    max_tokens: int = bounded(5, 1, 4096, "reply budget in tokens")
    seed: int | None = None
    reasoning_effort: str | None = None  # reasoning models only; part of the metric when set
    # Logprobs mode: an item whose rating position holds less probability than this on the allowed ratings
    # has no score (its reply is mostly something else). Part of the metric only when not the default.
    valid_mass_floor: float = bounded(0.5, 0.0, 1.0, "least probability on the allowed ratings for a score")

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ConfigError(
                f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, "
                f"got {self.reasoning_effort!r}"
            )
        check_bounds(self)

    @property
    def judge_id(self) -> str:
        """The short form used on the command line: local, openai:MODEL, gemini:MODEL."""
        return "local" if self.provider == "local" else f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class Example:
    """A rated item shown inside the prompt as an example of one scale point (part of the content hash).

    Items used as examples are left out of every evaluation of the prompt: a judge shown an item's rating
    would be scored on its own answer key.
    """

    point: int
    item_id: str
    fields: dict[str, str]  # the item's inputs, as shown in the prompt
    dataset_id: str = ""  # where the item came from (a dev side, never a sealed test side)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "point": self.point,
            "item_id": self.item_id,
            "fields": dict(self.fields),
            "dataset_id": self.dataset_id,
        }


@dataclass(frozen=True)
class Dimension:
    """One quality dimension: everything a person designs before freezing."""

    name: str
    definition: str
    scale: Scale = field(default_factory=Scale)
    anchors: dict[int, str] = field(default_factory=dict)  # one text per scale point
    inputs: tuple[str, ...] = ("document", "summary")
    steps: tuple[str, ...] = ()
    steps_model: str = HAND_WRITTEN
    template: str = ""  # empty means prompts.default_template(self)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    examples: tuple[Example, ...] = ()  # rated items shown under their scale point's anchor

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (anchor keys as strings; `examples` only when there are some)."""
        data = asdict(self)
        data["anchors"] = {str(k): v for k, v in self.anchors.items()}
        data["inputs"] = list(self.inputs)
        data["steps"] = list(self.steps)
        data.pop("examples")
        if self.examples:
            data["examples"] = [e.to_dict() for e in self.examples]
        return data

    @property
    def example_ids(self) -> set[str]:
        """The ids of the items shown as examples (left out of every evaluation of this prompt)."""
        return {e.item_id for e in self.examples}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dimension:
        """Build from `to_dict` output (or a hand-written dict with the same keys)."""
        scale = data.get("scale") or {}
        return cls(
            name=data["name"],
            definition=data.get("definition", ""),
            scale=Scale(**scale) if isinstance(scale, dict) else scale,
            anchors={int(k): v for k, v in (data.get("anchors") or {}).items()},
            inputs=tuple(data.get("inputs") or ()),
            steps=tuple(data.get("steps") or ()),
            steps_model=data.get("steps_model") or HAND_WRITTEN,
            template=data.get("template") or "",
            judge=JudgeSettings(**(data.get("judge") or {})),
            examples=tuple(
                Example(
                    int(e["point"]),
                    str(e["item_id"]),
                    {str(k): str(v) for k, v in e["fields"].items()},
                    str(e.get("dataset_id") or ""),
                )
                for e in data.get("examples") or ()
            ),
        )


@dataclass(frozen=True)
class FrozenPrompt:
    """An immutable, versioned prompt: a Dimension plus its content hash."""

    id: str  # content hash (sha256 hex) of the metric-defining fields
    name: str
    version: int
    dimension: Dimension
    created_at: str  # ISO 8601, UTC

    @property
    def label(self) -> str:
        """name@version, as the CLI accepts it."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Item:
    """One thing to score: its input fields, optional human ratings and group (e.g. doc_id)."""

    id: str
    fields: dict[str, str]
    human: dict[str, float] = field(default_factory=dict)
    group: str | None = None


@dataclass(frozen=True)
class TopLogprob:
    """One alternative token at a generated position."""

    token: str
    logprob: float


@dataclass(frozen=True)
class Position:
    """One generated position: the chosen token and its top alternatives."""

    token: str
    logprob: float
    top: tuple[TopLogprob, ...] = ()

    def to_list(self) -> list[Any]:
        """[token, logprob, [[token, logprob], ...]]: compact, so a cached reply with 20 alternatives stays small."""
        return [self.token, self.logprob, [[t.token, t.logprob] for t in self.top]]

    @classmethod
    def from_list(cls, data: list[Any]) -> Position:
        """Rebuild from `to_list` output."""
        token, logprob, top = data
        return cls(token, float(logprob), tuple(TopLogprob(t, float(lp)) for t, lp in top))


@dataclass(frozen=True)
class Choice:
    """One reply: its text and, when the judge gives them, its per-position logprobs."""

    text: str
    positions: tuple[Position, ...] | None = None


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the judge."""

    input_tokens: int = 0
    output_tokens: int = 0
    # Of input_tokens, those the server read from its prompt cache (billed at the cached rate where there is one).
    cached_input_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready dict; cached_input_tokens only when some were reported, so a reply without any is stored
        exactly as before the field existed (cache entries keep their hashes)."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cached_input_tokens:
            out["cached_input_tokens"] = self.cached_input_tokens
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """Rebuild from `to_dict` output (absent counts are 0)."""
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("cached_input_tokens", 0)),
        )

    @classmethod
    def total(cls, usages: list[Usage]) -> Usage:
        """The sum of several usages (the calls of one item)."""
        return cls(
            sum(u.input_tokens for u in usages),
            sum(u.output_tokens for u in usages),
            sum(u.cached_input_tokens for u in usages),
        )


@dataclass(frozen=True)
class JudgeRequest:
    """Rendered messages plus validated decoding options for one judge call."""

    messages: tuple[dict[str, str], ...]
    model: str
    temperature: float = 0.0
    max_tokens: int = 5
    logprobs: bool = True
    top_logprobs: int = 20
    n: int = 1
    seed: int | None = None
    # Text the assistant turn starts with ("- Coherence: "); only judges that can prime use it.
    assistant_prefix: str | None = None
    # The allowed ratings, so a judge that sees the whole distribution (local) can report all of them.
    ratings: tuple[int, ...] = ()
    reasoning_effort: str | None = None  # sent to reasoning models only
    # Names the prompt prefix this request shares with others (the prompt and the item's source document), so a
    # provider that routes by it (OpenAI's prompt_cache_key) sends them to one cache. Never part of the answer.
    prefix_key: str | None = None

    def __post_init__(self) -> None:
        for name in ("top_logprobs", "temperature"):
            bounds = bounds_of(JudgeSettings, name)
            if not bounds.min <= getattr(self, name) <= bounds.max:
                raise ConfigError(
                    f"{name} must be between {bounds.min} and {bounds.max}, got {getattr(self, name)}"
                )
        if self.n < 1:
            raise ConfigError(f"n must be at least 1, got {self.n}")


@dataclass(frozen=True)
class JudgeReply:
    """What a judge answered, in one shape for every provider."""

    choices: tuple[Choice, ...]
    model_version: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    raw: Any = None  # the provider's JSON, for audit; never contains a key

    @property
    def texts(self) -> list[str]:
        """Every reply text."""
        return [c.text for c in self.choices]

    def to_dict(self, keep_raw: bool = False) -> dict[str, Any]:
        """A JSON-ready dict (the raw provider payload only when keep_raw), for the judge cache."""
        return {
            "choices": [
                {
                    "text": c.text,
                    "positions": None if c.positions is None else [p.to_list() for p in c.positions],
                }
                for c in self.choices
            ],
            "model_version": self.model_version,
            "usage": self.usage.to_dict(),
            "latency_s": self.latency_s,
            "raw": _json_safe(self.raw) if keep_raw else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeReply:
        """Rebuild a reply from `to_dict` output."""
        choices = tuple(
            Choice(
                c["text"],
                None if c.get("positions") is None else tuple(Position.from_list(p) for p in c["positions"]),
            )
            for c in data["choices"]
        )
        return cls(
            choices,
            data.get("model_version", ""),
            Usage.from_dict(data.get("usage") or {}),
            float(data.get("latency_s", 0.0)),
            data.get("raw"),
        )

    @classmethod
    def merge(cls, replies: list[JudgeReply]) -> JudgeReply:
        """One reply holding every choice of several (replica requests of one item), usage summed."""
        if len(replies) == 1:
            return replies[0]
        return cls(
            tuple(c for r in replies for c in r.choices),
            replies[0].model_version,
            Usage.total([r.usage for r in replies]),
            sum(r.latency_s for r in replies),
            None,
        )


def _json_safe(value: Any) -> Any:
    """The value if it survives a JSON round trip, else None (raw payloads are for audit only)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


@runtime_checkable
class Judge(Protocol):
    """A judge model behind one method; every provider implements it."""

    provider: str  # the registry name of the provider (see providers.registry)
    primes: bool  # honours JudgeRequest.assistant_prefix: the reply continues after the given text

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Answer one request; raise RetryableJudgeError for transient failures, JudgeError otherwise."""
        ...
