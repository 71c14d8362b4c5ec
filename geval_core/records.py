"""The store's records of runs and dataset versions: frozen, typed, decoded once where the store reads them.

`as_dict` gives the dict shape these records had before they were typed (the CLI's JSON, files written to disk).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import Any

from .types import JudgeSettings

_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class DatasetMapping:
    """Where each item's parts come from in a row: dotted paths into JSON, column names in CSV."""

    id: str = "id"
    inputs: dict[str, str] = field(default_factory=dict)  # input field -> source path
    human: dict[str, str] = field(default_factory=dict)  # rating name -> source path
    group: str | None = None  # e.g. "doc_id", for summary-level agreement
    # Ratings saved on the Rate page: dimension -> the people behind NAME.0, NAME.1, ... (in that order).
    raters: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored with the dataset version)."""
        return asdict(self)


def judge_settings(data: Mapping[str, Any] | None) -> JudgeSettings:
    """A run's stored judge settings as JudgeSettings (keys this version does not know are left out)."""
    known = {f.name for f in fields(JudgeSettings)}
    return JudgeSettings(**{k: v for k, v in (data or {}).items() if k in known})


def _mapping(data: Mapping[str, Any]) -> DatasetMapping:
    known = {f.name for f in fields(DatasetMapping)}
    return DatasetMapping(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Run:
    """One run: a prompt scored on a dataset version by one judge, with its labels and counts."""

    id: str
    prompt_id: str
    dataset_id: str
    judge: JudgeSettings
    item_ids: tuple[str, ...] | None  # None: the whole dataset version
    status: str
    items_total: int
    created_at: str
    finished_at: str | None = None
    model_version: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    digest: str | None = None
    prompt_label: str = ""
    dataset_label: str = ""
    judged: int = 0  # items with a judgment
    errors: int = 0  # of those, items whose latest attempt errored
    # The open-ended facts stored in the run's extra column (plan, mode, tally, batch_id, ...).
    extra: Mapping[str, Any] = field(default_factory=lambda: _NO_EXTRA)
    # The judge exactly as the row holds it, for as_dict only: a run stored before a setting existed prints
    # without it, as it always did (code reads `judge`).
    stored_judge: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_stored(
        cls, row: Mapping[str, Any], judge: Mapping[str, Any] | None, item_ids: Any, extra: Mapping[str, Any]
    ) -> Run:
        """A run from its joined row and its decoded judge, item_ids and extra columns (an extra key that a
        field has is left out: the field wins, as it always did)."""
        own = {f.name for f in fields(cls)} - {"extra", "stored_judge"}
        return cls(
            **{k: row[k] for k in own - {"judge", "item_ids"} if k in row},
            judge=judge_settings(judge),
            item_ids=None if item_ids is None else tuple(item_ids),
            extra=MappingProxyType({k: v for k, v in extra.items() if k not in own}),
            stored_judge=dict(judge or {}),
        )

    @property
    def mode(self) -> str | None:
        """The scoring mode the run's last session used (logprobs, sampling), once finished."""
        return self.extra.get("mode")

    @property
    def plan(self) -> Mapping[str, Any]:
        """What the run keeps of its plan (server, where it came from, side, split); empty before recorded."""
        return self.extra.get("plan") or {}

    @property
    def purpose(self) -> str:
        """What a run made by a check is for ("stability repeat 2 of 3", "drift check of WATCH", "probe KIND of
        RUN", "drift reference of RUN"); "" for a scoring run."""
        extra = self.extra
        if extra.get("stability"):
            return str(extra["stability"])
        if isinstance(extra.get("drift"), Mapping):
            return f"drift check of {extra['drift'].get('name')}"
        if isinstance(extra.get("probe"), Mapping):
            return f"probe {extra['probe'].get('kind')} of {extra['probe'].get('of')}"
        if extra.get("drift_reference"):
            return f"drift reference of {extra['drift_reference']}"
        return ""

    @property
    def batch_id(self) -> str | None:
        """The provider's batch the run was submitted as, for a batch run."""
        return self.extra.get("batch_id")

    @property
    def run_error(self) -> str | None:
        """Why the run stopped, when it failed."""
        return self.extra.get("run_error")

    def __reduce__(self) -> tuple[Any, ...]:
        # A mappingproxy does not pickle: the extra facts travel as a plain dict (caches, worker processes).
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return (_unpickled_run, ({**values, "extra": dict(self.extra)},))

    def as_dict(self) -> dict[str, Any]:
        """The run as the store's dict used to give it: judge as a dict, item_ids as a list, extra keys merged."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "stored_judge")}
        out["judge"] = dict(self.stored_judge) if self.stored_judge is not None else asdict(self.judge)
        out["item_ids"] = None if self.item_ids is None else list(self.item_ids)
        return {**out, **self.extra}


def _unpickled_run(values: dict[str, Any]) -> Run:
    return Run(**{**values, "extra": MappingProxyType(values["extra"])})


@dataclass(frozen=True)
class Dataset:
    """One immutable dataset version: its name, version, where it came from and what its items carry."""

    id: str  # the content hash of its name and items
    name: str
    version: int
    label: str  # name@version
    source: str | None
    mapping: DatasetMapping | None  # how the file's rows were read; None for items stored from memory
    item_count: int
    fields: tuple[str, ...]  # the input fields of its items
    human: tuple[str, ...]  # the human ratings its items carry, sorted
    created_at: str
    # The mapping exactly as the row holds it, for as_dict only (an older version's keys printed unchanged).
    stored_mapping: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_stored(
        cls, row: Mapping[str, Any], mapping: Mapping[str, Any] | None, names: Any, human: Any
    ) -> Dataset:
        """A dataset version from its row and its decoded mapping, field names and rating names."""
        return cls(
            id=row["id"],
            name=row["name"],
            version=row["version"],
            label=f"{row['name']}@{row['version']}",
            source=row["source"],
            mapping=None if mapping is None else _mapping(mapping),
            item_count=row["item_count"],
            fields=tuple(names),
            human=tuple(human),
            created_at=row["created_at"],
            stored_mapping=None if mapping is None else dict(mapping),
        )

    def as_dict(self) -> dict[str, Any]:
        """The version as the store's dict used to give it (mapping as a dict, lists for fields and human)."""
        out = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("label", "stored_mapping")
        }
        if self.stored_mapping is not None:
            out["mapping"] = dict(self.stored_mapping)
        else:
            out["mapping"] = None if self.mapping is None else self.mapping.to_dict()
        out["fields"], out["human"] = list(self.fields), list(self.human)
        return {**out, "label": self.label}
