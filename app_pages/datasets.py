"""Datasets page: golden datasets and their versions; upload CSV/JSONL with a field mapping."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from workbench_ui import cached_reads, safe_text, state, upload

K = "ds_"


def versions_table(lib) -> dict | None:
    """Every dataset version; returns the one picked for browsing."""
    rows = lib.list_datasets()
    if not rows:
        st.info("No dataset yet: upload one below.")
        return None
    st.dataframe(pd.DataFrame([{
        "dataset": r["label"], "items": r["item_count"], "input fields": ", ".join(r["fields"]),
        "human ratings": ", ".join(r["human"]), "source": r.get("source"), "created": r["created_at"],
        "hash": r["id"][:12]} for r in rows]), hide_index=True)
    labels = {r["label"]: r for r in rows}
    return labels[st.selectbox("Browse items of", list(labels), key=K + "browse")]


def items_table(dataset: dict) -> None:
    """The items of one version: id, group, fields and human ratings (text shown as data, not markup)."""
    items = cached_reads.dataset_items(dataset["id"])
    frame = pd.DataFrame([{"id": i.id, "group": i.group, **i.fields,
                           **{f"human.{k}": v for k, v in i.human.items()}} for i in items])
    st.caption(f"{len(items)} items; the dataset version is immutable (hash {dataset['id'][:12]}).")
    st.dataframe(frame, hide_index=True, height=320)


def mapping_form(cols: list[str], stem: str):
    """Name, id, group, input fields and human ratings: returns (name, DatasetMapping)."""
    from prompt_library.datasets import DatasetMapping

    name = st.text_input("Dataset name", value=stem, key=K + "name")
    c1, c2 = st.columns(2)
    id_col = c1.selectbox("Item id column", cols, index=cols.index(upload.guess_id(cols)), key=K + "id")
    groups = ["(none)", *cols]
    guess = upload.guess_group(cols)
    group = c2.selectbox("Group column (e.g. doc_id, for group-level agreement)", groups,
                         index=groups.index(guess) if guess else 0, key=K + "group")
    st.caption("Input fields: name each one as the prompts expect it (e.g. document, summary).")
    inputs = renamed(cols, "Input columns", K + "inputs")
    st.caption("Human ratings: name each one as the dimension it rates (e.g. coherence).")
    human = renamed(cols, "Human rating columns (optional)", K + "human")
    mapping = DatasetMapping(id=id_col, inputs=inputs, human=human, group=None if group == "(none)" else group)
    return name.strip(), mapping


def renamed(cols: list[str], label: str, key: str) -> dict[str, str]:
    """Pick columns and give each a field name: {name: column}."""
    picked = st.multiselect(label, cols, key=key)
    out: dict[str, str] = {}
    for col in picked:
        # A widget label renders Markdown; the column name comes from the uploaded file.
        name = st.text_input(f"name for column {safe_text.md_escape(repr(col))}", value=upload.field_name(col),
                             key=f"{key}_{col}")
        out[name.strip() or upload.field_name(col)] = col
    return out


def upload_section(lib) -> None:
    """Upload a file, map its fields, preview the items, import as a new immutable version."""
    st.subheader("Upload a dataset (CSV or JSONL)")
    file = st.file_uploader("CSV or JSONL file", type=["csv", "jsonl", "ndjson"], key=K + "file")
    if file is None:
        return
    from prompt_library.datasets import read_items

    path = upload.save_upload(file.name, file.getvalue())
    rows = upload.first_rows(path)
    cols = upload.columns(rows)
    st.caption(f"First rows of {safe_text.md_escape(file.name)} as read:")
    st.dataframe(pd.json_normalize(rows[:20]).astype(str), hide_index=True, height=200)
    name, mapping = mapping_form(cols, file.name.rsplit(".", 1)[0])
    if not mapping.inputs:
        st.info("Choose at least one input column.")
        return
    items = read_items(path, mapping)  # every row: a bad one stops here with file, line and reason
    st.caption(f"Preview: {len(items)} items as they will be stored")
    st.dataframe(pd.DataFrame([{"id": i.id, "group": i.group, **i.fields, **i.human} for i in items[:50]]),
                 hide_index=True, height=240)
    if st.button("Import", type="primary", key=K + "import"):
        result = lib.import_items(name, items, source=file.name, mapping=mapping)
        verb = "Imported as" if result["created"] else "Identical content already stored as"
        st.success(f"{verb} {safe_text.md_escape(result['label'])} ({result['item_count']} items).")
        missing = {k: n for k, n in result.get("human_missing", {}).items() if n}
        if missing:
            st.info(safe_text.md_escape("Items without a rating (null or empty, imported as missing): "
                                        + ", ".join(f"{k} {n}" for k, n in missing.items())))


def main() -> None:
    """The Datasets page."""
    st.title("Datasets")
    lib = state.library()
    picked = versions_table(lib)
    if picked is not None:
        items_table(picked)
    safe_text.guarded(lambda: upload_section(lib))


safe_text.guarded(main)
