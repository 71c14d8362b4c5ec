"""`geval probe --judge J`: what a judge can do, measured with a few cheap requests and kept in the library."""

from __future__ import annotations

from typing import Any

import click

from prompt_library import open_library

from ..types import JudgeSettings
from .common import JUDGE_HELP, complete_prompt, echo_json, parse_judge, resolve_prompt

FACTS = (
    "reachable",
    "model_version",
    "logprobs",
    "top_logprobs_max",
    "single_token_ratings",
    "split_ratings",
    "n_honoured",
    "latency_s",
    "usd_per_item",
)


def probe_options(func: Any) -> Any:
    """--judge, --base-url, --prompt, --timeout: which judge `geval probe` asks."""
    for option in reversed(
        (
            click.option("--judge", "judge_ref", default=None, help=f"The judge to probe: {JUDGE_HELP}."),
            click.option(
                "--base-url", default=None, help="Your OpenAI-compatible server (for openai:MODEL)."
            ),
            click.option(
                "--prompt",
                "prompt_ref",
                default=None,
                shell_complete=complete_prompt,
                help="A library prompt: probe with its text, scale and judge (default: a 1-5 question).",
            ),
            click.option(
                "--timeout",
                type=click.FloatRange(0.1, 600),
                default=60.0,
                show_default=True,
                help="Seconds per call.",
            ),
        )
    ):
        func = option(func)
    return func


def _settings(library: Any, judge_ref: str | None, base_url: str | None, prompt_ref: str | None) -> tuple:
    """(settings, prompt or None): the prompt's judge, with --judge/--base-url over it, planned as a run's judge is
    (the server named, else the environment's), so the probe is kept under the server a run will reach."""
    from ..run.plan import JudgeChoice, plan_judge

    prompt = resolve_prompt(library, prompt_ref) if prompt_ref else None
    settings = prompt.dimension.judge if prompt else JudgeSettings()
    if judge_ref:
        provider, model = parse_judge(judge_ref)
        judge_ref = f"{provider}:{model}" if model else provider
    elif prompt is None:
        raise click.UsageError("name the judge to probe with --judge (or a prompt with --prompt)")
    return plan_judge(settings, JudgeChoice(judge_ref, base_url), library).settings, prompt


def run_probe(
    db: str | None,
    judge_ref: str | None,
    base_url: str | None,
    prompt_ref: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Probe the judge, store the result in the library, print it."""
    from ..diagnostics.judge_probe import probe_judge, save_probe
    from ..providers import get_judge
    from ..providers.capabilities import probe_findings

    with open_library(db) as library:
        settings, prompt = _settings(library, judge_ref, base_url, prompt_ref)
        result = probe_judge(get_judge(settings, timeout=timeout), settings, prompt, store=library)
        save_probe(library, settings, result)
    if as_json:
        echo_json(result)
        return
    click.echo(f"{result['judge']} at {result['server']} (probed {result['probed_at']}, kept in the library)")
    for key in FACTS:
        click.echo(f"  {key}: {'unknown' if result[key] is None else result[key]}")
    for line in probe_findings(result, settings) + result["errors"]:
        click.echo(f"  note: {line}")
