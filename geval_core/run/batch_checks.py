"""A batch output file is input from outside: every line must belong to a run that was prepared or submitted
as a batch (the one the caller collects, when named), to one of its items and requests, and appear once; a
file holds the lines of one batch run (a batch writes one file per run). Anything else refuses the whole
collect, with a count per reason and where, before anything is stored."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ..errors import InputError, NotFoundError
from ..store import Store

SHOWN = 5  # places listed per reason


def check_lines(
    store: Store, lines: list[dict[str, Any]], expected_run: str | None, requests_of: Any
) -> None:
    """Raise InputError naming every refused line; `lines` carry run_id, item_id, replica, file and line.

    `requests_of(run) -> {item id: number of requests}` gives what the run sent (recomputed from the run's
    prompt, items and settings, so a file cannot claim requests that were never made).
    """
    problems: dict[str, list[str]] = defaultdict(list)
    seen: Counter = Counter()
    runs: dict[str, dict[str, int] | str] = {}
    began: dict[str, tuple[str, int]] = {}  # file -> (the run its first line names, that line)
    for line in lines:
        where = f"{line['file']}:{line['line']}"
        mixed = _second_run(began, line)
        if mixed:
            problems[mixed].append(where)
        key = (line["run_id"], line["item_id"], line["replica"])
        seen[key] += 1
        if seen[key] == 2:
            problems["a request answered twice (duplicated custom_id)"].append(where)
        run_id = line["run_id"]
        if run_id not in runs:
            runs[run_id] = _sent(store, run_id, expected_run, requests_of)
        sent = runs[run_id]
        if isinstance(sent, str):
            problems[sent].append(where)
        elif line["item_id"] not in sent:
            problems[f"an item run {run_id} does not have"].append(where)
        elif line["replica"] >= sent[line["item_id"]]:
            problems[f"a request run {run_id} never sent (replica {line['replica']})"].append(where)
    if problems:
        total = sum(len(places) for places in problems.values())
        reasons = "; ".join(
            f"{len(places)} for {reason} ({', '.join(places[:SHOWN])}"
            f"{', ...' if len(places) > SHOWN else ''})"
            for reason, places in problems.items()
        )
        raise InputError(f"refused {total} of {len(lines)} batch output lines, nothing was stored: {reasons}")


def _second_run(began: dict[str, tuple[str, int]], line: dict[str, Any]) -> str | None:
    """Why a line names another run than its file's first line did (None when it names the same one)."""
    run_id, first = began.setdefault(line["file"], (line["run_id"], line["line"]))
    if run_id == line["run_id"]:
        return None
    return (
        f"a second batch run in {line['file']} (one file holds one batch run: line {first} names run {run_id}, "
        f"these name run {line['run_id']})"
    )


def _sent(store: Store, run_id: str, expected_run: str | None, requests_of: Any) -> dict[str, int] | str:
    """What a run sent as a batch, or why its lines are refused."""
    if expected_run is not None and run_id != expected_run:
        return f"another run than the batch's own ({run_id}, not {expected_run})"
    try:
        run = store.get_run(run_id)
    except NotFoundError:
        return f"a run this library does not have ({run_id})"
    if run.id != run_id:
        return f"a run this library does not have ({run_id})"
    if not (run.extra.get("batch_file") or run.batch_id):
        return f"run {run_id}, which was not prepared or submitted as a batch (a live run)"
    return requests_of(run)
