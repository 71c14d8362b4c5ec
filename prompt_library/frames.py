"""Notebook API: score a DataFrame (or a list of dicts) with a frozen prompt, and measure agreement, in two calls.

`score_frame` goes through the same road as `geval score`: the rows become a dataset version, the run is
recorded, the runner judges with its retries, cache, context-length and hopeless checks, and the Judgment
columns come back beside the row's own columns. Without `library` everything lives in an in-memory library
for the call; name a library file to keep the run and reuse its judge cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from geval_core.errors import InputError
from geval_core.files.datafiles import records_of
from geval_core.prompts.inputs import require_inputs, rows_as_fields
from geval_core.run.options import RunOptions
from geval_core.run.plan import RunScope
from geval_core.types import FrozenPrompt, Item, Judge

from .library import Library

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["agree_frame", "score_frame"]

JUDGMENT_COLUMNS = (
    "score",
    "top_rating",
    "distribution",
    "valid_mass",
    "parsed",
    "unparsed",
    "error",
    "note",
    "model_version",
    "input_tokens",
    "output_tokens",
    "cached",
    "source",
)


def _text(value: Any) -> str:
    return "" if value is None or value != value else str(value)  # NaN (a pandas gap) is empty too


def _items(
    records: list[dict[str, Any]],
    id_column: str | None,
    group_column: str | None,
    human_columns: Sequence[str],
    inputs: Sequence[str],
) -> list[Item]:
    """The rows as items: the prompt's inputs must be text (`cell_text`'s rule, row and column named), ratings
    numbers, ids present; checked whole before anything is stored or sent."""
    rows = rows_as_fields(records, inputs)
    items = []
    for n, (row, fields) in enumerate(zip(records, rows, strict=True)):
        human = {}
        for name in human_columns:
            value = row.get(name)
            if value is not None and value == value:
                try:
                    human[name] = float(value)
                except (TypeError, ValueError):
                    raise InputError(f"row {n}: the rating {value!r} is not a number", field=name) from None
        item_id = _text(row.get(id_column)) if id_column else str(n)
        if not item_id:
            raise InputError(f"row {n} has no id", field=id_column)
        group = _text(row.get(group_column)) or None if group_column else None
        items.append(Item(item_id, fields, human, group))
    return items


def _stored(prompt: Any, lib: Library) -> tuple[FrozenPrompt, FrozenPrompt]:
    """(the prompt stored in `lib`, the prompt as the caller gave it: a FrozenPrompt, an exported file read once and
    hash-checked, or a library name). Messages name the second: a call's own library numbers versions from 1."""
    from geval_core.files.prompt_files import open_export, read_export

    if isinstance(prompt, FrozenPrompt):
        return lib.freeze(prompt.dimension, name=prompt.name).prompt, prompt
    if str(prompt).endswith(".json"):
        loaded = open_export(read_export(str(prompt)))
        return lib.import_checked(loaded).prompt, loaded.prompt
    stored = lib.get_prompt(str(prompt))
    return stored, stored


def score_frame(
    prompt: Any,
    data: Any,
    judge: Judge | str | None = None,
    *,
    concurrency: int | None = None,
    base_url: str | None = None,
    id_column: str | None = None,
    group_column: str | None = None,
    human_columns: Sequence[str] = (),
    library: str | None = None,
    name: str = "frame",
    use_cache: bool = True,
    cancel: threading.Event | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Score every row with a frozen prompt through the runner; a DataFrame: the rows' columns, then the Judgment's.

    The run is planned as every run is (`geval_core.run.plan`): the judge is the prompt's own, or the one `judge`
    names ("openai:MODEL", as `geval score --judge`), at `base_url`, else the environment's server (OPENAI_BASE_URL),
    else the provider's own API; a server for a judge that takes none (the in-process `local`) is refused. A judge
    object may be passed instead (tests). `frame.attrs` carries the run id, the judge that scored (`judge`,
    `server`) and the runner's summary; the caller's index is kept. `data` may also be a data file's path (.jsonl,
    .csv), `prompt` an exported prompt file or a library name. `human_columns` and `group_column` are stored
    for `agree_frame`. `progress`: a line on stderr (default: on in a terminal or Jupyter). A panel (geval_core.run.panel.Panel, from the library file named by `library`) scores with
    every member: the frame then has the panel's score and distribution, each member's score and the spread.
    """
    import pandas as pd

    from geval_core.run.panel import Panel

    if isinstance(prompt, Panel):
        return _panel_frame(
            prompt, data, judge, concurrency, id_column, group_column, human_columns, library, name, base_url
        )

    from geval_core.run.plan import JudgeChoice, plan_judge, plan_run, record_run, start_run
    from geval_core.run.progress_line import ProgressLine, shows_progress

    records = records_of(data, "score_frame")
    with Library(library or ":memory:", seed_examples=False) as lib:
        stored, given_prompt = _stored(prompt, lib)
        require_inputs(given_prompt, records, "the rows given to score_frame")
        items = _items(records, id_column, group_column, human_columns, stored.dimension.inputs)
        given = judge if judge is not None and not isinstance(judge, str) else None
        if given is not None and base_url is not None:
            raise InputError(
                "base_url= names a server for the judge made here, but a judge object was given: "
                "leave out one of them",
                field="base_url",
            )
        planned = plan_judge(
            stored.dimension.judge,
            JudgeChoice(judge if isinstance(judge, str) else None, base_url, where="base_url="),
            lib,
        )
        dataset = lib.import_items(name, items, source="score_frame")
        plan = record_run(
            lib,
            plan_run(
                lib,
                stored,
                dataset["id"],
                scope=RunScope(new_run=True),
                judge=planned,
                concurrency=concurrency,
                options=RunOptions(use_cache=use_cache),
            ),
        )
        line = (
            ProgressLine(stored.label, plan.total)
            if (shows_progress() if progress is None else progress)
            else None
        )
        try:
            summary = start_run(lib, plan, given, cancel=cancel, on_progress=line)
        finally:
            if line is not None:
                line.close()
        judged = {row["item_id"]: row for row in lib.judgments(plan.run_id)}
    out = pd.DataFrame(records, index=data.index if isinstance(data, pd.DataFrame) else None)
    for column in JUDGMENT_COLUMNS:
        out[column] = [judged.get(item.id, {}).get(column) for item in items]
    out.attrs.update(
        run_id=plan.run_id,
        prompt=stored.label,
        summary=summary.to_dict(),
        item_ids=[item.id for item in items],
        judge=planned.describe(),
        server=planned.server,
        settings=asdict(planned.settings),
    )
    return out


def _panel_frame(
    panel: Any,
    data: Any,
    judge: Any,
    concurrency: int | None,
    id_column: str | None,
    group_column: str | None,
    human_columns: Sequence[str],
    library: str | None,
    name: str,
    base_url: str | None,
) -> pd.DataFrame:
    """score_frame for a panel: each member planned and scored (its run reused when it exists), then the rule."""
    import pandas as pd

    from geval_core.run.panel import score_panel

    if library is None:
        raise InputError("a panel lives in a library: name its file with library=", field="library")
    if isinstance(judge, str):
        raise InputError(
            "a panel's members keep their own frozen judges: judge= is for a single prompt", field="judge"
        )
    records = records_of(data, "score_frame")
    with Library(library) as lib:
        members = [lib.get_prompt(m) for m in panel.members]
        require_inputs(members[0], records, "the rows given to score_frame")
        items = _items(records, id_column, group_column, human_columns, members[0].dimension.inputs)
        dataset = lib.import_items(name, items, source="score_frame")
        judge_for = (
            None
            if judge is None
            else (judge if callable(judge) and not hasattr(judge, "judge") else (lambda _settings: judge))
        )
        result = score_panel(
            lib, panel, dataset["id"], judge_for, base_url=base_url, concurrency=concurrency, resamples=500
        )
    by_id = {row["id"]: row for row in result["rows"]}
    out = pd.DataFrame(records, index=data.index if isinstance(data, pd.DataFrame) else None)
    out["score"] = [by_id[i.id]["score"] for i in items]
    out["distribution"] = [by_id[i.id]["distribution"] for i in items]
    out["spread"] = [by_id[i.id]["spread"] for i in items]
    for member in members:
        out[member.label] = [by_id[i.id]["members"][member.label] for i in items]
    out.attrs.update(
        panel=panel.label,
        rule=panel.rule,
        alpha=result["alpha"],
        run_ids=[m["run"] for m in result["member_runs"]],
        judges={m["prompt"]: m["judge"] for m in result["member_runs"]},
    )
    return out


def agree_frame(
    frame: Any,
    human: str,
    group: str | None = None,
    cluster: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Agreement of a scored frame's `score` with the `human` column, one row per figure with its 95% interval.

    `group`: the per-group reading (groups resampled); `cluster`: the dataset reading with the items of one
    cluster (e.g. a source document) resampled together. `no_interval` says why a figure has no interval (too
    few groups resampled, ...); `attrs` holds the whole result.
    """
    import pandas as pd

    from geval_core.stats import agreement

    for column in ("score", human, *(c for c in (group, cluster) if c)):
        if column not in frame.columns:
            raise InputError(
                f"the frame has no column {column!r} (score it with score_frame first)", field=column
            )
    groups = [_text(g) for g in frame[group]] if group else None
    clusters = [_text(c) for c in frame[cluster]] if cluster else None
    result = agreement(
        pd.to_numeric(frame["score"], errors="coerce").tolist(),
        pd.to_numeric(frame[human], errors="coerce").tolist(),
        groups=groups,
        bootstrap=bootstrap,
        seed=seed,
        clusters=clusters,
    )
    figures = ("spearman", "kendall", "pearson", "kappa", "kappa_linear", "kappa_quadratic", "tie_rate")
    rows = [
        {
            "figure": f,
            "value": getattr(result, f),
            "low": (result.ci.get(f) or [None, None])[0],
            "high": (result.ci.get(f) or [None, None])[1],
            "no_interval": no_interval(result, f),
        }
        for f in figures
    ]
    table = pd.DataFrame(rows)
    table.attrs.update(result.to_dict())
    return table


def no_interval(result: Any, figure: str) -> str:
    """Why the figure has no interval, as `geval agree` says it ("" when it has one)."""
    if (result.ci.get(figure) or [None])[0] is not None:
        return ""
    if not result.bootstrap:
        return "no intervals: bootstrap=0"
    if (
        result.ci_warning
    ):  # too few units resampled: e.g. "no intervals: 4 groups resampled, fewer than 10 ..."
        return result.ci_warning
    if getattr(result, figure) is None:
        return "no value, so no interval"
    undefined = result.ci_undefined.get(figure, 0)
    if undefined:
        return f"no interval: {undefined} of {result.bootstrap} resamples undefined (over 5%)"
    return "no interval"
