"""Datasets page: golden datasets and their versions (archive, restore); upload CSV/JSONL/JSON with a field mapping."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from geval_core.errors import InputError
from geval_core.records import Dataset
from workbench_ui import archive_view, cached_reads, next_link, safe_text, sealing, state, upload

K = "ds_"


def versions_table(lib) -> Dataset | None:
    """Every dataset version not archived; returns the one picked for browsing."""
    every = lib.list_datasets()
    rows = archive_view.visible(lib, "dataset", every)
    archive_view.panel(lib, "dataset", {r.id: f"{r.label} · {r.id[:12]}" for r in every})
    if not rows:
        st.info("No dataset yet: upload one below.")
        return None
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "dataset": r.label,
                    "items": r.item_count,
                    "input fields": ", ".join(r.fields),
                    "human ratings": ", ".join(r.human),
                    "source": r.source,
                    "created": r.created_at,
                    "hash": r.id[:12],
                }
                for r in rows
            ]
        ),
        hide_index=True,
    )
    labels = {r.label: r for r in rows}
    return labels[st.selectbox("Browse items of", list(labels), key=K + "browse")]


def items_table(dataset: Dataset) -> None:
    """The items of one version: id, group, fields and human ratings (text shown as data, not markup)."""
    items = cached_reads.dataset_items(dataset.id)
    frame = pd.DataFrame(
        [
            {"id": i.id, "group": i.group, **i.fields, **{f"human.{k}": v for k, v in i.human.items()}}
            for i in items
        ]
    )
    st.caption(f"{len(items)} items; the dataset version is immutable (hash {dataset.id[:12]}).")
    st.dataframe(frame, hide_index=True, height=320)


def mapping_form(cols: list[str], stem: str, tag: str):
    """Name, id, group, input fields and human ratings: returns (name, DatasetMapping).

    Every key carries the upload's tag, so a new file starts from its own name and a fresh mapping.
    """
    from prompt_library.datasets import DatasetMapping

    key = f"{K}{tag}_"
    name = st.text_input("Dataset name", value=stem, key=key + "name")
    c1, c2 = st.columns(2)
    id_col = c1.selectbox("Item id column", cols, index=cols.index(upload.guess_id(cols)), key=key + "id")
    groups = ["(none)", *cols]
    guess = upload.guess_group(cols)
    group = c2.selectbox(
        "Group column (e.g. doc_id, for group-level agreement)",
        groups,
        index=groups.index(guess) if guess else 0,
        key=key + "group",
    )
    st.caption("Input fields: name each one as the prompts expect it (e.g. document, summary).")
    known = sorted({i for p in state.library().list_prompts() for i in p.get("inputs") or []})
    inputs = renamed(cols, "Input columns", key + "inputs", preselect=upload.guess_inputs(cols, known))
    st.caption("Human ratings: name each one as the dimension it rates (e.g. coherence).")
    dimensions = sorted({p["name"] for p in state.library().list_prompts()})
    human = renamed(
        cols,
        "Human rating columns (optional)",
        key + "human",
        default=lambda col: upload.rating_name(col, dimensions),
    )
    mapping = DatasetMapping(
        id=id_col, inputs=inputs, human=human, group=None if group == "(none)" else group
    )
    return name.strip(), mapping


def renamed(
    cols: list[str], label: str, key: str, default=upload.field_name, preselect: list[str] | None = None
) -> dict[str, str]:
    """Pick columns (`preselect` chosen at first) and give each a field name: {name: column}."""
    picked = st.multiselect(label, cols, default=preselect or None, key=key)
    out: dict[str, str] = {}
    for col in picked:
        # The column name comes from the uploaded file: shown escaped above the box, and given to the box as
        # its plain (hidden) label, so a screen reader hears the name, not its Markdown escapes.
        text = f"name for column {col!r}"
        st.caption(safe_text.md_escape(text))
        name = st.text_input(text, value=default(col), key=f"{key}_{col}", label_visibility="collapsed")
        out[name.strip() or default(col)] = col
    return out


def upload_section(lib) -> None:
    """Upload a file, map its fields, preview the items, import as a new immutable version."""
    st.subheader("Upload a dataset (CSV, JSONL or a JSON array)")
    file = st.file_uploader(
        "CSV, JSONL or JSON file", type=["csv", "tsv", "jsonl", "ndjson", "json"], key=K + "file"
    )
    if file is None:
        said()
        return
    data = file.getvalue()
    path = upload.save_upload(file.name, data)
    try:
        mapped(lib, file.name, path, upload.tag(file.name, data))
    except InputError as exc:  # the message names the uploaded file, never the temporary copy
        raise upload.renamed_error(exc, path, file.name) from None


def said() -> None:
    """What the last import did, after its rerun, where the eye is: under the Import button, with the next step."""
    told = st.session_state.pop(K + "said", [])
    for level, text in told:
        getattr(st, level)(safe_text.md_escape(text))
    if any(level == "success" for level, _ in told):
        next_link.show(state.library())


def mapped(lib, name: str, path, tag: str) -> None:
    """The rows of one upload as read, the mapping form, the items preview and the import button."""
    from prompt_library.datasets import read_items

    rows = upload.first_rows(path)
    cols = upload.columns(rows)
    st.caption(f"First rows of {safe_text.md_escape(name)} as read:")
    st.dataframe(pd.json_normalize(rows[:20]).astype(str), hide_index=True, height=200)
    dataset, mapping = mapping_form(cols, name.rsplit(".", 1)[0], tag)
    if not mapping.inputs:
        st.info("Choose at least one input column.")
        said()
        return
    items = read_items(path, mapping)  # every row: a bad one stops here with file, line and reason
    st.caption(f"Preview: {len(items)} items as they will be stored")
    st.dataframe(
        pd.DataFrame([{"id": i.id, "group": i.group, **i.fields, **i.human} for i in items[:50]]),
        hide_index=True,
        height=240,
    )
    if st.button("Import", type="primary", key=K + "import"):
        result = lib.import_items(dataset, items, source=name, mapping=mapping)
        st.session_state[K + "said"] = import_messages(result, name)
        st.rerun()  # draw the versions table again, with the new version in it
    said()


def import_messages(result: dict, name: str) -> list[tuple[str, str]]:
    """What an import did, as (level, text) messages shown after the page is drawn again."""
    verb = "Imported" if result["created"] else "Identical content already stored:"
    said = [("success", f"{verb} {name} as {result['label']} ({result['item_count']} items).")]
    missing = {k: n for k, n in result.get("human_missing", {}).items() if n}
    if missing:
        said.append(
            (
                "info",
                "Items without a rating (null, empty or N/A, imported as missing): "
                + ", ".join(f"{k} {n}" for k, n in missing.items()),
            )
        )
    return said


def main() -> None:
    """The Datasets page."""
    st.title("Datasets")
    lib = state.library()
    picked = versions_table(lib)
    if picked is not None:
        items_table(picked)
        sealing.split_panel(lib, picked)
    safe_text.guarded(lambda: upload_section(lib))


safe_text.guarded(main)
