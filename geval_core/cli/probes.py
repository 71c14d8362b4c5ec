"""`geval probe bias`: does the judge favour length or a model family, and does it notice damage?"""

from __future__ import annotations

from typing import Any

import click

from prompt_library import open_library

from ..diagnostics.perturb import KINDS
from ..prompts.rubric_forms import VARIANTS
from .common import complete_run, db_option, echo_json, json_option, workbench_errors
from .judge_probe import probe_options, run_probe


def _families(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        system, sep, family = value.partition("=")
        if not sep or not system.strip() or not family.strip():
            raise click.BadParameter(f"expected SYSTEM=FAMILY, e.g. M8=gpt; got {value!r}")
        out[system.strip()] = family.strip()
    return out


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print(out: dict[str, Any]) -> None:
    click.echo(f"run {out['run']}: {out['items']} scored items; length = words in {out['field']!r}")
    click.echo(f"Spearman(judge score, length) {_f(out['length_spearman'])}")
    if "length_partial_spearman" in out:
        click.echo(
            f"Spearman(human {out['human']}, length) {_f(out['human_length_spearman'])}   "
            f"partial Spearman(judge, length | human) {_f(out['length_partial_spearman'])}"
        )
    for s in out.get("systems", []):
        flag = "   WARNING: same family as the judge" if s["same_family_as_judge"] else ""
        click.echo(
            f"  {click.style(str(s['system']), bold=True)}: judge {_f(s['judge_mean'])}  human "
            f"{_f(s['human_mean'])}  judge-human {_f(s['judge_minus_human'])}  n {s['items']}{flag}"
        )
    p = out.get("perturbation")
    if p:
        click.echo(
            f"perturbation {p['kind']!r} of {p['field']!r}: damaged copy rated lower in {p['lower']} of "
            f"{p['pairs']} (sensitivity {_f(p['sensitivity'])}, 95% CI [{_f(p['ci'][0])}, "
            f"{_f(p['ci'][1])}]); mean drop {_f(p['mean_drop'])}; probe run {p['probe_run']}"
        )


@click.group("probe", invoke_without_command=True)
@probe_options
@db_option
@json_option
@click.pass_context
@workbench_errors
def probe_group(
    ctx: click.Context,
    judge_ref: str | None,
    base_url: str | None,
    prompt_ref: str | None,
    timeout: float,
    db: str | None,
    as_json: bool,
) -> None:
    """Probe a judge: `geval probe --judge J` measures what it can do (log-probabilities and their cap,
    single-token ratings, n, latency, cost; kept in the library); `geval probe bias RUN` checks a run for length
    and family bias and damage it misses; `geval probe rubric RUN` for ratings that move with the rubric's form.

    \b
    Examples:
      geval probe --judge openai:gpt-4o-mini
      geval probe --judge openai:smollm2 --base-url http://127.0.0.1:8080/v1 --json
      geval probe bias 1a2b3c --system-field system_id --family M8=gpt
      geval probe rubric 1a2b3c --sample 20
    """
    if ctx.invoked_subcommand is None:
        run_probe(db, judge_ref, base_url, prompt_ref, timeout, as_json)


@probe_group.command("bias")
@click.argument("run_id", shell_complete=complete_run)
@click.option("--human", default=None, help="Human rating name (default: the one named like the dimension).")
@click.option("--system-field", default=None, help="Input field naming each item's system (or 'group').")
@click.option(
    "--family",
    "families",
    multiple=True,
    callback=_families,
    metavar="SYSTEM=FAMILY",
    help="A system's model family; warned about when it appears in the judge's model name.",
)
@click.option("--field", default=None, help="The judged output field (default: the prompt's last input).")
@click.option(
    "--perturb/--no-perturb",
    default=True,
    show_default=True,
    help="Score damaged copies (costs judge calls: --limit items).",
)
@click.option(
    "--kind",
    type=click.Choice(sorted(set(KINDS.values()))),
    default=None,
    help="Perturbation (default by dimension: coherence shuffle, fluency words, "
    "consistency swap, relevance foreign).",
)
@click.option(
    "--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="Damaged copies."
)
@click.option("--seed", default=0, show_default=True, type=int)
@db_option
@json_option
@workbench_errors
def bias_command(
    run_id: str,
    human: str | None,
    system_field: str | None,
    families: dict[str, str],
    field: str | None,
    perturb: bool,
    kind: str | None,
    limit: int,
    seed: int,
    db: str | None,
    as_json: bool,
) -> None:
    """Length bias, per-system judge-human offsets, and sensitivity to damaged copies of items.

    \b
    Examples:
      geval probe bias 1a2b3c --system-field system_id --family M8=gpt --limit 20
      geval probe bias 1a2b3c --human coherence --no-perturb --json    # no judge calls
    """
    from ..diagnostics.bias_probes import bias_report, perturbation_probe  # numpy only when run

    with open_library(db) as library:
        out = bias_report(library, run_id, human, system_field, families, field)
        if perturb:  # the copies are scored with the run's own judge settings
            out["perturbation"] = perturbation_probe(library, run_id, None, kind, field, limit, seed)
    if as_json:
        echo_json(out)
    else:
        _print(out)


def _variants(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        raise click.BadParameter(f"choose from {', '.join(VARIANTS)} (comma-separated); got {value!r}")
    return names


def _print_rubric(out: dict[str, Any]) -> None:
    human = f"; people: {out['human']!r}" if out["human"] else "; no human rating named like the dimension"
    click.echo(f"run {out['run']} ({out['prompt']}): {out['sample']} items re-scored per rubric form{human}")
    for v in out["variants"]:
        click.echo(
            f"  {click.style(v['variant'], bold=True)} ({v['mapping']}; run {v['probe_run']}), {v['items']} "
            f"items: mean |change| {_f(v['mean_abs_change'])}, mean change {_f(v['mean_signed_change'])}, "
            f"Spearman {_f(v['spearman'])}, Kendall {_f(v['kendall'])}; top rating changed for "
            f"{v['top_changed']} of {v['top_items']}"
        )
        if "human_items" in v:
            click.echo(
                f"    Spearman with people over {v['human_items']} items: original "
                f"{_f(v['human_spearman_original'])}, this form {_f(v['human_spearman_variant'])}"
            )
        if v["unscored"]:
            click.echo(f"    {v['unscored']} items got no score under this form")


@probe_group.command("rubric")
@click.argument("run_id", shell_complete=complete_run)
@click.option(
    "--sample",
    default=20,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Scored items of the run re-scored under each form (costs judge calls: sample x forms).",
)
@click.option(
    "--variants",
    default=",".join(VARIANTS),
    show_default=True,
    callback=_variants,
    help="Rubric forms, comma-separated: reverse-anchors (scale points listed lowest first), "
    "shift-labels (1-5 shown as 0-4, ratings mapped back +1), reverse-scale (1 is best; "
    "ratings mapped back r -> min+max-r).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the sample.")
@db_option
@json_option
@workbench_errors
def rubric_command(
    run_id: str, sample: int, variants: tuple[str, ...], seed: int, db: str | None, as_json: bool
) -> None:
    """Re-score a sample of a run with the rubric shown in another form, and report how far scores and rankings
    move: per form, the mean absolute and signed change of the mapped-back scores, Spearman and Kendall between
    the two scorings, the share of items whose most likely rating changes, and each scoring's Spearman with
    people when the dataset has their ratings. The sample is drawn from the dev side of a split dataset. Each
    form is a prompt of its own (named PROMPT.probe-FORM) scored with the run's own judge and server.

    \b
    Examples:
      geval probe rubric 1a2b3c --sample 20
      geval probe rubric 1a2b3c --sample 50 --variants shift-labels,reverse-scale --seed 7 --json
    """
    from ..diagnostics.rubric_probes import rubric_probe  # numpy only when run

    with open_library(db) as library:
        out = rubric_probe(
            library,
            run_id,
            None,
            sample,
            variants,
            seed,
            on_plan=lambda plan: click.echo(plan.describe(), err=True),
        )
    if as_json:
        echo_json(out)
    else:
        _print_rubric(out)
