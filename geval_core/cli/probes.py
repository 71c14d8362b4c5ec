"""`geval probe bias`: does the judge favour length or a model family, and does it notice damage?"""

from __future__ import annotations

from typing import Any

import click

from prompt_library import open_library

from ..diagnostics.perturb import KINDS
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
        click.echo(f"Spearman(human {out['human']}, length) {_f(out['human_length_spearman'])}   "
                   f"partial Spearman(judge, length | human) {_f(out['length_partial_spearman'])}")
    for s in out.get("systems", []):
        flag = "   WARNING: same family as the judge" if s["same_family_as_judge"] else ""
        click.echo(f"  {click.style(str(s['system']), bold=True)}: judge {_f(s['judge_mean'])}  human "
                   f"{_f(s['human_mean'])}  judge-human {_f(s['judge_minus_human'])}  n {s['items']}{flag}")
    p = out.get("perturbation")
    if p:
        click.echo(f"perturbation {p['kind']!r} of {p['field']!r}: damaged copy rated lower in {p['lower']} of "
                   f"{p['pairs']} (sensitivity {_f(p['sensitivity'])}, 95% CI [{_f(p['ci'][0])}, "
                   f"{_f(p['ci'][1])}]); mean drop {_f(p['mean_drop'])}; probe run {p['probe_run']}")


@click.group("probe", invoke_without_command=True)
@probe_options
@db_option
@json_option
@click.pass_context
@workbench_errors
def probe_group(ctx: click.Context, judge_ref: str | None, base_url: str | None, prompt_ref: str | None,
                timeout: float, db: str | None, as_json: bool) -> None:
    """Probe a judge: `geval probe --judge J` measures what it can do (log-probabilities and their cap,
    single-token ratings, n, latency, cost; kept in the library); `geval probe bias RUN` checks a run.

    \b
    Examples:
      geval probe --judge openai:gpt-4o-mini
      geval probe --judge openai:smollm2 --base-url http://127.0.0.1:8080/v1 --json
      geval probe bias 1a2b3c --system-field system_id --family M8=gpt
    """
    if ctx.invoked_subcommand is None:
        run_probe(db, judge_ref, base_url, prompt_ref, timeout, as_json)


@probe_group.command("bias")
@click.argument("run_id", shell_complete=complete_run)
@click.option("--human", default=None, help="Human rating name (default: the one named like the dimension).")
@click.option("--system-field", default=None, help="Input field naming each item's system (or 'group').")
@click.option("--family", "families", multiple=True, callback=_families, metavar="SYSTEM=FAMILY",
              help="A system's model family; warned about when it appears in the judge's model name.")
@click.option("--field", default=None, help="The judged output field (default: the prompt's last input).")
@click.option("--perturb/--no-perturb", default=True, show_default=True,
              help="Score damaged copies (costs judge calls: --limit items).")
@click.option("--kind", type=click.Choice(sorted(set(KINDS.values()))), default=None,
              help="Perturbation (default by dimension: coherence shuffle, fluency words, "
                   "consistency swap, relevance foreign).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="Damaged copies.")
@click.option("--seed", default=0, show_default=True, type=int)
@db_option
@json_option
@workbench_errors
def bias_command(run_id: str, human: str | None, system_field: str | None, families: dict[str, str],
                 field: str | None, perturb: bool, kind: str | None, limit: int, seed: int,
                 db: str | None, as_json: bool) -> None:
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
