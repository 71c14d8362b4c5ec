"""The tests' judge `scripted`, a provider plugin (GEVAL_PROVIDER_PLUGINS=scripted_app_judge, with tests/ on
the path): the product registers no test judge. conftest.py registers it for every test, unlisted and last (a
test names it), and names the plugin in the environment so the processes tests start (job workers, `geval`,
the app) have it too; `offer()` in this process, or GEVAL_TEST_JUDGE_OFFER=1 in another, offers it first and
listed, so the sidebar starts on it.

It answers numbered steps for generation requests, a distribution that depends on the prompt for ratings, and
waits an optional delay per rating request (GEVAL_TEST_JUDGE_DELAY) so a browser test can click Stop mid-run.
With GEVAL_TEST_JUDGE_HOLD naming a file that holds a number K, the requests after the first K of a process
wait while that file exists: a test holds a run mid-way on a state it chooses, not on a clock."""

from __future__ import annotations

import itertools
import os
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from geval_core.providers import registry
from geval_core.providers.scripted import ScriptedJudge, default_script
from geval_core.types import JudgeRequest, JudgeSettings

if TYPE_CHECKING:  # pytest is not imported by the processes that load the plugin
    import pytest

DELAY_ENV = "GEVAL_TEST_JUDGE_DELAY"
HOLD_ENV = "GEVAL_TEST_JUDGE_HOLD"
OFFER_ENV = "GEVAL_TEST_JUDGE_OFFER"  # set: the plugin offers the judge first and listed
WRITING_HOLD_ENV = "GEVAL_TEST_JUDGE_HOLD_WRITING"  # while this file exists, steps and suggestions wait
HOLD_BOUND_S = 120.0  # a test that forgets to release its hold still ends
_RATINGS_ASKED = itertools.count()
PLUGIN = "scripted_app_judge"
SCRIPTED_STEPS = (
    "1. Read the text carefully and identify its main points.\n"
    "2. Check how well the text meets the definition of the dimension.\n"
    "3. Assign a rating on the scale using the descriptions of each point."
)
PRODUCT_REGISTRY = dict(registry.REGISTRY)  # the providers users have, before any test registers this one


def _builder() -> registry.JudgeFactory:
    return build


SPEC = registry.ProviderSpec(
    "scripted", "Scripted test judge", _builder, default_model="scripted-1", needs_model=False, reuse=False
)
HIDDEN = replace(SPEC, public=False)  # accepted when named, never listed: how every test has it


def script(request: JudgeRequest) -> dict[str, float]:
    """Steps for a request without allowed ratings (steps generation), a revised rubric for a designer's request
    (suggested edits), the default distribution otherwise."""
    if not request.ratings:
        hold_writing()
        text = request.messages[-1]["content"]
        return {designer_reply(text) if text.startswith("You improve the rubric") else SCRIPTED_STEPS: 1.0}
    hold_until_released(next(_RATINGS_ASKED))
    delay = float(os.environ.get(DELAY_ENV) or 0)
    if delay:
        time.sleep(min(delay, 5.0))
    return default_script(request)


def designer_reply(prompt: str) -> str:
    """A revised definition and top anchor, the reason naming the first two disputed items the prompt lists."""
    ids = re.findall(r"^- \[([^\]]+)\]", prompt, re.MULTILINE)[:2]
    return (
        "DEFINITION: Whether the summary's sentences follow one another as one account.\n"
        "ANCHOR 5: Every sentence follows from the one before.\n"
        f"REASON: People marked jumps the judge missed (items: {', '.join(ids)})"
    )


def hold_writing() -> None:
    """Wait while the writing-hold file exists (a test cancels a steps generation mid-call)."""
    hold = Path(os.environ[WRITING_HOLD_ENV]) if os.environ.get(WRITING_HOLD_ENV) else None
    deadline = time.monotonic() + HOLD_BOUND_S
    while hold is not None and hold.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def hold_until_released(asked: int) -> None:
    """Wait while the hold file exists, once this process has answered the number of requests it names."""
    hold = Path(os.environ[HOLD_ENV]) if os.environ.get(HOLD_ENV) else None
    try:
        after = int(hold.read_text(encoding="utf-8") or 0) if hold else None
    except (OSError, ValueError):
        return  # released between the check and the read
    if after is None or asked < after:
        return
    deadline = time.monotonic() + HOLD_BOUND_S
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def build(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> ScriptedJudge:
    """The plugin's builder: a fresh scripted judge."""
    return ScriptedJudge(script)


def register_providers(register) -> None:
    """The plugin hook: the scripted judge first, so the sidebar starts on it (OFFER_ENV set), else unlisted."""
    if os.environ.get(OFFER_ENV):
        register(SPEC, first=True)
    else:
        register(HIDDEN)


def withdraw(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry users have (no test judge) until the test ends."""
    monkeypatch.setattr(registry, "REGISTRY", dict(PRODUCT_REGISTRY))


def plugin_env(offered: bool = True) -> dict[str, str]:
    """What a process needs in its environment to load this plugin: offered first (the browser tests' app), or
    unlisted as every test has it."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join(
        dict.fromkeys(filter(None, [here, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]))
    )
    return {registry.PLUGINS_ENV: PLUGIN, "PYTHONPATH": path, OFFER_ENV: "1" if offered else ""}


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """What conftest.py does for every test: the judge registered unlisted here, and named for child processes."""
    for name, value in plugin_env(offered=False).items():
        monkeypatch.setenv(name, value)
    registry.register(HIDDEN)


def offer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offer the judge first and listed in this process until the test ends (the registry as it was afterwards)."""
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    registry.register(SPEC, first=True)
