"""`geval calibration` and `geval estimate`: how far a judge's probabilities and means can be trusted."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import click

from prompt_library import open_library

from ..errors import InputError
from .agree import _is_file_name, read_scores
from .common import (
    complete_dataset,
    complete_run,
    db_option,
    echo_json,
    json_option,
    note_unsaved,
    workbench_errors,
)

# A field whose name says it names a document (or dialogue, article, source, group ...) and whose values repeat:
# items that share one usually are not independent, which an interval over independent items ignores.
GROUP_LIKE = re.compile(
    r"(^|_)(doc|document|article|source|context|dialog|dialogue|conversation|passage|question|"
    r"story|topic|group|cluster)(_?id)?$",
    re.IGNORECASE,
)

# geval_core.stats.ppi.METHODS, stated here so that `geval --help` needs no numpy (tests/test_layers.py
# checks they agree); the statistics are imported when a command runs.
METHODS = ("classic", "ppi++")


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


@click.command("calibration")
@click.argument("run_id", shell_complete=complete_run)
@click.option("--human", required=True, help="Human rating name in the run's dataset (e.g. coherence).")
@click.option(
    "--bins",
    default=10,
    show_default=True,
    type=click.IntRange(2, 50),
    help="Equal-width bins of the judge's probability.",
)
@db_option
@json_option
@workbench_errors
def calibration_command(run_id: str, human: str, bins: int, db: str | None, as_json: bool) -> None:
    """Reliability of a run's rating probabilities against people: bins, ECE, expected vs observed.

    Per item, "how often people gave rating r" is the share of raters (ratings NAME.0, NAME.1, ...)
    at r, else the mean rating rounded to the nearest scale point (halves up). Each (item, rating)
    pair is one prediction; ECE is the count-weighted gap between predicted and observed per bin.

    \b
    Examples:
      geval calibration 1a2b3c --human coherence
      geval calibration 1a2b3c --human coherence --bins 5 --json    # ece, bins (predicted, observed, count)
    """
    from ..stats.stored import run_calibration

    with open_library(db) as library:
        result = run_calibration(library, run_id, human, bins)
        note_unsaved(library, library.get_run(run_id).dataset_id, human)
    if as_json:
        echo_json(result)
        return
    how = "share of raters" if result["per_rater"] else "the mean rating rounded to a point (halves up)"
    click.echo(f"run {result['run']} vs human {result['human']}: {result['items']} items; observed = {how}")
    if "sampling" in result["modes"]:
        click.echo("note: sampling items' distributions are shares of replies, not probabilities")
    from ..stats.calibration import ece_context  # numpy: not for `geval --help`

    context, caution = ece_context(result)
    click.echo(f"ECE {_f(result['ece'])}" + (f" ({context})" if context else ""))
    if caution:
        click.echo(f"caution: {caution}")
    click.echo(f"{'bin':<12}{'predicted':>10}{'observed':>10}{'count':>8}")
    for b in result["bins"]:
        click.echo(
            f"{b['lo']:.1f}-{b['hi']:.1f}{'':<5}{b['predicted']:>10.3f}{b['observed']:>10.3f}{b['count']:>8}"
        )
    click.echo(f"{'rating':<12}{'expected':>10}{'observed':>10}")
    for r, e, o in zip(result["points"], result["expected"], result["observed"], strict=True):
        click.echo(f"{r:<12}{e:>10.1f}{o:>10.1f}")


def _file_inputs(
    judge_file: str,
    data: str | None,
    human: str,
    by: str | None,
    id_field: str,
    judge_id_field: str,
    score_field: str,
    db: str | None,
    group_by: str | None = None,
) -> tuple[list, list, list | None, list | None]:
    """(judge, human, levels, groups) from a judge results file and a data file or library dataset."""
    from ..stats.stored import item_value

    if not data:
        raise InputError("give --data: a JSONL/CSV file or a library dataset name", file=judge_file)
    judged = read_scores(judge_file, judge_id_field, score_field)
    if not judged.values:
        raise InputError("the judge file has no rows", file=judge_file)
    levels: Mapping[str, str | None]
    groups: Mapping[str, str | None]
    if _is_file_name(data):
        rows = read_scores(data, id_field, human, by)
        ratings, levels, known = rows.values, rows.groups, rows.lines
        groups = read_scores(data, id_field, human, group_by).groups if group_by else {}
    else:
        with open_library(db) as library:
            items = {i.id: i for i in library.dataset_items(library.get_dataset(data).id)}
        ratings, known = {k: i.human.get(human) for k, i in items.items()}, items
        levels = {k: item_value(i, by) for k, i in items.items()} if by else {}
        groups = {k: item_value(i, group_by or "group") for k, i in items.items()}
    for item_id, line in judged.lines.items():  # as `geval agree`: an unknown id is an error, not "unrated"
        if item_id not in known:
            raise InputError(
                f"item {item_id!r} is not in {data} (joined on {id_field!r})",
                file=judge_file,
                line=line,
                field=judge_id_field,
            )
    ids = list(judged.values)
    return (
        [judged.values[i] for i in ids],
        [ratings.get(i) for i in ids],
        [levels.get(i) for i in ids] if by else None,
        [groups.get(i) for i in ids] if groups else None,
    )


def group_like_field(rows: Iterable[Mapping[str, Any]], skip: set[str]) -> tuple[str, int, int] | None:
    """(field, distinct values, rows) of the first field (ids first) that looks like a document's and repeats."""
    seen: dict[str, list[str]] = {}
    for row in rows:
        for key, value in row.items():
            if (
                key not in skip
                and GROUP_LIKE.search(key)
                and isinstance(value, (str, int))
                and str(value).strip()
            ):
                seen.setdefault(key, []).append(str(value).strip())
    for key in sorted(seen, key=lambda k: (not k.lower().endswith("id"), k)):
        distinct = len(set(seen[key]))
        if 1 < distinct < len(seen[key]):
            return key, distinct, len(seen[key])
    return None


def grouping_warning(found: tuple[str, int, int] | None, remedy: str) -> str:
    """The warning for grouped-looking data read as independent items ("" when nothing looks grouped)."""
    if found is None:
        return ""
    field, distinct, rows = found
    return (
        f"the items carry {field!r} ({distinct} values over {rows} rows) but are read as independent: if items "
        f"of one {field} are not independent (summaries of one document), the interval is too narrow (PPI++ "
        f"covered 86-93% on such data in simulation); {remedy}"
    )


def _file_warning(data: str, id_field: str, human: str, groups: list | None, db: str | None) -> str:
    """grouping_warning for `estimate FILE --data DATA` read without groups."""
    if groups is not None:
        return ""
    if _is_file_name(data):
        from ..files.datafiles import read_rows

        found = group_like_field((row for _, row in read_rows(data)), {id_field, human})
        return grouping_warning(
            found, f"--group-by {found[0] if found else 'FIELD'} clusters the variance on it"
        )
    with open_library(db) as library:
        return _dataset_warning(library, library.get_dataset(data).id)


def _dataset_warning(library: Any, dataset_id: str) -> str:
    """grouping_warning for a library dataset whose items have no group."""
    items = library.dataset_items(dataset_id)
    if not items or all(i.group for i in items):
        return ""
    found = group_like_field((i.fields for i in items), set())
    return grouping_warning(
        found,
        f"import the dataset with --group {found[0] if found else 'FIELD'} (the "
        "estimate clusters on a dataset's groups)",
    )


def _ci(ci: list[float | None] | None) -> str:
    return f"95% CI [{_f(ci[0])}, {_f(ci[1])}]" if ci else "no interval"


def _print_estimate(out: dict[str, Any]) -> None:
    clustered = f"; variance clustered on {out['groups']} groups" if out.get("groups") else ""
    click.echo(
        f"method {out['method']} (lambda {out['lam']:.3f}); {out['n_rated']} rated of {out['n_total']} "
        f"items{clustered}"
    )
    click.echo(f"PPI estimate of the mean human rating {_f(out['estimate'])}   {_ci(out['ci'])}")
    click.echo(
        f"judge-only mean {_f(out['judge_mean'])}   human-only mean {_f(out['human_mean'])}   "
        f"{_ci(out.get('human_ci'))}"
    )
    if out.get("warning"):
        click.echo(out["warning"])
    if out.get("grouping_warning"):
        click.echo(f"CAUTION: {out['grouping_warning']}")
    for level, e in (out.get("by") or {}).items():
        click.echo(
            f"  {click.style(str(level), bold=True)}: {_f(e['estimate'])} {_ci(e['ci'])}  "
            f"judge {_f(e['judge_mean'])}  human {_f(e['human_mean'])}  n {e['n_rated']}/{e['n_total']}"
        )
    if out.get("by_skipped"):
        click.echo(f"  no estimate (fewer than 2 rated items): {', '.join(map(str, out['by_skipped']))}")
    if "judges" in out:
        judges = out["judges"]
        click.echo(f"judges: {judges['a']} (run {out['run']}) and {judges['b']} (run {out['versus']['run']})")
        if judges["note"]:
            click.echo(f"CAUTION: {judges['note']}")
    if "versus" in out:
        v = out["versus"]
        click.echo(
            f"versus run {v['run']}: {_f(v['estimate'])} {_ci(v['ci'])}  "
            f"judge {_f(v['judge_mean'])}  human {_f(v['human_mean'])}  n {v['n_rated']}/{v['n_total']}"
        )
    if "difference" in out:
        d = out["difference"]
        click.echo(
            f"difference {d['a']} - {d['b']}: {_f(d['estimate'])} {_ci(d['ci'])}"
            + (f"  ({d['warning']})" if d.get("warning") else "")
        )
    click.echo(f"Assumption: {out.get('assumption') or ''}".rstrip())


@click.command("estimate")
@click.argument("run_or_file")
@click.option(
    "--data",
    default=None,
    shell_complete=complete_dataset,
    help="Human ratings for a judge file: JSONL/CSV or a library dataset.",
)
@click.option("--human", required=True, help="Human rating name (dataset) or dotted field (file).")
@click.option("--by", default=None, help="An input field (or 'group') to estimate per level, e.g. system_id.")
@click.option(
    "--diff", nargs=2, default=None, metavar="A B", help="With --by: the difference of levels A - B."
)
@click.option(
    "--versus",
    default=None,
    metavar="RUN_B",
    help="Another library run on different items (e.g. another system's outputs): RUN - RUN_B.",
)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="ppi++",
    show_default=True,
    help="classic PPI, or PPI++ with the variance-minimising judge weight lambda.",
)
@click.option(
    "--rated",
    default=None,
    type=click.IntRange(2, None),
    help="Use only this many randomly chosen human ratings (the rest as unrated); at most the number rated.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for --rated.")
@click.option("--id-field", default="id", show_default=True, help="Item id field in a data file.")
@click.option(
    "--judge-id-field",
    default="id",
    show_default=True,
    help="Item id field in a judge file (`geval score --out` writes id).",
)
@click.option(
    "--group-by",
    default=None,
    help="Group field of a data file (e.g. doc_id): items of a group are not independent, so the "
    "variance is clustered on the groups (a library dataset's own groups are used by default).",
)
@click.option("--score-field", default="score", show_default=True, help="Judge score field in a judge file.")
@db_option
@json_option
@workbench_errors
def estimate_command(
    run_or_file: str,
    data: str | None,
    human: str,
    by: str | None,
    diff: tuple[str, str] | None,
    versus: str | None,
    method: str,
    rated: int | None,
    seed: int,
    id_field: str,
    judge_id_field: str,
    group_by: str | None,
    score_field: str,
    db: str | None,
    as_json: bool,
) -> None:
    """Prediction-powered estimate of the mean human rating: the judge on all items, people on the rated.

    Reports the estimate and its 95% interval (t with rated-1 df; clustered: rated groups-1) beside
    the judge-only and human-only means. Items with a judge score but no human rating are the unrated
    ones; --rated K simulates having rated only K.

    \b
    Assumption: the rated items are a random sample of the items (each as
    likely to be rated); ratings chosen by hand, or only the hard cases,
    bias the estimate and its interval.
    No interval below 10 rated items for classic PPI or 30 for PPI++
    (simulated coverage under 93%), when every rating is the same, or
    with fewer than 10 groups or ratings in fewer than 5 of them.

    Items of one document are not independent: a data file read without
    --group-by whose rows carry a document-like field (doc_id, article,
    dialogue_id, ...) that repeats gets a caution (grouping_warning).

    JSON keys: estimate, ci (null when withheld), warning, grouping_warning, judge_mean, human_mean,
    n_rated, n_total, method, groups, rated_groups, assumption (and by, difference, versus).

    \b
    Examples:
      geval estimate 1a2b3c --human coherence --by system_id --diff M8 M9
      geval estimate 1a2b3c --versus 4d5e6f --human coherence
      geval estimate results.jsonl --data ratings.jsonl --human scores.coherence --group-by doc_id --json
    """
    from ..run.plan import estimate_judges
    from ..stats.stored import estimate_rows, run_estimate, runs_difference

    if diff and not by:
        raise click.UsageError("--diff needs --by")
    if versus and (by or _is_file_name(run_or_file)):
        raise click.UsageError("--versus compares two library runs; it does not combine with --by or a file")
    if versus:
        with open_library(db) as library:
            out = runs_difference(library, run_or_file, versus, human, method, rated, seed)
            out["judges"] = estimate_judges(library.get_run(run_or_file), library.get_run(versus))
            out["grouping_warning"] = _dataset_warning(library, library.get_run(run_or_file).dataset_id)
    elif _is_file_name(run_or_file):
        judge, ratings, levels, groups = _file_inputs(
            run_or_file, data, human, by, id_field, judge_id_field, score_field, db, group_by
        )
        out = {
            "file": run_or_file,
            "human": human,
            **estimate_rows(judge, ratings, levels, method, rated, seed, diff, groups),
        }
        out["grouping_warning"] = _file_warning(data or "", id_field, human, groups, db)
    else:
        with open_library(db) as library:
            out = run_estimate(library, run_or_file, human, method, by, rated, seed, diff)
            out["grouping_warning"] = _dataset_warning(library, library.get_run(run_or_file).dataset_id)
    if as_json:
        echo_json(out)
    else:
        _print_estimate(out)
