"""`geval datasets`: golden datasets as immutable versions (list, import, show)."""

from __future__ import annotations

import click

from prompt_library import DatasetMapping, Library

from .common import (
    READABLE,
    complete_dataset_name,
    echo_json,
    input_path,
    library_command,
    pairs,
    table,
    visible,
)


@click.group("datasets")
def datasets() -> None:
    """Golden datasets (immutable versions): list, import, show.

    \b
    Examples:
      geval datasets import data.jsonl --name golden --input document=source --input summary=output
      geval datasets list
      geval datasets show golden --items 3
    """


@library_command(datasets, "list", lists=True)
@click.option(
    "--archived", is_flag=True, help="Also list archived versions (hidden by default, never deleted)."
)
def datasets_list(library: Library, as_json: bool, archived: bool) -> None:
    """List dataset versions.

    \b
    Examples:
      geval datasets list
      geval datasets list --archived --json
    """
    rows = visible([d.as_dict() for d in library.list_datasets()], library.archived_ids("dataset"), archived)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        row["id"], row["fields"], row["human"] = (
            row["id"][:12],
            ", ".join(row["fields"]),
            ", ".join(row["human"]),
        )
    table(rows, ["label", "id", "item_count", "fields", "human", "created_at"])


@library_command(datasets, "import", lists=True)
@click.argument("path", type=READABLE)
@click.option("--name", required=True, help="Dataset name; re-importing the same content reuses its version.")
@click.option("--id", "id_field", default="id", show_default=True, help="Item id field (dotted path).")
@click.option(
    "--input",
    "inputs",
    multiple=True,
    required=True,
    help="Input field as NAME=PATH, e.g. document=source (repeat for each field).",
)
@click.option(
    "--human",
    "human",
    multiple=True,
    help="Human rating as NAME=PATH, e.g. coherence=scores.coherence (repeatable); per-rater columns "
    "NAME.0=PATH, NAME.1=PATH, ... without NAME also give NAME, their mean.",
)
@click.option("--group", default=None, help="Group field, e.g. doc_id (for summary-level agreement).")
@click.option(
    "--test-use",
    "test_use",
    metavar="PROMPT",
    default=None,
    help="Items whose text is on a split dataset's sealed test side are refused; with this, they are "
    "imported and the import is recorded as a use of that test side for PROMPT.",
)
def datasets_import(
    library: Library,
    path: str,
    name: str,
    id_field: str,
    inputs: tuple[str, ...],
    human: tuple[str, ...],
    group: str | None,
    test_use: str | None,
    as_json: bool,
) -> None:
    """Import a CSV or JSONL file (- reads JSON lines from stdin) as a new dataset version; a bad row stops it
    and nothing is written. Items of a sealed test side (the same text, spaces and case aside) are refused.

    \b
    Examples:
      geval datasets import data.jsonl --name golden --input document=source --input summary=output \\
          --human coherence=scores.coherence --group doc_id
      geval datasets import - --name pasted --id key --input summary=text --json < rows.jsonl
    """
    mapping = DatasetMapping(
        id=id_field, inputs=pairs(inputs, "--input"), human=pairs(human, "--human"), group=group
    )
    library.bound_page_cache()  # the rows are written once and not read back: memory stays flat in the file's size
    with input_path(path, "stdin.jsonl") as readable:
        row = library.import_dataset(readable, name, mapping, test_use=test_use)
    if as_json:
        echo_json(row)
        return
    verb = "imported" if row["created"] else "same content already stored as"
    click.echo(f"{verb} {row['label']} ({row['item_count']} items, {row['id'][:12]})")
    for rating, count in row.get("human_missing", {}).items():
        if count:
            click.echo(f"{rating}: {count} items without a rating (null, empty or N/A: imported as missing)")


@library_command(datasets, "show", lists=True)
@click.argument("dataset", shell_complete=complete_dataset_name)
@click.option(
    "--items",
    "limit",
    default=5,
    show_default=True,
    type=click.IntRange(0),
    help="How many items to print (0: none).",
)
def datasets_show(library: Library, dataset: str, as_json: bool, limit: int) -> None:
    """Show a dataset version (name, name@version or id) and its first items (of a split version: of its dev
    side, the test side's ratings are sealed).

    \b
    Examples:
      geval datasets show golden
      geval datasets show golden@2 --items 0 --json
    """
    from ..run.splits import sealed_view

    row = library.get_dataset(dataset)
    view, scope = sealed_view(library, row.id)
    every = view.dataset_items(row.id)
    items, sealed = every[:limit], row.item_count - len(every)
    if as_json:
        split = {"side": scope["side"], "sealed": sealed} if scope["side"] else {}
        echo_json(
            {
                **row.as_dict(),
                **split,
                "items": [
                    {"id": i.id, "fields": i.fields, "human": i.human, "group": i.group} for i in items
                ],
            }
        )
        return
    if sealed:
        click.echo(
            f"split {scope['split'][:12]}: the items below are of the dev side; the {sealed} of the sealed "
            "test side are not shown",
            err=True,
        )
    click.echo(
        f"{row.label}  {row.id}\n{row.item_count} items from {row.source}, "
        f"created {row.created_at}\nfields: {', '.join(row.fields)}\n"
        f"human ratings: {', '.join(row.human) or 'none'}"
    )
    for item in items:
        preview = " | ".join(f"{k}: {v[:60]!r}" for k, v in item.fields.items())
        click.echo(f"- {item.id} [{item.group or '-'}] {item.human} {preview}")
