"""The Streamlit app inside the wheel: app.py, app_pages/ and .streamlit/config.toml are copied to
workbench_ui/app/, where `geval app` runs them; a checkout keeps them at its root for `make run`.

Everything else is declared in pyproject.toml. setuptools' package-dir cannot place single files of the
project root in a package without making the root a package directory (its every file then package data).
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
APP_FILES = ("app.py", "app_pages/*.py", ".streamlit/config.toml")  # never .streamlit/secrets.toml
APP_PACKAGE_DIR = ("workbench_ui", "app")  # geval_core.cli.app reads the same place


def app_files() -> list[Path]:
    """The app's files in the checkout, entry script first."""
    return [path for pattern in APP_FILES for path in sorted(ROOT.glob(pattern))]


class BuildPyWithApp(build_py):
    """build_py, then the app's files into build_lib/workbench_ui/app (not for an editable install)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install runs app.py where it is, in the checkout
            return
        target = Path(self.build_lib, *APP_PACKAGE_DIR)
        for source in app_files():
            destination = target / source.relative_to(ROOT)
            self.mkpath(str(destination.parent))
            self.copy_file(str(source), str(destination))


setup(cmdclass={"build_py": BuildPyWithApp})
