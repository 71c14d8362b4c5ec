"""The provider registry drives every list of judges: walked here, spec by spec, against the CLI's --judge,
the sidebar's choices, get_judge and the README's table."""

from __future__ import annotations

import re

import click
import pytest
import scripted_app_judge
from paths import ROOT

from geval_core.cli.common import JUDGE_HELP, parse_judge
from geval_core.errors import ConfigError
from geval_core.providers import get_judge
from geval_core.providers.registry import (
    PLUGINS_ENV,
    ProviderSpec,
    load_plugins,
    providers_table,
    public_names,
    specs,
)
from geval_core.types import JudgeSettings
from workbench_ui import state

FAKE_ENV = {
    "OPENAI_API_KEY": "sk-registry-test",
    "GEMINI_API_KEY": "g-registry-test",
    "GOOGLE_CLOUD_PROJECT": "registry-test",
    "GOOGLE_CLOUD_LOCATION": "us-central1",
}


def test_names_are_unique_and_every_builder_resolves():
    names = [spec.name for spec in specs()]
    assert len(names) == len(set(names)) and {"local", "openai", "gemini", "vertex"} <= set(names)
    for spec in specs():
        factory = spec.builder()  # imports the adapter now, not when the registry loaded
        assert callable(factory) and factory.__name__ == "build", spec.name
        assert 1 <= spec.default_concurrency <= spec.max_concurrency


@pytest.mark.parametrize("spec", [s for s in specs() if s.name != "local"], ids=lambda s: s.name)
def test_get_judge_builds_each_provider_from_its_spec(spec, monkeypatch):
    for name, value in FAKE_ENV.items():
        monkeypatch.setenv(name, value)
    judge = get_judge(JudgeSettings(provider=spec.name, model=spec.default_model))
    assert judge.provider == spec.name and isinstance(judge.primes, bool)


@pytest.mark.parametrize(
    "spec", [s for s in specs() if s.key_variables and s.name != "vertex"], ids=lambda s: s.name
)
def test_a_missing_key_names_the_specs_variables(spec, monkeypatch):
    for name in FAKE_ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError) as caught:
        get_judge(JudgeSettings(provider=spec.name, model=spec.default_model))
    assert all(variable in str(caught.value) for variable in spec.key_variables)


def test_the_cli_takes_and_lists_exactly_the_registry():
    for spec in specs():
        ref = f"{spec.name}:{spec.default_model}" if spec.needs_model else spec.name
        assert parse_judge(ref)[0] == spec.name
        assert (spec.name in JUDGE_HELP) == spec.public
    with pytest.raises(click.BadParameter, match="use local, openai:MODEL, gemini:MODEL, vertex:MODEL"):
        parse_judge("nosuch:model")
    with pytest.raises(click.BadParameter):
        parse_judge("openai")  # a provider that needs a model


def test_the_sidebar_offers_the_public_providers_then_compatible_servers(monkeypatch):
    scripted_app_judge.withdraw(monkeypatch)
    assert state.provider_choices() == [*public_names(), state.COMPATIBLE]
    assert state.default_model("openai") == "gpt-4o-mini-2024-07-18"
    assert state.key_variables(state.COMPATIBLE) == ("OPENAI_API_KEY",) and state.key_variables("local") == ()
    scripted_app_judge.offer(monkeypatch)
    assert state.provider_choices()[0] == "scripted"  # a plugin registered first is the sidebar's default


def test_the_product_registers_no_test_judge():
    assert "scripted" not in scripted_app_judge.PRODUCT_REGISTRY
    assert "scripted" not in (ROOT / "geval_core" / "providers" / "registry.py").read_text(encoding="utf-8")


def test_a_plugin_named_in_the_environment_registers_its_provider(monkeypatch):
    scripted_app_judge.withdraw(monkeypatch)
    monkeypatch.setenv(PLUGINS_ENV, "scripted_app_judge")
    monkeypatch.setenv(scripted_app_judge.OFFER_ENV, "1")
    load_plugins()
    assert public_names()[0] == "scripted" and get_judge(JudgeSettings(provider="scripted")).primes is False
    scripted_app_judge.withdraw(monkeypatch)
    monkeypatch.setenv(scripted_app_judge.OFFER_ENV, "")  # as every test has it: accepted, never listed
    load_plugins()
    assert "scripted" not in public_names() and get_judge(JudgeSettings(provider="scripted")).primes is False


def test_a_broken_plugin_is_named_and_the_built_in_judges_stay(monkeypatch):
    scripted_app_judge.withdraw(monkeypatch)
    before = public_names()
    monkeypatch.setenv(PLUGINS_ENV, "no_such_plugin_module")
    with pytest.warns(UserWarning, match="'no_such_plugin_module' registered no provider"):
        load_plugins()
    assert public_names() == before


def test_readme_table_is_generated_from_the_registry():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- providers:[^>]*-->\n(.*?)\n<!-- /providers -->", readme, re.S)
    assert found, "README.md lost its <!-- providers --> block"
    assert found.group(1) == providers_table(), (
        "paste the output of registry.providers_table() into README.md"
    )
    assert all(f"| {spec.label} |" in found.group(1) for spec in specs() if spec.public)


def test_a_spec_is_plain_data_with_a_deferred_import():
    def builder():
        import no_such_module  # noqa: F401 -- imported only when a judge is made

    spec = ProviderSpec("example", "Example", builder)
    assert spec.public and spec.reuse and spec.key_variables == () and spec.batch_engine is None
    with pytest.raises(ModuleNotFoundError):
        spec.build(JudgeSettings())
