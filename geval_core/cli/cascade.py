"""`geval cascade`: the cost / agreement curve of a cheap judge backed by a strong one, a frozen threshold, and
scoring with it."""

from __future__ import annotations

import json
from typing import Any

import click

from . import escalate
from .common import (
    check_output,
    complete_prompt_name,
    complete_run,
    data_ref_option,
    echo_json,
    library_command,
    note_unsaved,
    pairs,
    write_lines,
)

__all__ = ["cascade_group"]
SIGNAL_HELP = (
    "How the cheap judgment's uncertainty is read: entropy or sd of its rating distribution, margin "
    "(one minus the top-two gap), valid_mass (one minus it), flip (the chance that asking it again gives "
    "another rating than its score rounds to). Items without a cheap score always go on."
)
SIGNALS = [
    "entropy",
    "sd",
    "margin",
    "valid_mass",
    "flip",
]  # diagnostics.cascade.SIGNALS, not imported at start-up


@click.group("cascade")
def cascade_group() -> None:
    """A cheap judge on every item, the strong judge only where the cheap one is unsure.

    \b
    Examples:
      geval cascade curve 1a2b3c 4d5e6f --human coherence
      geval cascade freeze quick --cheap coherence-mini --strong coherence --threshold 0.9
      geval cascade score quick --data golden --out results.jsonl
    """


@library_command(cascade_group, "curve", lists=True)
@click.argument("cheap_run", shell_complete=complete_run)
@click.argument("strong_run", shell_complete=complete_run)
@click.option("--human", required=True, help="The human rating the agreement is measured against.")
@click.option("--signal", type=click.Choice(SIGNALS), default="entropy", show_default=True, help=SIGNAL_HELP)
@click.option(
    "--thresholds",
    type=click.IntRange(2, 101),
    default=11,
    show_default=True,
    help="How many thresholds (quantiles of the cheap judge's uncertainty).",
)
@click.option(
    "--bootstrap",
    type=click.IntRange(0, 20000),
    default=500,
    show_default=True,
    help="Resamples for the intervals (the dataset's groups when it has them).",
)
def cascade_curve_command(
    library: Any,
    cheap_run: str,
    strong_run: str,
    human: str,
    signal: str,
    thresholds: int,
    bootstrap: int,
    as_json: bool,
) -> None:
    """On a calibration set both judges scored (CHEAP_RUN, STRONG_RUN): per threshold, the share sent to the strong
    judge and the cascade's Spearman with people and with the strong judge, with 95% intervals.

    \b
    Examples:
      geval cascade curve 1a2b3c 4d5e6f --human coherence
      geval cascade curve 1a2b3c 4d5e6f --human coherence --signal margin --thresholds 21 --json
    """
    from ..diagnostics.cascade import cascade_curve

    # The text shows no interval for the agreement with the strong judge: resampled for --json only (most of the
    # time on continuous scores).
    note_unsaved(library, library.get_run(cheap_run).dataset_id, human)
    result = cascade_curve(
        library, cheap_run, strong_run, human, signal, thresholds, bootstrap, strong_intervals=as_json
    )
    if as_json:
        echo_json(result)
        return
    click.echo(f"{result['items']} items, {result['resampled']} resampled; signal {signal}")
    for row in result["curve"]:
        low_high = "" if not row["interval"] else f" [{row['interval'][0]:.3f}, {row['interval'][1]:.3f}]"
        click.echo(
            f"threshold {row['threshold']:8.4f}  strong on {row['routed_share']:6.1%}  Spearman with people "
            f"{row['spearman']:.3f}{low_high}  with the strong judge {row['with_strong']:.3f}"
        )


@library_command(cascade_group, "freeze", lists=True)
@click.argument("name")
@click.option(
    "--cheap", required=True, shell_complete=complete_prompt_name, help="The cheap judge's frozen prompt."
)
@click.option(
    "--strong", required=True, shell_complete=complete_prompt_name, help="The strong judge's frozen prompt."
)
@click.option("--signal", type=click.Choice(SIGNALS), default="entropy", show_default=True, help=SIGNAL_HELP)
@click.option(
    "--threshold",
    type=float,
    required=True,
    help="Items whose uncertainty is above it go to the strong judge (read it off `geval cascade curve`).",
)
def cascade_freeze(
    library: Any, name: str, cheap: str, strong: str, signal: str, threshold: float, as_json: bool
) -> None:
    """Freeze cascade NAME: the two prompts, the signal and the threshold, content-hashed and versioned.

    \b
    Examples:
      geval cascade freeze quick --cheap coherence-mini --strong coherence --threshold 0.9
      geval cascade freeze quick --cheap coherence-mini --strong coherence --signal margin --threshold 0.35
    """
    from ..diagnostics.cascade import freeze_cascade

    cascade, created = freeze_cascade(library, name, cheap, strong, signal, threshold)
    if as_json:
        echo_json({**cascade, "created": created})
        return
    click.echo(
        f"{'froze' if created else 'already frozen:'} {name}@{cascade['version']} ({cascade['id'][:12]})"
    )


@library_command(cascade_group, "score", lists=True)
@click.argument("name")
@data_ref_option(help="Library dataset name[@version].", library_only=True)
@click.option(
    "--base-url",
    "base_urls",
    multiple=True,
    help="cheap=URL or strong=URL: the OpenAI-compatible server of that judge (repeatable).",
)
@click.option(
    "--out", default=None, help="Results file, one JSON line per item (default: stdout; - is stdout)."
)
def cascade_score(
    library: Any, name: str, data_ref: str, base_urls: tuple[str, ...], out: str | None, as_json: bool
) -> None:
    """Score a dataset with cascade NAME: the cheap judge everywhere, the strong one where the cheap one is unsure;
    each row says who scored it; the summary says what was spent and saved against the strong judge.

    The rows go to --out (or stdout); the summary always goes to stderr, with --json as one JSON object, so
    stdout holds the rows alone.

    \b
    Examples:
      geval cascade score quick --data golden --out results.jsonl
      geval cascade score quick --data golden --base-url cheap=http://127.0.0.1:8080/v1 --json > rows.jsonl
    """
    from ..diagnostics.cascade import get_cascade, score_cascade

    check_output(out)
    cascade = get_cascade(library, name)
    dataset_id = library.get_dataset(data_ref).id
    result = score_cascade(library, cascade, dataset_id, None, None, pairs(base_urls, "--base-url"))
    # A guaranteed cascade says what it kept and what its guarantee covers (None for any other).
    guarantee = (
        escalate.guarantee_summary(library, cascade, result, dataset_id)
        if result["status"] == "done"
        else None
    )
    if guarantee:
        result["guarantee"] = guarantee
    write_lines("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in result.pop("rows")), out)
    for role, judge in result["judges"].items():
        if judge and not as_json:  # with --json the summary on stderr holds them
            click.echo(f"{role} {judge}", err=True)
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False), err=True)
    if result["status"] != "done":
        failure = result["failed"][-1]
        from .score import EXIT_FAILED, RunEnded

        raise RunEnded(
            f"the cascade did not finish: its {failure['side']} judge's run {failure['run']} "
            f"{failure['status']}"
            + (f" ({failure['error']})" if failure["error"] else "")
            + "; its rows without a score say so. Run the same command again to resume it",
            EXIT_FAILED,
        )
    if as_json:
        return
    saved = result["spend"]["strong_tokens_saved_share"]
    click.echo(
        f"cascade {result['cascade']}: strong judge on {result['routed']} of {result['items']} items "
        f"({result['routed_share']:.1%}); strong calls saved {result['spend']['strong_calls_saved']}"
        + ("" if saved is None else f", strong tokens saved {saved:.1%}"),
        err=True,
    )
    for line in escalate.guarantee_lines(guarantee) if guarantee else []:
        click.echo(line, err=True)


escalate.register(cascade_group, SIGNALS, SIGNAL_HELP)
