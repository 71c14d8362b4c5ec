"""`geval drift`: freeze an anchor set of human-rated items with a reference run, then check whether the judge
changed, with a test that stays valid however often it is checked."""

from __future__ import annotations

import threading
from typing import Any

import click

from ..errors import GEvalError
from ._interrupt import EXIT_INTERRUPTED, stop_on_interrupt
from .common import (
    complete_prompt,
    complete_run,
    data_ref_option,
    echo_json,
    judge_options,
    library_command,
    note_unsaved,
    resolve_prompt,
    table,
)

__all__ = ["EXIT_DRIFT", "check_lines", "drift_group"]

EXIT_DRIFT = 3  # the judge changed: a script's `geval drift check` fails the pipeline


@click.group("drift")
def drift_group() -> None:
    """Watch a judge for drift: a frozen anchor set of human-rated items and a reference run, checked again
    whenever you like; the test's false-alarm rate holds however often you check.

    \b
    Examples:
      geval drift freeze coherence --data golden --run 1a2b3c
      geval drift check coherence --sample 50
      geval drift show coherence --json
      geval drift export coherence -o coherence.drift.json
    """


@library_command(drift_group, "freeze", lists=True)
@click.argument("prompt_ref", shell_complete=complete_prompt)
@click.option(
    "--run",
    "run_ids",
    multiple=True,
    required=True,
    shell_complete=complete_run,
    help="A finished run of PROMPT on the data: the reference (repeat for more runs of the same judge).",
)
@data_ref_option(help="The dataset version with people's ratings [default: the run's].", required=False)
@click.option("--name", default=None, help="The watch's name [default: the prompt's name].")
@click.option(
    "--human", default=None, help="The human rating [default: the prompt's dimension, or the only one]."
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="The false-alarm rate the test keeps over every check.",
)
@click.option(
    "--repeat",
    is_flag=True,
    help="Score the anchors once more now with the reference's judge and server "
    "(never from the cache), as a second reference run: the first check then knows how much the judge "
    "varies by itself, and finds a judge that moves each item either way.",
)
def freeze_command(
    library: Any,
    prompt_ref: str,
    run_ids: tuple[str, ...],
    data_ref: str | None,
    name: str | None,
    human: str | None,
    alpha: float,
    repeat: bool,
    as_json: bool,
) -> None:
    """Freeze PROMPT's anchor set: the items of a finished reference run that people rated (the dev side of a
    split dataset; never the prompt's examples), their reference scores and the judge's model version.

    \b
    Examples:
      geval drift freeze coherence --run 1a2b3c --repeat
      geval drift freeze coherence --data golden@2 --run 1a2b3c --run 4d5e6f --name coherence-watch --json
    """
    from ..diagnostics.drift import freeze_watch

    prompt = resolve_prompt(library, prompt_ref)
    dataset = data_ref or library.get_run(run_ids[0]).dataset_id
    watch, created = freeze_watch(
        library,
        name or prompt.name,
        prompt.id,
        dataset,
        list(run_ids),
        human,
        alpha,
        repeat,
        on_plan=lambda plan: click.echo(plan.describe(), err=True),
    )
    note_unsaved(library, watch["dataset"], watch["human"])
    if as_json:
        echo_json(
            {
                **{k: v for k, v in watch.items() if k != "reference"},
                "anchors": len(watch["items"]),
                "created": created,
            }
        )
        return
    click.echo(
        f"{'froze' if created else 'already frozen:'} drift watch {watch['name']}@{watch['version']} "
        f"({watch['id'][:12]}): {len(watch['items'])} anchors rated {watch['human']!r}"
        f"{' (dev side)' if watch['side'] else ''}, reference run {', '.join(watch['runs'])}, model version "
        f"{', '.join(watch['model_versions']) or 'not reported'}; alpha {watch['alpha']:g}"
    )


@library_command(drift_group, "check", lists=True)
@click.argument("name")
@click.option(
    "--sample",
    type=click.IntRange(1),
    default=None,
    help="Re-score K anchors drawn at random (seeded by the watch and the check's number) [default: all].",
)
@click.option(
    "--seed", type=int, default=None, help="Another draw of the sample (the same draw for the same seed)."
)
@judge_options
@click.option(
    "--base-url",
    default=None,
    help="The server for the check [default: the reference run's server, else the environment's]. "
    "The key comes from OPENAI_API_KEY.",
)
@click.option("--concurrency", type=click.IntRange(1, 256), default=None, help="Judge calls in flight.")
@click.option("--quiet", "-q", is_flag=True, help="Only the verdict (and errors).")
def check_command(
    library: Any,
    name: str,
    sample: int | None,
    seed: int | None,
    judge_ref: str | None,
    mode: str | None,
    n: int | None,
    temperature: float | None,
    base_url: str | None,
    concurrency: int | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Re-score watch NAME's anchors (or --sample K of them) with the reference run's judge, never from the judge
    cache, and say whether the judge changed: per-item moves, agreement with people then and now, the model
    version, and the anytime-valid test's e-value, carried over from every earlier check (drift once it reaches
    1/alpha). Each check is appended to the watch and can never be altered.

    \b
    Exit codes: 0 no drift so far; 3 drift detected (at this check or an
    earlier one: freeze a new watch to watch the changed judge); 1 bad input
    or a check that did not finish (nothing recorded); 2 bad command line;
    130 interrupted.

    \b
    Examples:
      geval drift check coherence
      geval drift check coherence --sample 50 --json
      geval drift check coherence --base-url http://127.0.0.1:8000/v1 --quiet    # exit 3: drift
    """
    from ..diagnostics.drift import get_watch, plan_check, run_check, watch_report
    from .score import judge_choice

    if seed is not None and sample is None:
        raise click.UsageError("--seed draws a --sample: name the sample's size with --sample K")
    watch = get_watch(library, name)
    if not quiet:
        note_unsaved(library, watch["dataset"], watch["human"])
    plan = plan_check(
        library, watch, sample, judge_choice(judge_ref, base_url, mode, n, temperature), seed, concurrency
    )
    from ..run.plan import different_judges_note

    other = different_judges_note(watch["judge"], plan.settings)
    for warning in [*plan.warnings, *([f"not the reference's judge: {other}"] if other else [])]:
        click.echo(f"warning: {warning}", err=True)
    if not quiet:
        click.echo(plan.describe(), err=True)  # which judge re-scores what, before anything is sent
    cancel = threading.Event()
    try:
        with stop_on_interrupt(cancel):
            check = run_check(library, watch, plan, cancel=cancel)
    except GEvalError:
        if not cancel.is_set():
            raise
        click.echo("interrupted: nothing was recorded; check again", err=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    report = watch_report(library, watch)
    if as_json:
        echo_json({**report, "check": check})
    else:
        for line in ([] if quiet else check_lines(check, watch)) + [verdict_line(report)]:
            click.echo(line)
    if report["verdict"] == "drift":
        raise SystemExit(EXIT_DRIFT)


@library_command(drift_group, "show", lists=True)
@click.argument("name")
def show_command(library: Any, name: str, as_json: bool) -> None:
    """Watch NAME's anchors, reference and every check so far: e-value, moves, agreement, model version.

    \b
    Examples:
      geval drift show coherence
      geval drift show coherence@2 --json
    """
    from ..diagnostics.drift import get_watch, watch_report

    report = watch_report(library, get_watch(library, name))
    if as_json:
        echo_json(report)
        return
    w = report["watch"]
    click.echo(
        f"drift watch {w['name']}@{w['version']} ({w['id'][:12]}): {w['anchors']} anchors rated "
        f"{w['human']!r}, reference run {', '.join(w['runs'])}, model version "
        f"{', '.join(w['model_versions']) or 'not reported'}"
    )
    table(
        [history_row(c) for c in report["checks"]],
        ["check", "at", "items", "e_value", "mean_tv", "top_moved", "spearman_change", "model_version"],
    )
    click.echo(verdict_line(report))


@library_command(drift_group, "export")
@click.argument("name")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    required=True,
    help="The file to write (JSON).",
)
def export_command(library: Any, name: str, output: str) -> None:
    """Write watch NAME to one hash-checked file for checks beside production scoring: the anchors' inputs, people's
    ratings, the reference's judgments and the checks so far (no server URL). In Python,
    `drift_check_file(prompt_file, watch_file)` re-scores it with the exported prompt and appends the check.

    \b
    Examples:
      geval drift export coherence -o coherence.drift.json
      geval prompts export coherence -o coherence.json && geval drift export coherence -o coherence.drift.json
    """
    import json
    from pathlib import Path

    from ..diagnostics.drift_file import export_watch

    data = export_watch(library, name)
    Path(output).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    click.echo(
        f"wrote drift watch {data['watch']['name']}@{data['watch']['version']} ({len(data['anchors'])} anchors, "
        f"{len(data['checks'])} checks) to {output}",
        err=True,
    )


@library_command(drift_group, "list", lists=True)
def list_command(library: Any, as_json: bool) -> None:
    """The drift watches of the library, with their checks and verdicts.

    \b
    Examples:
      geval drift list
      geval drift list --json
    """
    from ..diagnostics.drift import KIND, get_watch, watch_report

    rows = []
    for key in library.record_keys(KIND):
        report = watch_report(library, get_watch(library, key))
        rows.append(
            {
                "name": key,
                "version": report["watch"]["version"],
                "anchors": report["watch"]["anchors"],
                "checks": len(report["checks"]),
                "e_value": round(report["e_value"], 3),
                "verdict": report["verdict"],
            }
        )
    if as_json:
        echo_json(rows)
        return
    table(rows, ["name", "version", "anchors", "checks", "e_value", "verdict"])


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def history_row(check: dict[str, Any]) -> dict[str, Any]:
    """One check as the history table shows it."""
    figure = ((check.get("agreement") or {}).get("figures") or {}).get("spearman") or {}
    return {
        "check": check["seq"],
        "at": check["at"],
        "items": len(check["items"]),
        "e_value": _f(check["e_value"]),
        "mean_tv": _f(check["shift"]["mean_tv"]),
        "top_moved": _f(check["shift"]["top_moved_share"]),
        "spearman_change": _f(figure.get("difference")),
        "model_version": ", ".join(check["model_versions"]["now"]) or "not reported",
    }


def check_lines(check: dict[str, Any], watch: dict[str, Any]) -> list[str]:
    """One check's figures as the command prints them."""
    s, versions = check["shift"], check["model_versions"]
    lines = [
        f"check {check['seq']} of watch {watch['name']}@{watch['version']}: run {check['run']}, "
        f"{len(check['items'])} anchors re-scored ({s['unscored']} without a score)",
        f"moves from the reference: mean TV distance {_f(s['mean_tv'])}, top rating moved on "
        f"{_f(s['top_moved_share'])} of items, mean score change {_f(s['mean_difference'], 3)} "
        f"(mean |change| {_f(s['mean_abs_difference'])})",
    ]
    agreement = check.get("agreement")
    if agreement:
        for name in ("spearman", "kendall"):
            f = agreement["figures"][name]
            ci = f["interval"]
            lines.append(
                f"{name} with people: reference {_f(f['first'])}, now {_f(f['second'])}, change "
                f"{_f(f['difference'])}"
                + (
                    f" [{ci[0]:.3f}, {ci[1]:.3f}]"
                    if ci
                    else f" (no interval: {agreement.get('withheld', 'too few items')})"
                )
            )
    lines.append(
        f"model version: reference {', '.join(versions['reference']) or 'not reported'}, now "
        f"{', '.join(versions['now']) or 'not reported'}" + (" (changed)" if versions["changed"] else "")
    )
    t = check["test"]
    lines.append(
        f"test: e-value {check['e_value']:.3f} after {t['bets']} scores bet on ({check['e_value'] / t['e_before']:.3g}x "
        f"this check); alarm at {check['threshold']:g} (alpha {1 / check['threshold']:g})"
    )
    return lines


def verdict_line(report: dict[str, Any]) -> str:
    """The watch's verdict in one line."""
    checks = len(report["checks"])
    if report["verdict"] == "drift":
        return (
            f"DRIFT: the judge changed (e-value reached {report['threshold']:g} at check {report['alarm_at']} of "
            f"{checks}); freeze a new watch to watch the changed judge"
        )
    return (
        f"no drift: e-value {report['e_value']:.3f} after {checks} check{'s' if checks != 1 else ''}, below "
        f"{report['threshold']:g} (the false-alarm rate stays at most {1 / report['threshold']:g} over every "
        "check)"
    )
