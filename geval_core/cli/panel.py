"""`geval panel`: freeze a panel of judges (prompts of one dimension and scale with a rule), show it, and score
a dataset with it (one run per member, reused when it exists; the panel's judgment per item)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ..errors import GEvalError, InputError
from ..scoring.panel import RULES
from .common import (
    READABLE,
    check_output,
    complete_prompt_name,
    data_ref_option,
    echo_json,
    json_needs_file,
    library_command,
    pairs,
    read_input,
    report_written,
    write_lines,
)

__all__ = ["panel_group"]


@click.group("panel")
def panel_group() -> None:
    """Panels of judges: several frozen prompts of one dimension, combined by a rule (mean, pooled, median).

    \b
    Examples:
      geval panel freeze trio --member coherence --member coherence-mini --member coherence-gemini
      geval panel score trio --data golden --human coherence --out results.jsonl
      geval panel export trio -o trio.json
    """


@library_command(panel_group, "freeze", lists=True)
@click.argument("name")
@click.option(
    "--member",
    "members",
    multiple=True,
    required=True,
    shell_complete=complete_prompt_name,
    help="A frozen prompt (name[@version] or hash prefix); give two or more.",
)
@click.option(
    "--rule",
    type=click.Choice(RULES),
    default="pooled",
    show_default=True,
    help="mean: of the members' weighted scores; pooled: Eq. 1 over their average rating "
    "distribution; median: of their scores.",
)
def panel_freeze(library: Any, name: str, members: tuple[str, ...], rule: str, as_json: bool) -> None:
    """Freeze NAME: the members (in order) and the rule, content-hashed; the same content keeps its version.

    \b
    Examples:
      geval panel freeze trio --member coherence --member coherence-mini --member coherence-gemini
      geval panel freeze pair --member coherence@1 --member coherence-mini@2 --rule median --json
    """
    from ..run.panel import freeze_panel

    panel, created = freeze_panel(library, name, [library.get_prompt(m) for m in members], rule)
    if as_json:
        echo_json(_panel_json(panel, created=created))
        return
    click.echo(
        f"{'froze' if created else 'already frozen:'} {panel.label} ({panel.id[:12]}), rule {panel.rule}, "
        f"{len(panel.members)} members"
    )


@library_command(panel_group, "show", lists=True)
@click.argument("name")
def panel_show(library: Any, name: str, as_json: bool) -> None:
    """Show a panel (NAME or NAME@VERSION): its hash, rule and members.

    \b
    Examples:
      geval panel show trio
      geval panel show trio@1 --json
    """
    from ..run.panel import get_panel

    panel = get_panel(library, name)
    members = [library.get_prompt(m) for m in panel.members]
    if as_json:
        echo_json(_panel_json(panel, member_labels=[m.label for m in members]))
        return
    click.echo(f"{panel.label} ({panel.id[:12]}), rule {panel.rule}, frozen {panel.created_at}")
    for member in members:
        click.echo(f"  {member.label} ({member.id[:12]}): {member.dimension.judge.judge_id}")


@library_command(panel_group, "score", lists=True)
@click.argument("name")
@data_ref_option(help="Library dataset name[@version], or a CSV/JSONL/JSON file.")
@click.option(
    "--base-url",
    default=None,
    help="The OpenAI-compatible server every member whose judge takes a server sends to (a member whose "
    "judge runs in process is refused: name servers per member with --member-base-url).",
)
@click.option(
    "--member-base-url",
    "base_urls",
    multiple=True,
    help="PROMPT=URL: the OpenAI-compatible server a member's requests go to (repeatable).",
)
@click.option(
    "--out", default=None, help="Results file, one JSON line per item (default: stdout; - is stdout)."
)
@click.option(
    "--human",
    default=None,
    help="Also each member and the panel against this human rating, and the "
    "panel minus its best member with a paired interval.",
)
def panel_score(
    library: Any,
    name: str,
    data_ref: str,
    base_url: str | None,
    base_urls: tuple[str, ...],
    out: str | None,
    human: str | None,
    as_json: bool,
) -> None:
    """Score a dataset with panel NAME: each member's run (reused when it exists), then per item the panel's
    score and distribution, each member's score and the spread; the summary has the members' alpha.

    The rows go to --out (or stdout); the summary always goes to stderr, with --json as one JSON object, so
    stdout holds the rows alone.

    \b
    Examples:
      geval panel score trio --data golden --out results.jsonl
      geval panel score trio --data golden --human coherence --json > rows.jsonl
      geval panel score trio --data golden --member-base-url coherence-mini=http://127.0.0.1:8080/v1
    """
    check_output(out)
    result, lines = run_panel(library, name, data_ref, base_urls, human, base_url=base_url)
    write_lines(lines, out)
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False), err=True)
        return
    click.echo(panel_line(result), err=True)
    independence = (result.get("against_people") or {}).get("independence")
    if independence:
        from ..diagnostics.panel_people import independence_text

        click.echo(independence_text(independence), err=True)


def run_panel(
    library: Any,
    name: str,
    data_ref: str,
    base_urls: tuple[str, ...],
    human: str | None,
    base_url: str | None = None,
    mapping: Any = None,
    side: str | None = None,
) -> tuple[dict[str, Any], str]:
    """(the summary, the results as JSON lines) of scoring a dataset (a library version or a data file) with panel
    `name`: every member planned first (its judge and server said on stderr), then scored."""
    from ..run.panel import get_panel, plan_panel, score_panel
    from .common import note_unsaved, resolve_data

    panel = get_panel(library, name)
    dataset = resolve_data(library, data_ref, library.get_prompt(panel.members[0]), mapping)
    member_urls = pairs(base_urls, "--member-base-url")
    for plan in plan_panel(library, panel, dataset.id, member_urls, base_url, side=side):
        for warning in plan.warnings:
            click.echo(f"warning: {warning}", err=True)
        click.echo(f"member {plan.describe()}", err=True)
    result = score_panel(library, panel, dataset.id, None, member_urls, base_url=base_url, side=side)
    if human:
        from ..diagnostics.panel_people import panel_against_people

        note_unsaved(library, dataset.id, human)
        result["against_people"] = panel_against_people(library, result["rows"], dataset.id, human)
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in result.pop("rows"))
    return result, lines


def panel_line(result: dict[str, Any]) -> str:
    """The panel's summary as one line: rule, the members' alpha with its interval, each member's run."""
    alpha = result["alpha"]
    low, high = alpha["interval"]
    spread = "" if low is None else f" [{low:.3f}, {high:.3f}]"
    value = "undefined" if alpha["value"] is None else f"{alpha['value']:.3f}"
    return (
        f"panel {result['panel']} ({result['rule']}): members' Krippendorff alpha (interval) {value}"
        f"{spread}, {alpha['resampled']} resampled; "
        + "; ".join(
            f"{m['prompt']} run {m['run']} ({m['judge_calls']} judge calls)" for m in result["member_runs"]
        )
    )


PANEL_KIND = "geval-panel"


def _panel_json(panel: Any, **extra: Any) -> dict[str, Any]:
    """A panel for --json: its stored fields, its label and what the command adds."""
    return {**asdict(panel), "label": panel.label, **extra}


@library_command(panel_group, "export", lists=True)
@click.argument("name")
@click.option("-o", "--output", default=None, help="File to write (default: stdout; - is stdout).")
def panel_export(library: Any, name: str, output: str | None, as_json: bool) -> None:
    """Write panel NAME as one JSON file: its hash and rule, and each member as a hash-checked prompt export.

    \b
    Examples:
      geval panel export trio -o trio.json
      geval panel export trio@2 -o trio.json --json    # file, hash
    """
    from ..files.prompt_files import export_prompt
    from ..run.panel import get_panel

    check_output(output)
    json_needs_file(as_json, output)
    panel = get_panel(library, name)
    data = {
        "kind": PANEL_KIND,
        "name": panel.name,
        "version": panel.version,
        "id": panel.id,
        "rule": panel.rule,
        "members": [export_prompt(library.get_prompt(m)) for m in panel.members],
    }
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if output and output != "-":
        Path(output).write_text(text, encoding="utf-8")
        report_written(
            as_json,
            {"file": output, "panel": panel.label, "hash": panel.id, "members": len(panel.members)},
            f"wrote {output} (panel {panel.label}, {panel.id[:12]})",
        )
    else:
        click.echo(text, nl=False)


@library_command(panel_group, "import", lists=True)
@click.argument("export_file", type=READABLE)
def panel_import(library: Any, export_file: str, as_json: bool) -> None:
    """Import a panel file: every member checked against its own hash, the panel against its hash, then frozen
    here under its name (a file whose members or rule were changed is refused, nothing stored). A server URL in a
    member is ignored with a warning, as `geval prompts import` does.

    \b
    Examples:
      geval panel import trio.json
      geval panel import - --json < trio.json
    """
    from ..files.prompt_files import parse_json
    from ..prompts import canonical_hash
    from ..run.panel import freeze_panel

    data = parse_json(read_input(export_file), "panel file", export_file)
    if (
        not isinstance(data, dict)
        or data.get("kind") != PANEL_KIND
        or not isinstance(data.get("members"), list)
    ):
        raise InputError(
            f"not a panel file: expected kind {PANEL_KIND!r} and a list of members", file=export_file
        )
    loaded = _members(data["members"], export_file)
    ids = [m.prompt.id for m in loaded]
    if canonical_hash({"members": ids, "rule": data.get("rule")}) != data.get("id"):
        raise InputError(
            "the panel's members or rule do not match its hash: the file was changed after export; "
            "nothing was imported",
            file=export_file,
            field="id",
        )
    with library.transaction():  # all members and the panel, or nothing
        # freeze, not import_checked: its note compares each member with every version of its name (quadratic
        # in a large panel of one name), and a panel import shows no note.
        frozen = [library.freeze(m.prompt.dimension, name=m.prompt.name) for m in loaded]
        prompts = [result.prompt for result in frozen]
        panel, created = freeze_panel(library, str(data.get("name") or "panel"), prompts, data["rule"])
    # What `prompts import` says of each: what the file had that was ignored, the checks' warnings on new content.
    said = [
        f"member {n}: {warning}"
        for n, (member, result) in enumerate(zip(loaded, frozen, strict=True), 1)
        for warning in [*member.warnings, *(result.warnings if result.created else [])]
    ]
    for warning in said:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(_panel_json(panel, created=created, warnings=said))
        return
    click.echo(
        f"{'imported' if created else 'already here:'} panel {panel.label} ({panel.id[:12]}) with "
        f"{len(prompts)} members"
    )


def _members(members: list[Any], source: str) -> list[Any]:
    """Each member of a panel file opened as a checked prompt export; a repeated member is refused by number."""
    from ..files.prompt_files import open_export

    loaded: list[Any] = []
    first: dict[str, int] = {}
    for n, member in enumerate(members, 1):
        if not isinstance(member, dict):
            raise InputError(f"member {n} is not a prompt export", file=source, field="members")
        try:
            loaded.append(open_export(member))
        except GEvalError as exc:
            raise InputError(f"member {n}: {exc}", file=source, field="members") from None
        seen = first.setdefault(loaded[-1].prompt.id, n)
        if seen != n:  # said here: the panel's own check would say "needs two different prompts" of 2 kinds
            raise InputError(
                f"member {n} repeats member {seen} (prompt {loaded[-1].prompt.id[:12]}): a panel's "
                "members are different prompts; nothing was imported",
                file=source,
                field="members",
            )
    return loaded
