"""The README's table of OpenAI-compatible servers is the presets the sidebar offers (one source of truth)."""

from __future__ import annotations

import re

from app_support import ROOT

from geval_core.providers.capabilities import PRESETS, preset_summary, presets_table


def test_readme_table_is_generated_from_the_presets():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- presets:[^>]*-->\n(.*?)\n<!-- /presets -->", readme, re.S)
    assert found, "README.md lost its <!-- presets --> block"
    assert found.group(1) == presets_table(), (
        "README.md's server table differs from capabilities.PRESETS: paste the output of "
        "`python -c 'from geval_core.providers.capabilities import presets_table; print(presets_table())'`"
    )
    for preset in PRESETS.values():
        assert f"| {preset.name} | `{preset.base_url}` |" in found.group(1)


def test_preset_summary_says_what_the_server_returns():
    assert preset_summary(PRESETS["vllm"]) == (
        "vLLM: log-probabilities yes (top_logprobs up to --max-logprobs, "
        "default 20); top_logprobs at most 20; n honoured."
    )
    assert preset_summary(PRESETS["lm-studio"]).endswith(
        "top_logprobs none; n ignored (one request per reply)."
    )
