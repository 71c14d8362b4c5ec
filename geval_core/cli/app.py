"""`geval app`: the Streamlit app of the installed package (the [app] extra), on loopback as `make run` serves it."""

from __future__ import annotations

import importlib.util
import os
import sys
import tomllib
from pathlib import Path

import click

from .common import db_option

APP_EXTRA = "pip install 'geval-workbench[app]'"
APP_MODULES = ("streamlit", "plotly")  # the [app] extra's packages (pyproject.toml)
# Inside workbench_ui: where setup.py puts app.py, app_pages/ and .streamlit/ in a wheel.
APP_PACKAGE_DIR = ("app",)
LOOPBACK = "127.0.0.1"


def missing_app_modules() -> list[str]:
    """The [app] extra's packages that are not installed (found without importing them)."""
    return [name for name in APP_MODULES if importlib.util.find_spec(name) is None]


def app_script() -> Path:
    """The app's entry script: workbench_ui/app/app.py in an installed wheel, else app.py at a checkout's root.

    Found by location, not imported: the command line is a layer below the Streamlit helpers.
    """
    spec = importlib.util.find_spec("workbench_ui")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in map(Path, folders):
        for script in (folder.joinpath(*APP_PACKAGE_DIR, "app.py"), folder.parent / "app.py"):
            if script.is_file():
                return script
    raise click.ClickException(f"the app's files are missing from this install; reinstall it: {APP_EXTRA}")


def config_options(script: Path) -> dict[str, str]:
    """The app's .streamlit/config.toml (beside its script) as `streamlit run` options, "section.name" -> value.

    Streamlit reads the config in the working directory, and newer versions the one beside the script too; passed
    as flags, the shipped settings hold from any working directory and on every supported Streamlit.
    """
    config = script.parent / ".streamlit" / "config.toml"
    if not config.is_file():
        return {}
    return {
        f"{section}.{name}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, options in tomllib.loads(config.read_text(encoding="utf-8")).items()
        for name, value in options.items()
    }


def streamlit_command(script: Path, port: int | None) -> list[str]:
    """`python -m streamlit run SCRIPT` with the shipped config, on loopback, on `port` when given."""
    options = config_options(script)
    options["server.address"] = (
        LOOPBACK  # whatever a config says: the app opens library files and spends API keys
    )
    if port is not None:
        options["server.port"] = str(port)
    flags = [word for name, value in options.items() for word in (f"--{name}", value)]
    return [sys.executable, "-m", "streamlit", "run", str(script), *flags]


@click.command("app")
@db_option(help="The library the app opens first (default: ./geval.db).")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="The port to listen on (default: Streamlit's 8501, or the next free one).",
)
def app_command(db: str | None, port: int | None) -> None:
    """Start the Streamlit app on http://127.0.0.1 (loopback only), as `make run` does in a checkout.

    Needs the app extra: pip install 'geval-workbench[app]'. Stop it with Ctrl-C.

    \b
    Examples:
      geval app
      geval app --port 8600 --db team.db
    """
    missing = missing_app_modules()
    if missing:
        raise click.ClickException(
            f"the app needs the [app] extra ({', '.join(missing)} not installed): {APP_EXTRA}"
        )
    command = streamlit_command(app_script(), port)
    if db:
        os.environ["GEVAL_DB"] = db  # the app's sidebar opens $GEVAL_DB first
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # The server replaces this process: Ctrl-C and a terminate signal reach Streamlit itself.
    os.execv(sys.executable, command)
