"""Before a run on the Score page: what the judge cannot do in these settings, from the documented facts and
its latest test (the sidebar's Test judge or `geval probe`), as the CLI refuses and the Design checks warn."""

from __future__ import annotations

from typing import Any

import streamlit as st

from geval_core.diagnostics.judge_probe import latest_probe
from geval_core.providers.capabilities import preflight, probe_findings
from geval_core.run.plan import takes_server
from geval_core.types import FrozenPrompt, JudgeSettings
from workbench_ui import safe_text


def findings(probe: dict[str, Any] | None, settings: JudgeSettings, prompt: FrozenPrompt) -> list[str]:
    """The probe's warnings that matter for this prompt: a split "10" only when its scale holds 10."""
    if probe and probe.get("split_ratings"):
        points = {str(p) for p in prompt.dimension.scale.points}
        probe = {**probe, "split_ratings": [r for r in probe["split_ratings"] if r in points]}
    return probe_findings(probe, settings)


def before_run(lib, prompt: FrozenPrompt, settings: JudgeSettings) -> bool:
    """Show what stops or weakens a run with this judge; False when it cannot score at all (no run starts)."""
    probe = latest_probe(lib, settings)
    blocking = preflight(settings, probe)
    for problem in blocking:
        st.error(safe_text.md_escape(problem))
    for finding in findings(probe, settings, prompt):
        if not any(finding in b for b in blocking):  # preflight repeats the probe's own sentence
            st.warning(safe_text.md_escape(finding))
    if probe is None:
        where = (
            "on this server" if takes_server(settings.provider) else "in this library"
        )  # a local model has no server
        st.caption(f"This judge was never tested {where}: the sidebar's Test judge measures what it can do.")
    else:
        st.caption(f"This judge's latest test: {safe_text.md_escape(probe.get('probed_at'))}.")
    return not blocking
