"""`geval cascade guarantee`: the cheap judge's threshold chosen with a guarantee of agreement with people, and
the guarantee's report when a guaranteed cascade scores new data (`geval cascade score`)."""

from __future__ import annotations

from typing import Any

import click

from .common import echo_json, library_command, note_unsaved

__all__ = ["guarantee_lines", "guarantee_summary", "register"]

HELP = """Choose the cheap judge's threshold on CHEAP_RUN (the cheap prompt on items people rated) with a guarantee:
with probability at least 1 - DELTA over the draw of those items, the cheap judge's score is within --within of
people's rating on at least --target of the items it keeps; the rest go to the strong judge.

\b
Thresholds are tested surest first by exact binomial tests (fixed-sequence
testing; Trust or Escalate, Jung, Brahman & Choi, ICLR 2025); the last one
that passes is chosen. The guarantee covers items drawn like the calibration
items, scored by the same frozen cheap prompt and judge; it does not cover
distribution shift, a changed judge, single items, or the strong judge's items.

\b
Examples:
  geval cascade guarantee 1a2b3c --human coherence --target 0.85 --delta 0.1
  geval cascade guarantee 1a2b3c --human coherence --strong-run 4d5e6f --json
  geval cascade guarantee 1a2b3c --human coherence --strong strong-prompt --freeze sure
  geval cascade score sure --data fresh-summaries    # reports the share kept
"""


def register(group: click.Group, signals: list[str], signal_help: str) -> None:
    """Add `guarantee` to the cascade command group."""

    @library_command(group, "guarantee", lists=True)
    @click.argument("cheap_run")
    @click.option("--human", required=True, help="The human rating agreement is measured against.")
    @click.option(
        "--target",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.8,
        show_default=True,
        help="The least share of kept items on which the cheap judge agrees with people.",
    )
    @click.option(
        "--delta",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.1,
        show_default=True,
        help="The chance the guarantee may fail (it holds with probability 1 - delta).",
    )
    @click.option(
        "--within",
        type=click.FloatRange(0),
        default=0.5,
        show_default=True,
        help="Agreement on an item: the cheap judge's score within this distance of people's rating.",
    )
    @click.option(
        "--signal", type=click.Choice(signals), default="entropy", show_default=True, help=signal_help
    )
    @click.option(
        "--min-kept",
        type=click.IntRange(1),
        default=30,
        show_default=True,
        help="Thresholds keeping fewer calibration items are passed over, not tested.",
    )
    @click.option(
        "--strong-run",
        default=None,
        help="The strong judge on the same items: its agreement on the items "
        "sent on (measured, not guaranteed).",
    )
    @click.option("--strong", default=None, help="The strong judge's frozen prompt (needed with --freeze).")
    @click.option(
        "--freeze",
        "name",
        default=None,
        help="Freeze cascade NAME at the chosen threshold, with its target, delta and calibration.",
    )
    @click.option("--steps", "show_steps", is_flag=True, help="List every threshold tested.")
    def guarantee(
        library: Any,
        cheap_run: str,
        human: str,
        target: float,
        delta: float,
        within: float,
        signal: str,
        min_kept: int,
        strong_run: str | None,
        strong: str | None,
        name: str | None,
        show_steps: bool,
        as_json: bool,
    ) -> None:
        from ..diagnostics.escalate import calibrate_guarantee, freeze_guaranteed

        if name and not strong:
            raise click.UsageError("--freeze needs --strong (the strong judge's frozen prompt)")
        note_unsaved(library, library.get_run(cheap_run).dataset_id, human)
        out = calibrate_guarantee(
            library, cheap_run, human, signal, target, delta, within, min_kept, strong_run
        )
        if name:
            cascade, created = freeze_guaranteed(library, name, out, strong or "")
            out["frozen"] = {
                "name": cascade["name"],
                "version": cascade["version"],
                "id": cascade["id"],
                "created": created,
            }
        if as_json:
            echo_json(out)
            return
        for line in calibration_lines(out, show_steps):
            click.echo(line)

    guarantee.help = HELP


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def calibration_lines(out: dict[str, Any], show_steps: bool = False) -> list[str]:
    """The calibration as the command prints it."""
    cal = out["calibration"]
    lines = [
        f"calibration: {out['items']} items of run {cal['run']} ({cal['judge']}) rated {out['human']!r}; "
        f"agreement = score within {out['within']:g} of people's rating ({_pct(out['overall_agreement'])} "
        "of all items)",
        f"target: {out['target']:.0%} agreement on the kept items, with probability at least "
        f"{1 - out['delta']:.0%} (delta {out['delta']:g})",
    ]
    if out["threshold"] is None:
        lines.append(
            f"no threshold: none reaches the target at this delta on these items ({out['tested']} tested); "
            "every item would go to the strong judge. Rate more items, lower the target or raise delta"
        )
    else:
        lines.append(
            f"threshold ({out['signal']}) {out['threshold']:.4f}: keeps {out['kept']} of {out['items']} "
            f"({out['kept_share']:.1%}); agreement on them {_pct(out['agreement'])}, at least "
            f"{_pct(out['lower_bound'])} with probability {1 - out['delta']:.0%}"
        )
    if out["stopped_at"] is not None:
        last = out["steps"][-1]
        lines.append(
            f"stopped at {out['stopped_at']:.4f}: {last['kept']} kept, {last['disagree']} disagree, "
            f"p = {last['p_value']:.3g} > {out['delta']:g}"
        )
    if show_steps:
        lines += [
            f"  {s['threshold']:8.4f}  kept {s['kept']:6d}  disagree {s['disagree']:6d}  p {s['p_value']:.3g}"
            f"  {'passed' if s['passed'] else 'stop'}"
            for s in out["steps"]
        ]
    strong = out.get("strong")
    if strong:
        lines.append(
            f"strong judge on the {strong['sent']} sent on: agreement {_pct(strong['agreement_on_sent'])}; "
            f"the whole cascade {_pct(strong['cascade_agreement'])} (measured, not guaranteed)"
        )
    lines += [f"covers: {out['covers']}", "does not cover:", *(f"  - {n}" for n in out["does_not_cover"])]
    if out.get("frozen"):
        f = out["frozen"]
        lines.append(
            f"{'froze' if f['created'] else 'already frozen:'} {f['name']}@{f['version']} ({f['id'][:12]})"
        )
    return lines


def guarantee_summary(
    library: Any, cascade: dict[str, Any], result: dict[str, Any], dataset_id: str
) -> dict[str, Any] | None:
    """The guarantee's report on a scored dataset (people's ratings used where it has them); None without one."""
    g = cascade.get("guarantee")
    if not g:
        return None
    from ..diagnostics.escalate import guarantee_report

    human = g["human"]
    note_unsaved(library, dataset_id, human)
    people = (
        library.human_means(dataset_id, human) if human in library.get_dataset(dataset_id).human else None
    )
    return guarantee_report(cascade, result, people)


def guarantee_lines(report: dict[str, Any]) -> list[str]:
    """The report as `cascade score` prints it."""
    lines = [
        f"guarantee: kept {report['kept']} of {report['items']} ({report['kept_share']:.1%}; calibration "
        f"{report['calibration_kept_share']:.1%} of {report['calibration_items']}), at least "
        f"{report['target']:.0%} agreement on kept items with probability {1 - report['delta']:.0%}"
    ]
    if "rated_kept" in report:
        lines.append(
            f"people rated {report['rated_kept']} kept items: agreement {report['rated_kept_agreement']:.1%}"
        )
    if report["shift_warning"]:
        lines.append(f"caution: {report['shift_warning']}")
    lines += [
        f"covers: {report['covers']}",
        "does not cover:",
        *(f"  - {n}" for n in report["does_not_cover"]),
    ]
    return lines
