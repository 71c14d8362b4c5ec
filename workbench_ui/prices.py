"""The price table editor: USD per million tokens, stored in the library setting "prices"."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from geval_core.errors import ConfigError
from geval_core.providers.registry import find_spec
from geval_core.run.cost import DEFAULT_PRICES
from geval_core.types import JudgeSettings
from workbench_ui import safe_text

KEY = "score_prices"
COLUMNS = ["judge", "input", "cached_input", "output"]


def price_frame(table: dict[str, dict[str, float]], settings: JudgeSettings | None = None) -> pd.DataFrame:
    """One row per priced judge; the chosen judge first, with empty prices when it is not listed."""
    rows = [
        {"judge": k, "input": v["input"], "cached_input": v.get("cached_input"), "output": v["output"]}
        for k, v in sorted(table.items())
    ]
    spec = find_spec(settings.provider) if settings is not None else None
    current = settings.judge_id if settings is not None and not (spec and spec.free) else None
    if current and current not in table:
        rows.insert(0, {"judge": current, "input": None, "cached_input": None, "output": None})
    return pd.DataFrame(rows, columns=COLUMNS)


def _price(value: object, judge: str, column: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if math.isnan(number) or number < 0:
        raise ConfigError(f"price of {judge}: {column} must be a number of USD per million tokens, 0 or more")
    return number


def table_from_frame(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """The edited rows as a price table; rows without a judge or without any price are left out."""
    table: dict[str, dict[str, float]] = {}
    for row in frame.to_dict("records"):
        judge = str(row.get("judge") or "").strip()
        if not judge or all(pd.isna(row.get(c)) for c in ("input", "output")):
            continue
        if ":" not in judge:
            raise ConfigError(f"price row {judge!r}: name the judge as provider:model, e.g. openai:gpt-4o")
        table[judge] = {c: _price(row.get(c), judge, c) for c in ("input", "output")}
        if not pd.isna(row.get("cached_input")):  # optional: without it cached tokens cost the input rate
            table[judge]["cached_input"] = _price(row.get("cached_input"), judge, "cached_input")
    return table


def overrides(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The entries that differ from the built-in table: what the library setting stores."""
    return {k: v for k, v in table.items() if DEFAULT_PRICES.get(k) != v}


def price_editor(lib, settings: JudgeSettings, table: dict[str, dict[str, float]]) -> None:
    """Edit the price table (load_prices) the cost estimate and the run's cost use; saved to the library on request."""
    ss = st.session_state
    version = ss.setdefault(KEY + "_version", 0)  # a new editor after a save: its edits are stored now
    with st.expander("Price table (USD per million tokens; edit and save)"):
        if ss.pop(KEY + "_saved", False):
            st.success("Prices saved to the library.")
        st.caption(
            "Built-in prices date from the time of writing; providers change them. Saved prices go "
            "into this library file and override the built-in ones ($GEVAL_PRICES wins over both)."
        )
        edited = st.data_editor(
            price_frame(table, settings),
            key=f"{KEY}_{version}",
            hide_index=True,
            num_rows="dynamic",
            width="stretch",
            column_config={
                "input": st.column_config.NumberColumn(min_value=0.0),
                "cached_input": st.column_config.NumberColumn(
                    "cached input",
                    min_value=0.0,
                    help="input read from the provider's prompt cache; empty: "
                    "priced as input, the cost an upper bound",
                ),
                "output": st.column_config.NumberColumn(min_value=0.0),
            },
        )
        if st.button("Save prices", key=KEY + "_save"):
            try:
                table = table_from_frame(edited)
            except ConfigError as exc:
                st.error(safe_text.md_escape(exc))
                return
            lib.set_setting("prices", overrides(table))
            ss[KEY + "_version"], ss[KEY + "_saved"] = version + 1, True
            st.rerun()
