"""What the browser tests share (the `chromium` fixture is in conftest): playwright, the app served on loopback, and a page that keeps a
screenshot of a failure."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import free_port, served
from needs import require_module

ROOT = Path(__file__).resolve().parent.parent
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Skipped without playwright or Chromium on a developer's machine; a failure under CI (needs.py).
playwright_api = require_module("playwright.sync_api", "install the test extra: pip install -e '.[test]'")


@contextmanager
def serve_app(tmp_path: Path, db: Path, **env_changes: str) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port with library `db`; yields its URL.

    No key and no test judge leak in from the caller's environment unless `env_changes` sets them.
    """
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("GEVAL_PROVIDER_PLUGINS", "OPENAI_API_KEY")}
    env.update(GEVAL_DB=str(db), STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", **env_changes)
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.fileWatcherType",
        "none",
    ]
    url = f"http://127.0.0.1:{port}"
    with served(
        command, f"{url}/_stcore/health", tmp_path / "streamlit.log", timeout=60.0, cwd=ROOT, env=env
    ):
        yield url


@contextmanager
def browser_page(chromium: str, tmp_path: Path, height: int = 2000) -> Iterator:
    """A headless Chromium page; a failure inside leaves tmp_path/failure.png, the browser always closes."""
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1500, "height": height})
        try:
            yield page
        except BaseException:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()


def settle(page) -> None:
    """Wait until the app's script has finished and no element of an earlier run is left on the page.

    Mid-rerun Streamlit keeps the last run's elements (marked stale) beside the new ones, so a button can
    briefly exist twice; a short pause first lets a rerun that a click or a key just asked for begin.
    """
    page.wait_for_timeout(300)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(timeout=60_000)
    playwright_api.expect(page.locator("[data-stale='true']")).to_have_count(0, timeout=60_000)


def click_button(page, name: str) -> None:
    """Click the one button named exactly `name`, once the page has settled."""
    settle(page)
    button = page.get_by_role("button", name=name, exact=True)
    playwright_api.expect(button).to_have_count(1, timeout=30_000)
    button.click()
