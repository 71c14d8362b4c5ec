"""The neutral data shapes every part of the workbench passes around.

Nothing here knows about a judge API, SQLite or Streamlit: providers produce `JudgeReply`,
scoring reads it, the library stores the dicts that `to_dict` makes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

HAND_WRITTEN = "written by hand"
MODES = ("logprobs", "sampling", "auto")


@dataclass(frozen=True)
class Scale:
    """An integer rating scale, both ends included (e.g. 1-5)."""

    min: int = 1
    max: int = 5

    def __post_init__(self) -> None:
        if int(self.min) != self.min or int(self.max) != self.max:
            raise ValueError(f"scale ends must be integers, got {self.min}-{self.max}")
        if self.min > self.max:
            raise ValueError(f"scale minimum {self.min} is above its maximum {self.max}")

    @property
    def points(self) -> list[int]:
        """Every allowed rating, lowest first."""
        return list(range(self.min, self.max + 1))

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and self.min <= value <= self.max

    def __str__(self) -> str:
        return f"{self.min}-{self.max}"


@dataclass(frozen=True)
class JudgeSettings:
    """Which judge scores a prompt and how: part of the frozen metric."""

    provider: str = "local"  # local | openai | gemini
    model: str = "smollm2-135m-instruct"
    base_url: str | None = None  # OpenAI-compatible server; not part of the metric hash
    mode: str = "logprobs"  # logprobs | sampling | auto
    n: int = 1
    temperature: float = 0.0
    top_logprobs: int = 20
    max_tokens: int = 5
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not 1 <= self.n <= 100:
            raise ValueError(f"n must be between 1 and 100, got {self.n}")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature must be between 0 and 2, got {self.temperature}")
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be between 0 and 20, got {self.top_logprobs}")
        if not 1 <= self.max_tokens <= 4096:
            raise ValueError(f"max_tokens must be between 1 and 4096, got {self.max_tokens}")

    @property
    def judge_id(self) -> str:
        """The short form used on the command line: local, openai:MODEL, gemini:MODEL."""
        return "local" if self.provider == "local" else f"{self.provider}:{self.model}"


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (anchor keys as strings)."""
        data = asdict(self)
        data["anchors"] = {str(k): v for k, v in self.anchors.items()}
        data["inputs"] = list(self.inputs)
        data["steps"] = list(self.steps)
        return data

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

    def __post_init__(self) -> None:
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be between 0 and 20, got {self.top_logprobs}")
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature must be between 0 and 2, got {self.temperature}")


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
