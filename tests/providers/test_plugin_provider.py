"""A provider registered by a plugin (tests/fake_provider_plugin.py, named in GEVAL_PROVIDER_PLUGINS) gets every
provider-dependent check from its spec alone: concurrency, the key, the context window, the batch engines'
refusal, one-token ratings, reasoning models, undated aliases, its own pre-run check, the CLI's --judge, the
sidebar and the README's providers table."""

from __future__ import annotations

import json

import click
import fake_provider_plugin as acme
import pytest
from click.testing import CliRunner
from runner_helpers import dimension, setup_library

from geval_core.cli import cli
from geval_core.cli.common import parse_judge
from geval_core.errors import ConfigError, ContextLengthError, InputError, MissingKeyError
from geval_core.export import score_item
from geval_core.providers import registry
from geval_core.providers.capabilities import (
    NO_LOGPROBS,
    check_dimension,
    model_alias_warnings,
    preflight,
    ratings_single_token,
)
from geval_core.providers.context import context_window
from geval_core.run.batch import prepare_batch
from geval_core.run.batch_engines import submit_batch
from geval_core.types import JudgeSettings, Scale
from workbench_ui import state

ACME = JudgeSettings(provider="acme", model="acme-1-2025-01-01")


@pytest.fixture(autouse=True)
def plugin(monkeypatch):
    """The acme plugin loaded as users load one, into a registry restored when the test ends."""
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    monkeypatch.setenv(registry.PLUGINS_ENV, "fake_provider_plugin")
    registry.load_plugins()
    acme.BUILT.clear()
    assert registry.provider_spec("acme") is acme.SPEC


def test_concurrency_comes_from_the_spec():
    assert registry.default_concurrency(ACME) == 3
    assert registry.allowed_concurrency(ACME, 4) == (4, None)
    lowered, why = registry.allowed_concurrency(ACME, 10)
    assert lowered == 5 and why.startswith("Acme judges takes at most 5 calls in flight")


def test_the_key_is_the_specs_variable(monkeypatch):
    with pytest.raises(MissingKeyError, match="ACME_API_KEY"):
        registry.check_key(ACME)
    assert "ACME_API_KEY" in registry.key_variables() and registry.key_variable("acme") == "ACME_API_KEY"
    monkeypatch.setenv("ACME_API_KEY", "acme-key-0000")
    registry.check_key(ACME)
    assert registry.provider_spec("acme").build(ACME).provider == "acme" and acme.BUILT == [ACME]


def test_its_own_check_runs_before_a_run():
    with pytest.raises(ConfigError, match="acme-broken is withdrawn"):
        registry.check_judge(JudgeSettings(provider="acme", model="acme-broken"), api_key="given")
    registry.check_judge(ACME, api_key="given")


def test_the_context_window_is_the_specs_by_longest_prefix(monkeypatch):
    assert context_window(ACME) == 2048
    assert context_window(JudgeSettings(provider="acme", model="acme-1-long-2025")) == 65_536
    assert context_window(JudgeSettings(provider="acme", model="acme-2")) is None
    prompt = setup_library(":memory:", count=1, judge=ACME)[1]
    monkeypatch.setenv("ACME_API_KEY", "acme-key-0000")
    with pytest.raises(ContextLengthError, match="over the judge's context of 2048 tokens"):
        score_item(prompt, {"document": "word " * 9000, "summary": "Short."})
    assert acme.BUILT  # the judge was made, and never asked: the item is refused before any request


def test_the_batch_engines_refuse_a_provider_without_one(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "batch.db", count=2, judge=ACME)
    with pytest.raises(ConfigError, match=r"not the acme judge's; choose openai:MODEL or gemini:MODEL"):
        submit_batch(library, prompt, dataset["id"], ACME)
    with pytest.raises(
        InputError, match=r"not the acme:acme-1-2025-01-01 judge; choose an openai:MODEL judge"
    ):
        prepare_batch(library, prompt, dataset["id"], ACME, tmp_path / "batch.jsonl")
    assert library.list_runs() == []  # refused before a run was recorded
    library.close()


def test_one_token_ratings_follow_the_specs_tokenizer():
    assert ratings_single_token(ACME, Scale(1, 5)) is True
    assert ratings_single_token(ACME, Scale(1, 6)) is False
    assert ratings_single_token(ACME, Scale(-2, 2)) is False  # the sign is a token of its own
    warned = [
        c
        for c in check_dimension(dimension(ACME, scale=Scale(1, 10), anchors={1: "Bad.", 10: "Good."}))
        if c.field == "scale"
    ]
    assert (
        len(warned) == 1
        and "do not fit in one token for the acme:acme-1-2025-01-01 judge" in warned[0].message
    )
    assert not [c for c in check_dimension(dimension(ACME)) if c.field == "scale"]


def test_reasoning_models_and_aliases_follow_the_spec():
    thinking = JudgeSettings(provider="acme", model="acme-think-1", mode="logprobs")
    assert any(NO_LOGPROBS in p for p in preflight(thinking))
    sampled = JudgeSettings(provider="acme", model="acme-think-1", mode="sampling", n=3, temperature=0.7)
    assert any("takes only the default temperature" in p for p in preflight(sampled))
    assert (
        preflight(
            JudgeSettings(
                provider="acme",
                model="acme-think-1",
                mode="sampling",
                n=3,
                temperature=1.0,
                reasoning_effort="low",
            )
        )
        == []
    )
    refused = preflight(
        JudgeSettings(provider="gemini", model="gemini-2.0-flash-001", reasoning_effort="low")
    )
    assert refused == [
        "reasoning_effort is for OpenAI or Acme judges reasoning models, not gemini:gemini-2.0-flash-001"
    ]
    assert model_alias_warnings(JudgeSettings(provider="acme", model="acme-1"))
    assert model_alias_warnings(ACME) == []


def test_the_cli_scores_with_judge_acme(tmp_path, monkeypatch):
    library, prompt, items, dataset = setup_library(tmp_path / "cli.db", count=3)
    library.close()
    with pytest.raises(click.BadParameter, match="acme:MODEL"):
        parse_judge("acme")  # it needs a model, as its spec says
    assert parse_judge("acme:acme-1") == ("acme", "acme-1")
    args = [
        "score",
        "--prompt",
        prompt.label,
        "--data",
        dataset["label"],
        "--judge",
        "acme:acme-1-2025-01-01",
        "--concurrency",
        "9",
        "--db",
        str(tmp_path / "cli.db"),
        "--quiet",
        "--json",
    ]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code != 0 and "ACME_API_KEY" in refused.output
    monkeypatch.setenv("ACME_API_KEY", "acme-key-0000")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.strip().splitlines()[-1])
    assert (
        out["judge"] == "judge: acme:acme-1-2025-01-01#release=7 in process" and out["scored"] == 3
    )  # it takes no server
    assert "Acme judges takes at most 5 calls in flight" in result.output  # --concurrency 9, lowered
    assert [s.model for s in acme.BUILT] == ["acme-1-2025-01-01#release=7"]


def test_the_sidebar_and_the_readme_table_list_it():
    assert "acme" in state.provider_choices() and state.key_variables("acme") == ("ACME_API_KEY",)
    row = "| Acme judges | `acme:MODEL` | `ACME_API_KEY` | `acme-1-2025-01-01` | 3 (at most 5) | no |"
    assert row in registry.providers_table().splitlines()
    assert "acme:MODEL" in registry.judge_ref_help()


def test_the_model_a_run_records_is_pinned_by_the_spec():
    from geval_core.cli.common import pinned_judge
    from geval_core.run.plan import JudgeChoice, plan_judge

    assert pinned_judge("acme:acme-1") == "acme:acme-1#release=7"
    with pytest.raises(click.BadParameter, match="no acme release acme-missing"):
        pinned_judge("acme:acme-missing")
    planned = plan_judge(JudgeSettings(), JudgeChoice("acme:acme-1"))
    assert (planned.settings.provider, planned.settings.model) == ("acme", "acme-1#release=7")
    bare = plan_judge(JudgeSettings(provider="openai", model="gpt-4o-mini"), JudgeChoice("local"))
    assert bare.settings.model == registry.provider_spec("local").default_model  # `--judge NAME` alone


def test_the_exports_read_the_specs_facts_not_the_provider_name():
    from dataclasses import replace

    import yaml

    from geval_core.providers.exports import export_for_tool
    from geval_core.types import FrozenPrompt

    dim = replace(dimension(), judge=replace(ACME, model="acme-1"))
    prompt = FrozenPrompt(id="0" * 64, name=dim.name, version=1, dimension=dim, created_at="2026-01-01")
    [rubric] = yaml.safe_load(export_for_tool(prompt, "promptfoo"))["assert"]
    assert rubric["provider"]["id"] == "openai:chat:acme-1"  # openai_models: other tools may name it
    assert "model='acme-1'" in export_for_tool(prompt, "deepeval").replace('"', "'")
    grader = json.loads(export_for_tool(prompt, "openai-grader"))
    assert not [line for line in grader["comment"] if "graders API runs OpenAI models" in line]
    assert "the embedded judge" in export_for_tool(
        prompt, "inspect"
    )  # primes_reply: no other tool reaches it
    local = replace(prompt, dimension=replace(dim, judge=JudgeSettings()))
    assert "provider" not in yaml.safe_load(export_for_tool(local, "promptfoo"))["assert"][0]
