"""`geval agree`: how well a judge's scores agree with human ratings, from two JSONL/CSV files."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prompt_library import Library, default_path, open_library

from ..errors import GEvalError, InputError
from ..files.datafiles import CSV_SUFFIXES, JSONL_SUFFIXES, read_rows, require
from ..records import DatasetMapping, Run
from ..types import Scale
from .common import complete_dataset, complete_prompt_name, db_option, note_unsaved, workbench_errors

if TYPE_CHECKING:  # numpy is loaded only when agreement is computed
    from ..stats import AgreementResult


@dataclass
class _Rows:
    """Values read from one file, keyed by item id, in file order."""

    values: dict[str, float | None] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    scale: Scale | None = None  # a library run knows its prompt's scale; files leave it to --scale


def _cell_number(value: Any, *, file: str, line: int, field_name: str) -> float | None:
    """A finite number, or None for null / an empty CSV cell; anything else is an InputError."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise InputError(f"not a number: {value!r}", file=file, line=line, field=field_name)
    return number


def _item_id(row: dict[str, Any], id_field: str, *, file: str, line: int) -> str:
    value = require(row, id_field, file=file, line=line)
    if value is None or isinstance(value, (dict, list, bool)) or not str(value).strip():
        raise InputError(f"missing item id (got {value!r})", file=file, line=line, field=id_field)
    return str(value).strip()


def read_scores(path: str, id_field: str, value_field: str, group_field: str | None = None) -> _Rows:
    """Item id -> number (None when null/empty) from a JSONL/CSV file; ids must be unique."""
    rows = _Rows()
    for line, row in read_rows(path):
        item_id = _item_id(row, id_field, file=path, line=line)
        if item_id in rows.lines:
            raise InputError(
                f"duplicate id {item_id!r} (first on line {rows.lines[item_id]})",
                file=path,
                line=line,
                field=id_field,
            )
        value = require(row, value_field, file=path, line=line)
        rows.values[item_id] = _cell_number(value, file=path, line=line, field_name=value_field)
        rows.lines[item_id] = line
        if group_field:
            group = require(row, group_field, file=path, line=line)
            if group is None or isinstance(group, (dict, list)) or not str(group).strip():
                raise InputError(f"missing group (got {group!r})", file=path, line=line, field=group_field)
            rows.groups[item_id] = str(group).strip()
    return rows


def _parse_scale(ctx: click.Context, param: click.Parameter, value: str | None) -> Scale | None:
    if value is None:
        return None
    match = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", value)
    if match is None:
        raise click.BadParameter(f"expected MIN-MAX with integers, e.g. 1-5 or -2-2; got {value!r}")
    try:
        return Scale(int(match[1]), int(match[2]))
    except GEvalError as exc:
        raise click.BadParameter(str(exc)) from None


def _fmt(value: float | None, ci: list[float | None] | None = None) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.3f}"
    if ci and ci[0] is not None:
        text += f"   95% CI [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _bootstrap_line(r: AgreementResult, unit_name: str | None) -> str:
    """What the bootstrap resampled, and which figures got no interval (too few units, too many undefined)."""
    if not r.bootstrap:
        return "- (no intervals: --bootstrap N)"
    if r.ci_warning:
        return f"{r.bootstrap} resamples: {r.ci_warning}"
    hidden = [
        f"{m} ({n} of {r.bootstrap} undefined)"
        for m, n in r.ci_undefined.items()
        if n and r.ci.get(m, [None])[0] is None
    ]
    unit = r.ci_resampled or "items"
    named = f" ({unit_name})" if unit == "groups" and unit_name else ""
    return (
        f"{r.bootstrap} resamples of the {r.ci_units} {unit}{named}"
        + (f"; no interval for {', '.join(hidden)}: over 5% undefined" if hidden else "")
        + f"\n{'':<15}interval: {r.ci_method}"
        + (f"\n{'':<15}CAUTION: {r.ci_flag}" if r.ci_flag else "")
    )


def _groups_line(r: AgreementResult, group_by: str | None) -> str:
    if r.reading == "group":
        return f"{r.groups} used, {r.groups_skipped} skipped (constant side or fewer than 2 items)"
    if r.ci_resampled == "groups":
        return f"- (pooled; the bootstrap resamples the {r.ci_units} {group_by or 'groups'} whole)"
    return "- (not grouped)"


def _table(result: AgreementResult, extra: dict[str, Any], group_by: str | None) -> str:
    """The agreement figures as a text table."""
    r, ci = result, result.ci
    reading = (
        f"group-level: correlated within each {group_by}, averaged over groups"
        if r.reading == "group"
        else "dataset-level: all items pooled"
    )
    rows = [
        ("reading", reading),
        (
            "items",
            f"{r.items}   (missing judge score: {extra['judge_missing']}, missing human rating: "
            f"{extra['human_missing']}, data items not judged: {extra['unjudged']})",
        ),
        ("groups", _groups_line(r, group_by)),
        ("Spearman rho", _fmt(r.spearman, ci.get("spearman"))),
        ("Kendall tau-b", _fmt(r.kendall, ci.get("kendall"))),
        ("Pearson r", _fmt(r.pearson, ci.get("pearson"))),
        ("tie rate", f"{_fmt(r.tie_rate, ci.get('tie_rate'))}   (human: {_fmt(r.human_tie_rate)})"),
        ("kappa", f"{_fmt(r.kappa)}   linear {_fmt(r.kappa_linear)}   quadratic {_fmt(r.kappa_quadratic)}"),
        ("bootstrap", _bootstrap_line(r, group_by)),
        (
            "scale",
            r.scale
            + (
                f"   ({r.out_of_scale} judge scores outside it: kappa clips them to its ends)"
                if r.out_of_scale
                else ""
            ),
        ),
    ]
    scope = extra.get("scope") or {}
    if scope.get("side") or scope.get("examples_left_out"):
        rows.append(("scope", scope_line(scope)))
    head = f"{extra['judge_file']} vs {extra['data_file']} (human: {extra['human_field']})"
    body = "\n".join(f"{name:<14} {text}" for name, text in rows)
    return f"{head}\n{body}\n\nNote: {r.note}"


def scope_line(scope: dict[str, Any]) -> str:
    """'dev side of split 1a2b3c4d5e6f; 2 example items left out' (and the test uses, on the test side)."""
    parts = []
    if scope.get("side"):
        parts.append(f"{scope['side']} side of split {scope['split'][:12]}")
    if scope.get("side") == "test":
        parts.append(
            f"use recorded: {scope['candidates_on_test']} "
            f"prompt{'' if scope['candidates_on_test'] == 1 else 's'} evaluated on this test side"
        )
    if scope.get("examples_left_out"):
        parts.append(f"{scope['examples_left_out']} example item(s) of the prompt left out")
    return "; ".join(parts)


def _library_group(
    item: Any, group_by: str | None, mapping: DatasetMapping | None, where: dict[str, Any]
) -> str | None:
    """An item's group: its stored group, or with --group-by the named input field (or the group's path)."""
    if not group_by or group_by in ("group", mapping.group if mapping else None):
        return item.group
    if group_by not in item.fields:
        raise InputError(
            f"no field {group_by!r} to group by (input fields: {', '.join(item.fields) or 'none'}; "
            "'group' is the dataset's own group)",
            field=group_by,
            **where,
        )
    return item.fields[group_by]


def library_rows(
    library: Library, run_id: str | None, dataset: str | None, human_field: str, group_by: str | None = None
) -> tuple[_Rows | None, _Rows | None]:
    """(judge rows of a library run, human rows of a library dataset); either may be None."""
    judged = None
    if run_id:
        run = library.get_run(run_id)
        judged = _Rows(scale=library.get_prompt(run.prompt_id).dimension.scale)
        for line, row in enumerate(library.judgments(run.id), 1):
            judged.values[row["item_id"]] = row["score"]
            judged.lines[row["item_id"]] = line
        dataset = dataset or run.dataset_id
    if not dataset:
        return judged, None
    data = _Rows()
    version = library.get_dataset(dataset)
    label = version.label
    note_unsaved(library, version.id, human_field)
    people = library.human_means(version.id, human_field)  # the version's own ratings: what "people" means
    for line, item in enumerate(library.dataset_items(version.id), 1):
        if human_field not in version.human:  # an item may lack it (null on import, unrated): counted missing
            raise InputError(
                f"no human rating {human_field!r} (has: {', '.join(item.human) or 'none'})",
                file=f"dataset {label}",
                line=line,
                field=human_field,
            )
        data.values[item.id] = people.get(item.id)
        data.lines[item.id] = line
        group = _library_group(item, group_by, version.mapping, {"file": f"dataset {label}", "line": line})
        if group is not None:
            data.groups[item.id] = group
    return judged, data


def _is_file_name(source: str) -> bool:
    """A file on disk, or a name that can only mean one (a path or a data-file suffix)."""
    path = Path(source)
    return path.is_file() or len(path.parts) > 1 or path.suffix.lower() in JSONL_SUFFIXES + CSV_SUFFIXES


@dataclass
class _Sides:
    """Both sides of the comparison, the items its figures may use (None: all) and the seal's scope."""

    judged: _Rows
    data: _Rows
    data_label: str
    only: set[str] | None = None
    scope: dict[str, Any] | None = None


def _only_rating(judge_source: str, data_source: str | None, db: str | None) -> str:
    """--human when it was left out: the library dataset's one human rating (its per-rater columns aside)."""
    if (data_source and _is_file_name(data_source)) or (_is_file_name(judge_source) and not data_source):
        raise click.UsageError("--human names the rating field of a data file (e.g. scores.coherence)")
    with open_library(db) as library:
        named = data_source or library.get_run(judge_source).dataset_id
        dataset = library.get_dataset(named)
    names = [h for h in dataset.human if not re.fullmatch(r".+\.\d+", h)]
    if len(names) != 1:
        raise click.UsageError(
            f"name the human rating with --human: {dataset.label} has "
            f"{', '.join(names) if names else 'no human rating'}"
        )
    return names[0]


def _load_sides(
    judge_source: str,
    data_source: str | None,
    db: str | None,
    fields: dict[str, Any],
    side: str,
    prompt: str | None,
) -> _Sides:
    """Judge and human rows from files, or from a library run / dataset when no such file exists; on a split
    dataset (a library run's or dataset's, or the one the files' ids name) only the items of `side`."""
    judge_is_file, data_is_file = (
        _is_file_name(judge_source),
        bool(data_source and _is_file_name(data_source)),
    )
    judged = data = None
    if judge_is_file:
        judged = read_scores(judge_source, fields["judge_id"], fields["score"])
        if not judged.values:
            raise InputError("the judge file has no rows", file=judge_source)
    if data_source and data_is_file:
        data = read_scores(data_source, fields["id"], fields["human"], fields["group_by"])
    only, scope = None, None
    if judged is None or data is None:
        with open_library(db) as library:
            run = None if judge_is_file else library.get_run(judge_source)
            named = None if data_is_file else data_source or (run and run.dataset_id)
            dataset = library.get_dataset(named).id if named else None
            view, only, scope = _sealed_library(library, run, dataset, side, prompt)
            run_rows, data_rows = library_rows(
                view, run and run.id, dataset, fields["human"], fields["group_by"]
            )
        judged, data = judged or run_rows, data or data_rows
    else:
        only, scope = _sealed_files(db, [set(judged.values), set(data.values)], side, prompt)
    if judged is None or data is None:  # a run's rows are never None: only --data can be missing
        raise InputError("give --data: a JSONL/CSV file or a library dataset name", file=judge_source)
    if only is not None:  # rows of a file outside the scope are dropped before anything joins or counts them
        judged, data = _within(judged, only), _within(data, only)
    return _Sides(judged, data, data_source or "the run's dataset", only, scope)


def _within(rows: _Rows, only: set[str]) -> _Rows:
    keep = [i for i in rows.values if i in only]
    return _Rows(
        {i: rows.values[i] for i in keep},
        {i: g for i, g in rows.groups.items() if i in only},
        {i: rows.lines[i] for i in keep},
        rows.scale,
    )


def _sealed_library(
    library: Library, run: Run | None, dataset: str | None, side: str, prompt: str | None
) -> tuple[Any, set[str] | None, dict[str, Any] | None]:
    """(the store to read through, the items the figures may use, the scope) for a library run and/or dataset:
    each split version read on `side` (a test-side read recorded for the run's prompt, else --prompt), a run's
    prompt's example items left out."""
    from ..run.splits import SealedStore, evaluation_ids, get_split, has_split

    if run is None and side == "test" and prompt is None:
        raise click.UsageError(
            "--side test records a use of the sealed test side for a prompt: name it with --prompt"
        )
    prompt_id = run.prompt_id if run else library.get_prompt(prompt).id if prompt else None
    examples = library.get_prompt(run.prompt_id).dimension.example_ids if run else frozenset()
    view: Library | SealedStore = library
    only, scope = None, None
    for n, dataset_id in enumerate(dict.fromkeys(d for d in (run and run.dataset_id, dataset) if d)):
        if n and not has_split(library, dataset_id):
            continue  # the scope is the first version's (the run's); a second one adds only its seal
        ids, found = evaluation_ids(
            library, dataset_id, side, examples, prompt_id, run.id if run else None, "agree"
        )
        scope = scope or found
        if ids is not None:
            only = ids if only is None else only & ids
        if found["side"] is not None:
            view = SealedStore(view, dataset_id, set(get_split(library, dataset_id)[side]))
    return view, only, scope


def _sealed_files(
    db: str | None, named: list[set[str]], side: str, prompt: str | None
) -> tuple[set[str] | None, dict[str, Any] | None]:
    """(the items the figures may use, the scope) for two files: when one names only items of a split dataset
    of the library, some of them on its test side, that split is applied as to a library dataset."""
    from ..run.splits import evaluation_ids

    path = Path(db) if db else default_path()
    if not path.is_file():
        return None, None  # no library, no seal (and no library made just to look)
    with open_library(path) as library:
        dataset_id = _split_named(library, named)
        if dataset_id is None:
            if side == "test":
                raise click.UsageError(
                    "--side test reads the sealed side of a split dataset; these files name no "
                    "split dataset's items"
                )
            return None, None
        if side == "test" and prompt is None:
            raise click.UsageError(
                f"the files name items of the sealed test side of dataset "
                f"{library.get_dataset(dataset_id).label}: --side test records a use of it "
                "for a prompt, name it with --prompt"
            )
        prompt_id = library.get_prompt(prompt).id if prompt else None
        return evaluation_ids(library, dataset_id, side, frozenset(), prompt_id, None, "agree (files)")


def _split_named(library: Library, named: list[set[str]]) -> str | None:
    """The split dataset version one of the files names: all its ids are that version's, some on the test side."""
    from ..run.splits import get_split

    for dataset_id in library.record_keys("split"):
        split = get_split(library, dataset_id)
        every, test = set(split["dev"]) | set(split["test"]), set(split["test"])
        if any(ids and ids <= every and ids & test for ids in named):
            return dataset_id
    return None


@click.command("agree")
@click.argument("judge_file", metavar="RUN_OR_FILE")
@click.option(
    "--data",
    "data_file",
    default=None,
    shell_complete=complete_dataset,
    help="JSONL or CSV file with the human ratings, or a library dataset name[@version] "
    "(default for a library run: the run's dataset).",
)
@click.option(
    "--human",
    "human_field",
    default=None,
    help="Human rating field in the data file; a dotted path such as scores.coherence "
    "(for a library dataset: the rating name, e.g. coherence; default: its one rating when it "
    "has exactly one).",
)
@db_option(help="Library file for run / dataset names (default: ./geval.db).")
@click.option(
    "--score-field", default="score", show_default=True, help="Judge score field in a RUN_OR_FILE file."
)
@click.option("--id-field", default="id", show_default=True, help="Item id field in both files.")
@click.option(
    "--judge-id-field",
    default=None,
    help="Item id field in a RUN_OR_FILE file when it differs from --id-field (e.g. item_id).",
)
@click.option(
    "--group-by",
    default=None,
    help="Group field (e.g. doc_id): per-group correlations, averaged; with --pooled, the groups "
    "the bootstrap resamples (items of a group are not independent). For a library dataset: "
    "an input field, or 'group' (the dataset's own group, used by default).",
)
@click.option(
    "--scale",
    callback=_parse_scale,
    default=None,
    help="Rating scale for kappa, e.g. 1-5 or -2-2 (default: a library run's prompt scale, else "
    "spanned by the data). Kappa rounds both sides to the nearest point, halves up "
    "(2.5 -> 3, -1.5 -> -1), and clips values outside the scale to its ends (counted first).",
)
@click.option(
    "--bootstrap",
    default=0,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Resamples for 95% confidence intervals: groups are resampled when the data has groups, "
    "also for --pooled; the interval is studentized over them (t with groups-1 df, Fisher z). "
    "No interval with fewer than 10 groups (or items), or when more than 5% of resamples "
    "are undefined.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for the bootstrap.")
@click.option(
    "--pooled",
    is_flag=True,
    help="Dataset-level reading (all items pooled) even when the data has groups (a library "
    "dataset's, or --group-by FIELD's: still resampled as whole groups).",
)
@click.option(
    "--side",
    type=click.Choice(["dev", "test"]),
    default="dev",
    show_default=True,
    help="On a split dataset (a library run's or dataset's, or one whose items the files name): the dev "
    "side, or the sealed test side (every use of it is recorded and counted). A run's prompt's "
    "example items are left out either way.",
)
@click.option(
    "--prompt",
    default=None,
    shell_complete=complete_prompt_name,
    help="With --side test and no library run: the prompt the judge scores come from, for whom the read "
    "of the test side is recorded.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@workbench_errors
def agree(
    judge_file: str,
    data_file: str | None,
    human_field: str,
    db: str | None,
    score_field: str,
    id_field: str,
    judge_id_field: str | None,
    group_by: str | None,
    scale: Scale | None,
    bootstrap: int,
    seed: int,
    pooled: bool,
    side: str,
    prompt: str | None,
    as_json: bool,
) -> None:
    """Agreement of a judge's scores with human ratings: Spearman, Kendall, Pearson, ties, kappa.

    RUN_OR_FILE is a library run id (`geval runs list`), or a JSONL/CSV file of judge scores.

    \b
    Examples:
      geval agree 1a2b3c --human coherence --bootstrap 1000
      geval agree results.jsonl --data ratings.jsonl --human scores.coherence --group-by doc_id --json
    """
    human_field = human_field or _only_rating(judge_file, data_file, db)
    fields = {
        "judge_id": judge_id_field or id_field,
        "id": id_field,
        "score": score_field,
        "human": human_field,
        "group_by": group_by,
    }
    sides = _load_sides(judge_file, data_file, db, fields, side, prompt)
    judged, data, data_file, scope = sides.judged, sides.data, sides.data_label, sides.scope
    # Library datasets carry their own group field; files have groups only when --group-by says so.
    if not group_by and data.groups and not pooled:
        group_by = "group"
    if group_by and len(data.groups) < len(data.values):
        raise InputError(
            f"{len(data.values) - len(data.groups)} items have no {group_by!r} to group by",
            file=data_file,
            field=group_by,
        )
    for item_id, line in judged.lines.items():
        if item_id not in data.lines:
            raise InputError(
                f"item {item_id!r} is not in {data_file} (joined on {id_field!r})",
                file=judge_file,
                line=line,
                field=judge_id_field or id_field,
            )
    ids = list(judged.values)
    groups = [data.groups.get(i) for i in ids] if group_by and not pooled else None
    # The pooled reading of grouped data still resamples whole groups: items of a group are not independent.
    clusters = [data.groups.get(i) for i in ids] if pooled and len(data.groups) == len(data.values) else None
    from ..stats import agreement

    result = agreement(
        [judged.values[i] for i in ids],
        [data.values[i] for i in ids],
        groups,
        scale or judged.scale,
        bootstrap,
        seed,
        clusters,
    )
    extra = {
        "judge_file": judge_file,
        "data_file": data_file,
        "human_field": human_field,
        "judge_missing": sum(v is None for v in judged.values.values()),
        "human_missing": sum(data.values[i] is None for i in ids),
        "unjudged": len(data.values) - len(ids),
        "scope": scope,
    }
    if as_json:
        click.echo(json.dumps({**result.to_dict(), **extra}, indent=2))
    else:
        click.echo(_table(result, extra, group_by))
