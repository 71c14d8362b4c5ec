"""The Score page's cascade section, with a guarantee: the cheap judge's threshold chosen on items people rated so
that, with probability at least 1 - delta, it agrees with them at the target rate on the items it keeps
(diagnostics.escalate); frozen with its target, delta and calibration; and, when such a cascade scores new data,
the share kept beside the calibration's and what the guarantee does and does not cover."""

from __future__ import annotations

from typing import Any

import streamlit as st

from geval_core.records import Run
from workbench_ui import cached_reads, live, people, safe_text

K = "cg_"
SIGNAL_HELP = (
    "How the cheap judgment's unsureness is read (lower: surer); items without a cheap score always go "
    "to the strong judge."
)


def calibration_runs(lib) -> list[Run]:
    """Finished runs on datasets with human ratings: what a guaranteed threshold can be chosen on."""
    humans = {d.id for d in lib.list_datasets() if d.human}
    return [r for r in lib.list_runs() if r.dataset_id in humans and live.finished(r) and r.status == "done"]


def calibrate(lib) -> None:
    """A cheap run, a target and delta; the threshold the tests choose; freeze it with its guarantee."""
    from geval_core.diagnostics.cascade import SIGNALS
    from geval_core.diagnostics.escalate import calibrate_guarantee

    st.subheader("Calibrate with a guarantee")
    st.caption(
        "Chooses the cheap judge's threshold by testing thresholds, surest first, on the items people rated "
        "(Trust or Escalate, ICLR 2025): with probability at least 1 − δ, the cheap judge agrees with people "
        "at the target rate on the items it keeps. Only the cheap judge's run is needed."
    )
    runs = {r.id: r for r in calibration_runs(lib)}
    if not runs:
        st.info(
            "To calibrate with a guarantee, a finished run of the cheap prompt on a dataset with human ratings."
        )
        return
    c1, c2, c3 = st.columns([3, 1, 1])
    run_id = c1.selectbox(
        "Cheap judge's run", list(runs), format_func=lambda r: cached_reads.run_title(runs[r]), key=K + "run"
    )
    human = c2.selectbox(
        "Human rating",
        list(lib.get_dataset(runs[run_id].dataset_id).human),
        key=K + "human",
        help=people.RULE,
    )
    people.unsaved_notice(lib, runs[run_id].dataset_id, human)
    signal = c3.selectbox("Unsureness signal", SIGNALS, key=K + "signal", help=SIGNAL_HELP)
    c4, c5, c6 = st.columns(3)
    target = c4.number_input("Target agreement on kept items", 0.5, 0.99, 0.8, 0.01, key=K + "target")
    delta = c5.number_input(
        "δ (the guarantee fails with at most this chance)", 0.01, 0.5, 0.1, 0.01, key=K + "delta"
    )
    within = c6.number_input(
        "Agreement: score within this of people's rating", 0.0, 4.0, 0.5, 0.25, key=K + "within"
    )
    asked = [run_id, human, signal, target, delta, within]
    if st.button("Choose the threshold", key=K + "choose"):
        st.session_state[K + "chosen"] = {
            "asked": asked,
            "out": calibrate_guarantee(
                cached_reads.CachedLibrary(lib),
                run_id,
                human,
                signal,
                float(target),
                float(delta),
                float(within),
            ),
        }
    chosen = st.session_state.get(K + "chosen")
    if chosen and chosen["asked"] == asked:  # a result of other inputs is not shown as this one's
        show_calibration(chosen["out"])
        if chosen["out"]["threshold"] is not None:
            freeze_form(lib, chosen["out"])


def show_calibration(out: dict[str, Any]) -> None:
    """The threshold chosen, what it keeps on the calibration items, and what the guarantee covers."""
    if out["threshold"] is None:
        st.warning(
            f"No threshold reaches {out['target']:.0%} agreement at δ {out['delta']:g} on these "
            f"{out['items']} items ({out['tested']} tested): every item would go to the strong judge. Rate "
            "more items, lower the target, raise δ or widen the agreement."
        )
        return
    c = st.columns(4)
    c[0].metric(f"{out['signal']} at most", f"{out['threshold']:.4f}")
    c[1].metric(
        "Kept", f"{out['kept']} / {out['items']}", help=f"{out['kept_share']:.1%} of the calibration items"
    )
    c[2].metric(
        "Agreement on kept",
        f"{out['agreement']:.1%}",
        help=f"{out['agreement'] * out['kept']:.0f} of {out['kept']} within {out['within']:g}",
    )
    c[3].metric(
        f"At least (prob. {1 - out['delta']:.0%})",
        f"{out['lower_bound']:.1%}",
        help="One-sided exact (Clopper-Pearson) bound on the kept calibration items.",
    )
    guarantee_text(out["covers"], out["does_not_cover"])


def guarantee_text(covers: str, does_not_cover: list[str]) -> None:
    """What the guarantee covers, and the list of what it does not."""
    st.markdown(safe_text.md_escape("Covers: " + covers))
    st.markdown("Does not cover:\n" + "\n".join(f"- {safe_text.md_escape(n)}" for n in does_not_cover))


def freeze_form(lib, out: dict[str, Any]) -> None:
    """The strong judge's prompt and a name; freeze the cascade at the guaranteed threshold."""
    from geval_core.diagnostics.escalate import freeze_guaranteed

    cheap = lib.get_prompt(out["calibration"]["prompt"])
    scale = f"{cheap.dimension.scale.min}-{cheap.dimension.scale.max}"
    strong = [p["label"] for p in lib.list_prompts() if p["id"] != cheap.id and p["scale"] == scale]
    if not strong:
        st.info(
            "To freeze, a second frozen prompt on the same scale: the strong judge the unsure items go to."
        )
        return
    c1, c2 = st.columns([3, 1])
    pick = c1.selectbox("Strong judge's prompt", strong, key=K + "strong")
    name = c2.text_input("Cascade name", value="guaranteed", key=K + "name")
    if st.button("Freeze with the guarantee", key=K + "freeze", disabled=not name.strip()):
        cascade, created = freeze_guaranteed(lib, name.strip(), out, pick)
        st.success(
            safe_text.md_escape(
                f"{'Frozen as' if created else 'Already frozen as'} {cascade['name']}@"
                f"{cascade['version']} ({cascade['id'][:12]}), with its guarantee"
            )
        )


def report(lib, cascade: dict[str, Any], result: dict[str, Any], dataset_id: str) -> None:
    """For a guaranteed cascade's result: the share kept beside the calibration's, people's agreement on the kept
    items where they rated, a caution when the kept share says the data may be drawn otherwise; nothing for a
    cascade without a guarantee."""
    from geval_core.diagnostics.escalate import guarantee_report

    g = cascade.get("guarantee")
    if not g:
        return
    people = (
        lib.human_means(dataset_id, g["human"]) if g["human"] in lib.get_dataset(dataset_id).human else None
    )
    out = guarantee_report(cascade, result, people)
    if out is None:
        return
    st.caption(
        f"Guarantee: at least {out['target']:.0%} agreement with people on the kept items, with probability "
        f"{1 - out['delta']:.0%}."
    )
    c = st.columns(3)
    c[0].metric("Kept by the cheap judge", f"{out['kept']} / {out['items']}", help=f"{out['kept_share']:.1%}")
    c[1].metric(
        "Kept on the calibration",
        f"{out['calibration_kept_share']:.1%}",
        help=f"of {out['calibration_items']} calibration items",
    )
    c[2].metric(
        "People agree on kept (where rated)",
        f"{out['rated_kept_agreement']:.1%}" if "rated_kept" in out else "n/a",
        help=f"{out.get('rated_kept', 0)} kept items rated",
    )
    if out["shift_warning"]:
        st.warning(safe_text.md_escape("Caution: " + out["shift_warning"]))
    guarantee_text(out["covers"], out["does_not_cover"])
