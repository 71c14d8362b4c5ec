"""The wheel's layout: one top-level package, `geval_core`, holding the store and the app.

A checkout keeps the design's folders at its root (app.py, app_pages/, geval_core/, prompt_library/,
workbench_ui/, sample_data/) for `make run` and `make test`, and an editable install maps them as they are.
A wheel installs into a shared site-packages, where generic names such as `prompt_library` would collide with
other distributions, so the built copy nests them: prompt_library/ becomes geval_core/prompt_library/,
workbench_ui/ becomes geval_core/workbench_ui/ (with app.py, app_pages/ and .streamlit/config.toml copied to its
app/ folder, where `geval app` runs them), and the built modules' references to the two names are rewritten to
the nested ones. Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info

ROOT = Path(__file__).resolve().parent
APP_FILES = ("app.py", "app_pages/*.py", ".streamlit/config.toml")  # never .streamlit/secrets.toml
APP_PACKAGE_DIR = ("workbench_ui", "app")  # geval_core.cli.app reads the same place
HOME = "geval_core"  # the wheel's one top-level package
NESTED = ("prompt_library", "workbench_ui")  # top-level in a checkout, inside HOME in a wheel
# A module reference to a nested name: not an attribute (`x.prompt_library`) nor part of a longer word.
REFERENCE = re.compile(r"(?<![\w.])(" + "|".join(NESTED) + r")\b")


def app_files() -> list[Path]:
    """The app's files in the checkout, entry script first."""
    return [path for pattern in APP_FILES for path in sorted(ROOT.glob(pattern))]


def nested_source(text: str) -> str:
    """A module's text with `prompt_library` / `workbench_ui` module references under geval_core."""
    return REFERENCE.sub(HOME + r".\1", text)


class BuildPyNested(build_py):
    """build_py, then the app's files and the nesting above (not for an editable install)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install runs the checkout where it is
            return
        build = Path(self.build_lib)
        self.copy_app(build)
        for name in NESTED:
            target = build / HOME / name
            if target.exists():  # a build folder left by an earlier build
                shutil.rmtree(target)
            shutil.move(str(build / name), str(target))
        for module in [*build.joinpath(HOME).rglob("*.py"), *build.joinpath(HOME).rglob("*.pyi")]:
            module.write_text(nested_source(module.read_text(encoding="utf-8")), encoding="utf-8")

    def copy_app(self, build: Path) -> None:
        """app.py, app_pages/ and the shipped config into workbench_ui/app of the build."""
        target = build.joinpath(*APP_PACKAGE_DIR)
        for source in app_files():
            destination = target / source.relative_to(ROOT)
            self.mkpath(str(destination.parent))
            self.copy_file(str(source), str(destination))


class EggInfoOneTopLevel(egg_info):
    """egg_info whose top_level.txt names the wheel's one top-level package (pip and tools read it)."""

    def run(self) -> None:
        super().run()
        Path(self.egg_info, "top_level.txt").write_text(HOME + "\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildPyNested, "egg_info": EggInfoOneTopLevel})
