"""`geval prompts`: frozen prompt versions from the command line (list, show, steps, freeze, export, import)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from prompt_library import Library

from ..errors import InputError
from ..files.prompt_files import (
    DIMENSION_KEYS,
    DIMENSION_TEXTS,
    FORMAT,
    agreement_summary,
    check_shape,
    export_prompt,
    parse_json,
    production_snippet,
    read_agreement,
    write_export,
)
from ..files.tool_exports import FORMATS, check_pass_at
from ..prompts import render
from ..providers.exports import export_for_tool
from ..types import Dimension, steps_origin
from .common import (
    JUDGE_HELP,
    READABLE,
    check_output,
    complete_prompt_name,
    echo_json,
    input_path,
    json_needs_file,
    library_command,
    note_unsaved,
    planned_judge,
    read_input,
    report_written,
    table,
)


# --- prompts ------------------------------------------------------------------------------------------
@click.group("prompts")
def prompts() -> None:
    """Frozen prompt versions: list, show, steps, freeze, export, import.

    \b
    Examples:
      geval prompts list
      geval prompts steps helpfulness.json -o helpfulness.steps.json    # a model writes the steps once
      geval prompts show coherence --rendered
      geval prompts export coherence -o coherence.json
    """


@library_command(prompts, "list", lists=True)
@click.option("--all-versions", is_flag=True, help="One line per version instead of the latest of each name.")
@click.option("--probes", is_flag=True, help="Also the variants rubric-form probes froze (NAME.probe-FORM).")
def prompts_list(library: Library, as_json: bool, all_versions: bool, probes: bool) -> None:
    """List frozen prompts (latest version of each name).

    \b
    Examples:
      geval prompts list
      geval prompts list --all-versions --json
      geval prompts list --probes    # with the rubric-form probes' variants
    """
    rows = library.list_prompts(latest_only=not all_versions, probes=probes)
    for row in rows:
        row["id"] = row["id"] if as_json else row["id"][:12]
    if as_json:
        echo_json(rows)
    else:
        table(rows, ["label", "id", "scale", "inputs", "judge", "mode", "versions", "created_at"])


@library_command(prompts, "show", lists=True)
@click.argument("prompt", shell_complete=complete_prompt_name)
@click.option("--rendered", is_flag=True, help="Also print the template with the dimension filled in.")
def prompts_show(library: Library, prompt: str, as_json: bool, rendered: bool) -> None:
    """Show one frozen prompt: PROMPT is a name (latest), name@version or a content hash (a prefix of 6+).

    \b
    Examples:
      geval prompts show coherence
      geval prompts show coherence@1 --rendered
      geval prompts show ae4331c01f8e --json
    """
    frozen = library.get_prompt(prompt)
    if as_json:
        echo_json(export_prompt(frozen))
        return
    dim = frozen.dimension
    click.echo(
        f"{frozen.label}  {frozen.id[:12]}  (content hash {frozen.id}: the prompt's identity)\n"
        f"judge {dim.judge.judge_id} ({dim.judge.mode}, n={dim.judge.n}, "
        f"temperature={dim.judge.temperature})\n"
        f"unverified metadata (outside the hash): name {frozen.name!r}, version {frozen.version} (counts "
        f"within this library), created {frozen.created_at}, steps {steps_origin(dim.steps_model)}\n"
    )
    click.echo(f"{dim.name} ({dim.scale}): {dim.definition}\n")
    for point in reversed(dim.scale.points):
        click.echo(f"  {point}: {dim.anchors.get(point, '')}")
    click.echo(f"\ninputs: {', '.join(dim.inputs)}\nsteps:")
    for i, step in enumerate(dim.steps, 1):
        click.echo(f"  {i}. {step}")
    if rendered:
        click.echo("\n" + render(frozen, {f: f"{{{{{f}}}}}" for f in dim.inputs}))


@library_command(prompts, "freeze", lists=True)
@click.argument("dimension_file", type=READABLE)
@click.option("--name", default=None, help="Library name (default: the dimension name, lower-cased).")
def prompts_freeze(library: Library, dimension_file: str, name: str | None, as_json: bool) -> None:
    """Freeze a dimension JSON file (Dimension.to_dict shape; - reads stdin) into a new immutable version.

    \b
    Examples:
      geval prompts freeze dimension.json --name coherence-strict
      geval prompts freeze - --json < dimension.json
    """
    result = library.freeze(read_dimension(dimension_file), name=name)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(_frozen(result))
        return
    click.echo(
        f"{'froze' if result.created else 'already frozen as'} {result.prompt.label} {result.prompt.id}"
    )


@library_command(prompts, "steps")
@click.argument("dimension_file", type=READABLE)
@click.option("--judge", "judge_ref", default=None, help="The model that writes the steps. " + JUDGE_HELP)
@click.option(
    "--base-url",
    default=None,
    help="Its server: an OpenAI-compatible one (vLLM, Ollama, llama.cpp) for openai:MODEL; the key comes from the "
    "environment.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the dimension here (default: print).",
)
def prompts_steps(
    library: Library, dimension_file: str, judge_ref: str | None, base_url: str | None, output: str | None
) -> None:
    """Let a model write the evaluation steps of a dimension JSON file once (G-Eval's auto chain of thought):
    the dimension with its steps and the model that wrote them, to edit and then `geval prompts freeze`.

    \b
    Examples:
      geval prompts steps helpfulness.json -o helpfulness.steps.json
      geval prompts steps helpfulness.json --judge openai:gpt-4o-mini -o helpfulness.steps.json
      geval prompts freeze helpfulness.steps.json
    """
    from ..prompts.steps import generate_steps
    from ..providers import get_judge

    dimension = read_dimension(dimension_file)
    planned = planned_judge(library, dimension.judge, judge_ref, base_url)
    click.echo(planned.describe(), err=True)  # which model writes the steps, at which server
    steps, model = generate_steps(dimension, get_judge(planned.settings), planned.settings)
    written = replace(dimension, steps=tuple(steps), steps_model=model)
    text = json.dumps(written.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    Path(output).write_text(text, encoding="utf-8")
    click.echo(
        f"wrote {len(steps)} steps by {model} to {output}; edit them, then `geval prompts freeze {output}`"
    )


def read_dimension(dimension_file: str) -> Dimension:
    """A dimension JSON file (- for stdin) as a Dimension; an exported prompt or a key a dimension does not have
    is refused, naming it (ignored, it would change the prompt without a word)."""
    try:
        data = parse_json(read_input(dimension_file), "dimension JSON file", dimension_file)
        if isinstance(data, dict) and data.get("format") == FORMAT:
            raise InputError(
                f"an exported prompt ({FORMAT}), not a dimension: `geval prompts import {dimension_file}` adds it "
                "as it is (its content hash checked); to make a new version from it, write its fields "
                f"{', '.join(DIMENSION_KEYS)} to a dimension file and freeze that",
                file=dimension_file,
            )
        check_shape(data, DIMENSION_TEXTS, "not a dimension JSON file", dimension_file)
        unknown = sorted(set(data) - set(DIMENSION_KEYS))
        if unknown:
            raise InputError(
                f"not a dimension's field{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)} "
                f"(a dimension has {', '.join(DIMENSION_KEYS)})",
                file=dimension_file,
                field=unknown[0],
            )
        return Dimension.from_dict(data)
    except InputError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise click.ClickException(f"{dimension_file}: not a dimension JSON file: {exc}") from None


def _frozen(result: Any) -> dict[str, Any]:
    """What scripts need of a freeze or an import: the label, the hash, whether it is new, what was said."""
    prompt = result.prompt
    return {
        "name": prompt.name,
        "version": prompt.version,
        "label": prompt.label,
        "content_hash": prompt.id,
        "created": result.created,
        "warnings": list(result.warnings),
        "note": getattr(result, "note", None),
    }


@library_command(prompts, "export", lists=True)
@click.argument("prompt", shell_complete=complete_prompt_name)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the export here (default: print it).",
)
@click.option(
    "--agreement",
    "agreement_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="JSON file with the agreement measured at freeze time (e.g. `geval agree --json`).",
)
@click.option(
    "--agreement-run",
    default=None,
    help="Measure the agreement from this library run of the prompt (needs --human). With per-rater "
    "ratings (NAME.0, NAME.1, ...) the raters' own agreement, each rater against the others, goes beside "
    "the judge's.",
)
@click.option(
    "--human",
    "human_field",
    default=None,
    help="Human rating of the run's dataset for --agreement-run, e.g. coherence.",
)
@click.option(
    "--pooled",
    is_flag=True,
    help="With --agreement-run: attach the dataset-level reading (all items pooled) instead of the "
    "group-level one.",
)
@click.option(
    "--snippet", is_flag=True, help="Print the Python lines that load the export and score an item."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="json",
    show_default=True,
    help="json: the workbench's hash-checked file; deepeval: a Python file defining a GEval metric; "
    "promptfoo: a YAML llm-rubric assertion (in an assert-set carrying the pass rule); openai-grader: a "
    "score_model grader for OpenAI's graders API (client.fine_tuning.alpha.graders; the Evals API is "
    "deprecated); inspect: a Python file defining an Inspect AI task that scores Eq. 1 from the judge's "
    "log-probabilities, as the workbench does.",
)
@click.option(
    "--pass-at",
    "pass_at",
    type=float,
    default=None,
    help="With --format deepeval, promptfoo, openai-grader or inspect: an item passes when its rating is "
    "at least this, on the prompt's scale (e.g. 3.5 on 1-5); the file says how the tool applies it.",
)
def prompts_export(
    library: Library,
    prompt: str,
    output: str | None,
    agreement_file: str | None,
    agreement_run: str | None,
    human_field: str | None,
    pooled: bool,
    snippet: bool,
    fmt: str,
    pass_at: float | None,
    as_json: bool,
) -> None:
    """Export a frozen prompt: a self-contained, hash-checked JSON file, or a file another judge tool loads.

    \b
    Examples:
      geval prompts export coherence -o coherence.json
      geval prompts export coherence --agreement-run 1a2b3c --human coherence -o coherence.json --json
      geval prompts export coherence --format promptfoo --pass-at 3.5 -o coherence.yaml
    """
    check_output(output)
    json_needs_file(as_json, output)
    output = None if output == "-" else output  # "-" is stdout
    frozen = library.get_prompt(prompt)
    if fmt != "json":
        if agreement_file or agreement_run or snippet:
            raise click.UsageError("--agreement, --agreement-run and --snippet go with --format json only")
        _check_pass_at(frozen, pass_at)
        _write_text(export_for_tool(frozen, fmt, pass_at=pass_at), output, frozen, as_json, fmt)
        return
    if pass_at is not None:
        raise click.UsageError(
            "--pass-at goes with --format deepeval, promptfoo, openai-grader or inspect; the json "
            "export is scored by the workbench itself"
        )
    agreement = _export_agreement(library, frozen, agreement_file, agreement_run, human_field, pooled)
    if output:
        write_export(frozen, output, agreement)  # the snippet loads the file by the name it was given
        report_written(
            as_json, _export_facts(frozen, output, fmt), f"wrote {output} ({frozen.label}, {frozen.id[:12]})"
        )
        if agreement is not None and not as_json:  # the goal is the raters' own: shown beside the judge's
            click.echo(f"agreement: {agreement_summary(agreement)}", err=True)
    elif not snippet:
        click.echo(json.dumps(export_prompt(frozen, agreement), indent=2, ensure_ascii=False))
    if snippet:
        click.echo(production_snippet(frozen, output))


def _check_pass_at(frozen: Any, pass_at: float | None) -> None:
    """A usage error (exit 2) naming --pass-at when the rating lies outside the prompt's scale."""
    try:
        check_pass_at(frozen, pass_at)
    except InputError as exc:
        scale = frozen.dimension.scale
        raise click.UsageError(
            f"--pass-at {pass_at:g} lies outside {frozen.label}'s {scale} scale; give a rating "
            f"from {scale.min} to {scale.max}"
        ) from exc


def _write_text(text: str, output: str | None, frozen: Any, as_json: bool, fmt: str) -> None:
    """An export's text to a file (saying so) or to stdout."""
    if not output:
        click.echo(text, nl=False)
        return
    Path(output).write_text(text, encoding="utf-8")
    report_written(
        as_json, _export_facts(frozen, output, fmt), f"wrote {output} ({frozen.label}, {frozen.id[:12]})"
    )


def _export_facts(frozen: Any, output: str, fmt: str) -> dict[str, Any]:
    """What an export wrote, for --json."""
    return {"file": output, "format": fmt, "prompt": frozen.label, "hash": frozen.id}


def _export_agreement(
    library: Library,
    frozen: Any,
    agreement_file: str | None,
    run_id: str | None,
    human_field: str | None,
    pooled: bool = False,
) -> dict[str, Any] | None:
    """The agreement for an export: from a file, measured from a run of this very prompt, or none."""
    from geval_core.stats import run_agreement

    if agreement_file and run_id:
        raise click.UsageError("give --agreement or --agreement-run, not both")
    if bool(run_id) != bool(human_field):
        raise click.UsageError("--agreement-run and --human go together: the run and the rating to compare")
    if agreement_file:
        return read_agreement(agreement_file)
    if not run_id or not human_field:  # both or neither (checked above)
        return None
    run = library.get_run(run_id)
    if run.prompt_id != frozen.id:
        raise click.ClickException(
            f"run {run.id} scored {run.prompt_label}, not {frozen.label}: "
            "an export carries the agreement of its own prompt version only"
        )
    note_unsaved(library, run.dataset_id, human_field)
    return run_agreement(library, run.id, human_field, pooled=pooled)


@library_command(prompts, "import", lists=True)
@click.argument("export_file", type=READABLE)
def prompts_import(library: Library, export_file: str, as_json: bool) -> None:
    """Import an exported prompt; refused when its content does not match its hash.

    A server URL in the file is ignored and agreement that fails its own hash is dropped (both warned
    about); the output says whether the content is new and how it differs from the latest version.

    \b
    Examples:
      geval prompts import coherence.json
      geval prompts import - --json < coherence.json
    """
    with input_path(export_file, "stdin.json") as readable:
        result = library.import_prompt(readable)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(_frozen(result))
        return
    click.echo(result.note)
    if result.agreement is not None:
        click.echo(f"attached agreement: {agreement_summary(result.agreement)}")
