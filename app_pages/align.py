"""Align page: tune a prompt with people on the dev side of a split dataset, then evaluate a frozen candidate once
on the sealed test side, with the interval widened for every candidate evaluated there."""

from __future__ import annotations

import streamlit as st

from workbench_ui import align_view, live, people, run_plans, safe_text, sealing, state

K = align_view.K


def pick(lib):
    """(base prompt, split dataset, human rating) or None, with a way to split a dataset here."""
    from geval_core.run.splits import has_split

    prompts = {f"{p['name']}@{p['version']}": p for p in lib.list_prompts()}
    datasets = lib.list_datasets()
    split = {d.label: d for d in datasets if has_split(lib, d.id)}
    if not prompts:
        st.info("Freeze a prompt on the Design page first.")
        return None
    if not split:
        st.info("Aligning needs a dataset split into a dev side (for tuning) and a sealed test side.")
        unsplit = {d.label: d for d in datasets if d.human}
        if unsplit:
            label = st.selectbox("Dataset to split", list(unsplit), key=K + "to_split")
            sealing.split_panel(lib, unsplit[label], K + "split_")
        return None
    c1, c2, c3 = st.columns(3)
    state.keep_choice(K + "base", list(prompts))
    base = lib.get_prompt(state.kept(K + "base", c1.selectbox("Base prompt", list(prompts), key=K + "base")))
    dataset = split[c2.selectbox("Split dataset", list(split), key=K + "dataset")]
    humans = list(dataset.human) or [base.dimension.name.lower()]
    default = base.dimension.name.lower()
    human = c3.selectbox(
        "Human rating",
        humans,
        index=humans.index(default) if default in humans else 0,
        key=K + "human",
        help=people.RULE,
    )
    people.unsaved_notice(lib, dataset.id, human)
    return base, dataset, human


def dev_run(lib, prompt, dataset, ids: set[str], label: str, judge_for):
    """The prompt's finished run on the dev side with this page's judge, else a button that starts one (None
    meanwhile)."""
    from geval_core.diagnostics.align import side_run

    planned = judge_for(prompt)
    run = side_run(lib, prompt.id, dataset.id, ids, planned.settings)
    if run is not None:
        return run
    going = [r for r in lib.list_runs(prompt=prompt.id, dataset=dataset.id) if live.is_live(lib, r.id)]
    if going:
        live.attach(lib, going[0].id)
        return None
    if st.button(
        f"Score {label} {prompt.label} on the dev side ({len(ids)} items)", key=f"{K}dev_{prompt.id}"
    ):
        align_view.start_side_run(lib, prompt, dataset, ids, planned, "dev")
        st.rerun()
    return None


def judges_caption(report: dict) -> None:
    """Both runs' judges, and the caution when they differ (the difference is then the judge's as well)."""
    st.caption(safe_text.md_escape(f"Judges: {report['judges'][0]} → {report['judges'][1]}"))
    if report.get("different_judges"):
        st.warning(safe_text.md_escape(report["different_judges"].capitalize()))


def compare_on_dev(lib, base, base_run, dataset, human: str, judge_for) -> None:
    """Every other version of the base's name against the base, on dev, with paired intervals."""
    from geval_core.diagnostics.compare import compare_runs
    from geval_core.run.splits import evaluation_ids

    st.header("Candidates against the base (dev side, the same items, groups resampled)")
    others = [p for p in lib.prompt_versions(base.name) if p.id != base.id]
    if not others:
        st.info("Freeze a candidate above to compare it with the base.")
    for cand in others:
        examples = base.dimension.example_ids | cand.dimension.example_ids
        ids, scope = evaluation_ids(lib, dataset.id, "dev", examples)
        if ids is None:  # pick() offers split datasets only: a split always has a dev side
            continue
        run = dev_run(lib, cand, dataset, ids, "candidate", judge_for)
        if run is None:
            continue
        report = compare_runs(lib, base_run.id, run.id, human, only=ids)
        st.subheader(f"{base.label} → {cand.label}")
        judges_caption(report)
        st.caption(
            safe_text.md_escape(
                f"{report['items']} dev items in {report['groups']} groups"
                + (
                    f"; {scope['examples_left_out']} example items left out"
                    if scope["examples_left_out"]
                    else ""
                )
            )
        )
        st.dataframe(align_view.comparison_table(report), hide_index=True)
        if report.get("withheld"):
            st.warning(safe_text.md_escape(f"Interval withheld: {report['withheld']}"))


def test_section(lib, base, dataset, human: str, judge_for) -> None:
    """Evaluate a frozen candidate on the sealed test side (recorded), and the report with its corrected interval."""
    from geval_core.diagnostics.align import align_report, side_run
    from geval_core.run.splits import get_split, record_test_use, sealed_uses

    st.header("The sealed test side: once per candidate")
    split = get_split(lib, dataset.id)
    uses = sealed_uses(lib, split)
    evaluated = {u["prompt_id"] for u in uses}
    st.caption(
        f"{len(evaluated)} prompt{'' if len(evaluated) == 1 else 's'} evaluated on this test side so far, "
        f"{len(uses)} look{'' if len(uses) == 1 else 's'} in all. Each "
        "candidate evaluated there widens the corrected interval (Bonferroni over the candidates)."
    )
    versions = {p.label: p for p in lib.prompt_versions(base.name)}
    cand = versions[st.selectbox("Candidate to evaluate", list(versions), key=K + "test_candidate")]
    for prompt in ({base.id: base, cand.id: cand}).values():
        test = set(split["test"]) - prompt.dimension.example_ids
        run = side_run(lib, prompt.id, dataset.id, test, judge_for(prompt).settings)
        if prompt.id in evaluated and run is not None:
            continue
        if st.button(f"Evaluate {prompt.label} on the test set (recorded)", key=f"{K}test_{prompt.id}"):
            if run:  # scored already: the look is recorded all the same
                record_test_use(lib, split, prompt.id, run.id)
            else:  # the plan records the use as the run is recorded
                align_view.start_side_run(lib, prompt, dataset, test, judge_for(prompt), "test")
            st.rerun()
    if cand.id == base.id or not {base.id, cand.id} <= evaluated:
        return
    try:
        report = align_report(lib, base.id, cand.id, dataset.id, human)
    except Exception as exc:  # a test run still going: said, not raised
        st.info(safe_text.md_escape(str(exc)))
        return
    judges_caption(report)
    st.dataframe(align_view.comparison_table(report, corrected=True), hide_index=True)
    st.caption(
        safe_text.md_escape(
            f"{report['items']} test items in {report['groups']} groups; {report['candidates_evaluated']} "
            f"candidate{'' if report['candidates_evaluated'] == 1 else 's'} evaluated on this test side "
            f"({report['test_looks']} looks): the corrected interval is at "
            f"{report['corrected_level']:.2%}; Holm-adjusted p ({report['holm_figure']}): "
            f"{safe_text.fmt(report['holm_p'], 4)}."
        )
    )


def main() -> None:
    """The Align page."""
    from geval_core.run.splits import evaluation_ids

    st.title("Align")
    lib = state.library()
    picked = pick(lib)
    if picked is None:
        return
    base, dataset, human = picked
    dev, scope = evaluation_ids(lib, dataset.id, "dev", base.dimension.example_ids)
    if dev is None:  # pick() offers split datasets only: a split always has a dev side
        return
    st.caption(
        safe_text.md_escape(
            f"Dev side of split {scope['split'][:12]}: {len(dev)} items. The sealed test "
            "side is used only below, once per candidate, and every use is recorded."
        )
    )
    judge_for = align_view.judge_picker(lib)
    run_plans.show_judge(judge_for(base))
    run = dev_run(lib, base, dataset, dev, "the base", judge_for)
    if run is None:
        return
    rows = align_view.disputed_section(lib, run, base, human, dev)
    align_view.suggest_section(lib, base, rows)
    align_view.candidate_section(lib, base, dataset, dev, human)
    compare_on_dev(lib, base, run, dataset, human, judge_for)
    test_section(lib, base, dataset, human, judge_for)


safe_text.guarded(main)
