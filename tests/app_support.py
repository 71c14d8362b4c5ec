"""Shared set-up for the AppTest tests: a temporary library, the scripted judge, page helpers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import scripted_app_judge
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
TIMEOUT = 120  # the first run imports pandas, plotly and scipy


def use_temp_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh library file for the app (GEVAL_DB), the scripted judge offered, no API keys."""
    path = tmp_path / "lib.db"
    monkeypatch.setenv("GEVAL_DB", str(path))
    scripted_app_judge.offer(monkeypatch)
    for name, value in scripted_app_judge.plugin_env().items():  # the run's worker process loads it too
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    return path


def open_page(page: str | None = None, clean: bool = True) -> AppTest:
    """Run app.py, then switch to app_pages/<page>.py; fail on any exception (and error, when clean)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    if page:
        at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    if clean:
        assert_clean(at)
    return at


def open_design(example: str = "coherence@1") -> AppTest:
    """The Design page with a shipped example loaded (a new library opens on a blank form)."""
    at = open_page("design")
    at.button(key=f"design_example_{example}").click().run()
    assert_clean(at)
    return at


def wait_for_jobs(path: Path, timeout: float = 120.0) -> None:
    """Wait until no worker of this library is scoring a run any more (state, not time: the deadline only
    bounds a hang)."""
    import time

    from prompt_library import Library, task_jobs

    def tasks_going(
        lib,
    ) -> bool:  # model work and checks done by task workers (steps, suggestions, stability)
        names = [name.split(":", 1) for name in lib.setting_names("task:")]
        return any(task_jobs.task_state(lib, kind, key) in task_jobs.LIVE for kind, key in names)

    deadline = time.monotonic() + timeout
    with Library(path, seed_examples=False) as lib:
        while any(
            lib.job_state(run.id) in ("starting", "running", "stopping") for run in lib.list_runs()
        ) or tasks_going(lib):
            assert time.monotonic() < deadline, "a run's or a task's worker did not end"
            time.sleep(0.05)


def wait_until(check, timeout: float = 60.0) -> None:
    """Wait for a state of the library (the deadline only bounds a hang)."""
    import time

    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.05)


def after_jobs(at: AppTest, path: Path) -> AppTest:
    """The page drawn again once the runs its clicks started have ended in their workers."""
    wait_for_jobs(path)
    return at.run()


def assert_clean(at: AppTest) -> None:
    """No uncaught exception and no error message on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def plain(text: str) -> str:
    """A Markdown value without the backslash escapes the app adds to untrusted text."""
    return re.sub(r"\\(.)", r"\1", text)


def values(elements) -> list[str]:
    """The unescaped values of a list of text elements (at.success, at.warning, ...)."""
    return [plain(str(e.value)) for e in elements]


def page_text(at: AppTest) -> str:
    """Every text-bearing element's value, joined and unescaped (for 'is this shown' assertions)."""
    parts = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "success",
        "info",
        "warning",
        "error",
        "text",
    ):
        parts.extend(values(getattr(at, kind)))
    parts.extend(str(e.value) for e in at.code)  # st.code shows text as is: nothing to unescape
    return "\n".join(parts)


def metric(at: AppTest, label: str) -> str:
    """The value of the metric with this label."""
    found = [m.value for m in at.metric if m.label == label]
    assert found, f"no metric {label!r}; have {[m.label for m in at.metric]}"
    return found[0]
