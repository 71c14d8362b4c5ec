"""The wheel built from a copy of the checkout, as the package test and the install-size bench build it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from paths import ROOT

# What never goes into a build's source copy: the checkout's venv, git, caches, built files, libraries, secrets.
NOT_SOURCE = (
    ".venv",
    ".git",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".hypothesis",
    ".ruff_cache",
    ".pytest_cache",
    "*.db",
    "*.db-*",
    "secrets.toml",
)


def copy_checkout(target: Path, *also_skip: str) -> Path:
    """A copy of the checkout at `target` without NOT_SOURCE (and `also_skip`)."""
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(*NOT_SOURCE, *also_skip))
    return target


def build_wheel(source: Path, out: Path) -> tuple[Path, str]:
    """setuptools' build backend on `source` with warnings shown: (the wheel in `out`, what the build said)."""
    built = subprocess.run(
        [
            sys.executable,
            "-W",
            "default",
            "-c",
            "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))",
            str(out),
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out / built.stdout.strip().splitlines()[-1], built.stdout + built.stderr
