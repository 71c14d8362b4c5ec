"""The `geval` command: one module per command group, shared options in `common`."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Any

# numpy's OpenBLAS spreads even a small dot product over every core and spins while it waits: beside a judge
# or a second process on a small machine that makes a bootstrap many times slower. Read when numpy loads, so
# the entry points (this one, app.py) set it first; the user's value wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402

from prompt_library.base import close_open_libraries

__all__ = ["cli"]

# Command name -> (module, attribute). A command's module is imported when that command runs (or when
# --help lists it), so `geval runs list` or a re-run of `geval score` pays for no other command's imports.
COMMANDS = {
    "agree": (".agree", "agree"),
    "prompts": (".prompts", "prompts"),
    "datasets": (".datasets", "datasets"),
    "runs": (".runs", "runs"),
    "score": (".score", "score_command"),
    "batch": (".batch", "batch_group"),
    "verify": (".verify", "verify_command"),
    # Judge diagnostics.
    "calibration": (".diagnostics", "calibration_command"),
    "estimate": (".diagnostics", "estimate_command"),
    "budget": (".budget", "budget_command"),
    "probe": (".probes", "probe_group"),
    "stability": (".stability", "stability_command"),
    "panel": (".panel", "panel_group"),
    "split": (".split", "split_command"),
    "compare": (".compare", "compare_command"),
    "align": (".align", "align_group"),
    "cascade": (".cascade", "cascade_group"),
    "drift": (".drift", "drift_group"),
    # Raters and the human ceiling.
    "raters": (".raters", "raters_command"),
    "review": (".review", "review_command"),
    "app": (".app", "app_command"),  # the Streamlit app (the [app] extra)
}


class _Commands(dict[str, click.Command]):
    """A group's commands by name; one of COMMANDS is imported when first looked up (`cli.commands[name]` too)."""

    def __missing__(self, name: str) -> click.Command:
        if name not in COMMANDS:
            raise KeyError(name)
        module, attribute = COMMANDS[name]
        self[name] = command = getattr(importlib.import_module(module, __name__), attribute)
        return command

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in COMMANDS

    def get(self, name: str, default: Any = None, /) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


class LazyGroup(click.Group):
    """A click group whose COMMANDS are imported on first use (commands added directly work as usual)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """The `geval` process: the command, then an exit that skips the interpreter's teardown.

        Tearing down the modules and objects of a finished `geval score` (the judge SDK's thousands of
        classes, idle worker threads) is a noticeable share of a short run. Everything is written by then: the
        libraries are closed (their WAL checkpointed) and the output streams flushed first. click.main,
        which tests call through CliRunner, is left as it is.
        """
        try:
            self.main(*args, **kwargs)
            code: object = 0
        except SystemExit as exc:
            code = exc.code
        quick_exit(code)


def quick_exit(code: object) -> None:
    """Close the libraries, flush stdout and stderr, and end the process with `code` (as SystemExit would)."""

    close_open_libraries()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # SystemExit("message") prints its message and exits 1
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`geval runs list | head`)
            stream.flush()
    os._exit(code or 0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="geval-workbench")
@click.option(
    "--db",
    "db",
    type=click.Path(dir_okay=False),
    default=None,
    envvar="GEVAL_DB",
    show_envvar=True,
    help="The library file for every command below (default: ./geval.db; a command's own --db wins).",
)
def cli(db: str | None) -> None:
    """G-Eval Workbench: design, freeze, run and calibrate LLM-as-a-judge prompts.

    \b
    Examples:
      geval prompts list
      geval score --prompt coherence --data sample --out results.jsonl
      geval --db team.db runs list --json

    \b
    Shell completion, prompt, dataset and run names included (zsh: zsh_source in ~/.zshrc):
      eval "$(_GEVAL_COMPLETE=bash_source geval)"    # in ~/.bashrc
      _GEVAL_COMPLETE=fish_source geval | source    # fish
    """
    # The commands' own --db read it from this group's parameters (cli.common.group_db).
