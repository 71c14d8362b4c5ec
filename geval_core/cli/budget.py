"""`geval budget`: how many more human ratings a run's agreement figure and PPI estimate need for a target
interval width."""

from __future__ import annotations

from typing import Any

import click

from prompt_library import open_library

from .common import complete_run, db_option, echo_json, json_option, note_unsaved, workbench_errors

__all__ = ["budget_command"]

# stats.budget.FIGURES and stats.ppi.METHODS, stated here so that `geval --help` needs no numpy (a test checks).
FIGURES = ("spearman", "kendall", "pearson", "kappa_quadratic")
METHODS = ("classic", "ppi++")


@click.command("budget")
@click.argument("run_id", shell_complete=complete_run)
@click.option("--human", required=True, help="The human rating (its name in the run's dataset).")
@click.option(
    "--width",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Target width of the agreement figure's 95% interval (e.g. 0.1).",
)
@click.option(
    "--ppi-width",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Target width of the PPI estimate's 95% interval, on the rating scale (e.g. 0.2).",
)
@click.option(
    "--figure",
    type=click.Choice(FIGURES),
    default="spearman",
    show_default=True,
    help="The agreement figure planned for.",
)
@click.option(
    "--assurance",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="The chance the interval is at most the target wide once the ratings are in.",
)
@click.option(
    "--pooled",
    is_flag=True,
    help="Plan the dataset-level figure (all items pooled, groups resampled) "
    "instead of the group-level one when the items have groups.",
)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="ppi++",
    show_default=True,
    help="The PPI estimate planned for.",
)
@click.option(
    "--bootstrap",
    type=click.IntRange(0, 20000),
    default=1000,
    show_default=True,
    help="Resamples for the pilot's own interval (shown beside the plan; the plan needs none).",
)
@db_option
@json_option
@workbench_errors
def budget_command(
    run_id: str,
    human: str,
    width: float | None,
    ppi_width: float | None,
    figure: str,
    assurance: float,
    pooled: bool,
    method: str,
    bootstrap: int,
    db: str | None,
    as_json: bool,
) -> None:
    """How many more human ratings RUN_ID needs: for its agreement figure's interval (--width) and for the PPI
    estimate of the mean human rating (--ppi-width) to be at most the target wide, with the asked chance.

    The pilot is the run's scores and the ratings so far. The plan reads one unit's spread off the pilot (the
    jackknife), draws the workbench's own interval at each size, and allows for where the figure and its spread
    will land once the ratings are in; in simulation on SummEval's expert ratings (300 repeats) the planned size
    reached the width in about the asked share of repeats. It assumes the further ratings are drawn like the ones so far.

    \b
    Examples:
      geval budget 1a2b3c --human coherence --width 0.1
      geval budget 1a2b3c --human coherence --ppi-width 0.2 --assurance 0.9
      geval budget 1a2b3c --human coherence --width 0.15 --figure kendall --pooled --json
    """
    from ..diagnostics.budget import run_budget

    with open_library(db) as library:
        note_unsaved(library, library.get_run(run_id).dataset_id, human)
        out = run_budget(
            library, run_id, human, width, ppi_width, figure, assurance, pooled, method, bootstrap
        )
    if as_json:
        echo_json(out)
        return
    for line in budget_lines(out):
        click.echo(line)


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(ci: list[float | None] | None) -> str:
    return (
        "no interval"
        if not ci or ci[0] is None or ci[1] is None
        else (f"[{ci[0]:.3f}, {ci[1]:.3f}] (width {ci[1] - ci[0]:.3f})")
    )


def budget_lines(out: dict[str, Any]) -> list[str]:
    """The plans as the command prints them."""
    lines = [
        f"run {out['run']} on {out['dataset']}: {out['rated']} of {out['judged']} judged items rated "
        f"{out['human']!r} so far"
    ]
    a = out.get("agreement")
    if a:
        unit = a["unit"]
        lines.append(
            f"{a['figure']} ({a['reading']}-level) {_f(a['estimate'])}, interval now {_ci(a['pilot_interval'])}"
            f" from {a['pilot_units']} {unit}"
        )
        if a["planned_units"] is None:
            lines.append(f"  width {a['target_width']:g}: not reachable at any size planned for")
        else:
            more = f"{a['further_units']} more {unit}" + (
                f" (about {a['further_items']} items)" if unit == "groups" else ""
            )
            lines.append(
                f"  width {a['target_width']:g} with {a['assurance']:.0%} assurance: {a['planned_units']} "
                f"{unit} in all, {more}; {a['median_units']} for an even chance"
            )
            if a["further_items"] > out["judged"] - out["rated"]:
                lines.append(
                    f"  the run has {out['judged'] - out['rated']} judged items without a rating: judge "
                    "more items to rate"
                )
    p = out.get("ppi")
    if p:
        lines.append(f"{p['figure']} {_f(p['estimate'])}, interval now {_ci(p['pilot_interval'])}")
        if p["planned_rated"] is None:
            beyond = p["rated_with_more_judged"]
            lines.append(
                f"  width {p['target_width']:g}: not reachable by rating this run's {p['judged']} items "
                f"(all rated: {_f(p['width_all_rated'])} wide)"
                + ("" if beyond is None else f"; were many more items judged, about {beyond} rated would do")
            )
        else:
            lines.append(
                f"  width {p['target_width']:g} with {p['assurance']:.0%} assurance: {p['planned_rated']} "
                f"rated in all, {p['further_rated']} more of the {p['judged'] - p['pilot_rated']} judged but "
                f"unrated; {p['median_rated']} for an even chance"
            )
    lines.append(out["assumes"])
    return lines
