"""The size of an install of the wheel (issue 41): the core install against one with the [app] extra.

Builds the wheel from a copy of this checkout, then for each Python named (default: this one) makes two fresh
venvs without pip and installs into them from the package index with this venv's pip: `WHEEL` and `WHEEL[app]`.
Prints the megabytes (10^6 bytes, files' own sizes) of each venv's site-packages side by side, and the packages
the app adds. Each install is then used as a user would, from a folder outside the checkout: `geval --help`, the
Python API's imports, and `geval score` on the packaged sample set against a loopback OpenAI-compatible server;
the [app] install also `geval app --help`, and `geval app` until its server answers. Needs the network (pip);
not a test.

    .venv/bin/python bench/bench_install_size.py [PYTHON ...]   # e.g. ~/.pyenv/versions/3.13.0/bin/python
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the loopback judge lives with the tests

from conftest import free_port, served  # noqa: E402
from judge_fakes import FakeJudges  # noqa: E402
from wheel_build import build_wheel, copy_checkout  # noqa: E402

API = "from geval_core.export import load_prompt, score_item; from geval_core import score_frame, agree_frame"


def wheel_of_checkout(work: Path) -> Path:
    """The wheel, built by setuptools' backend from a copy of the checkout (without its tests and benches)."""
    return build_wheel(copy_checkout(work / "source", "tests", "bench"), work)[0]


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return Path(out.strip())


def megabytes(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def install(base_python: str, requirement: str, venv: Path) -> tuple[Path, float, set[str]]:
    """A fresh venv with `requirement` installed from the index: (its bin folder, MB, distribution names)."""
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # -qq: this machine's pip configuration names extra local indexes, and pip warns about each of them.
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-qq", requirement], check=True
    )
    packages = site_packages(python)
    names = {p.name.split("-")[0].lower() for p in packages.glob("*.dist-info")}
    return venv / "bin", megabytes(packages), names


def use(bin_dir: Path, work: Path, app: bool) -> str:
    """Run the install as a user would, outside the checkout; "ok" or what failed."""
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(work)}
    checks = [[bin_dir / "geval", "--help"], [bin_dir / "python", "-c", API]]
    if app:
        checks.append([bin_dir / "geval", "app", "--help"])
    server = FakeJudges()
    try:
        out = work / "results.jsonl"
        checks.append(
            [
                bin_dir / "geval",
                "score",
                "--prompt",
                "coherence",
                "--data",
                "sample",
                "--judge",
                "openai:judge-1",
                "--base-url",
                f"{server.url}/v1",
                "--db",
                str(work / "lib.db"),
                "--out",
                str(out),
                "-q",
            ]
        )
        for command in checks:
            done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
            if done.returncode:
                return f"{Path(command[0]).name} {command[1]}: {(done.stderr or done.stdout)[-300:]}"
        scored = [json.loads(line)["score"] for line in out.read_text(encoding="utf-8").splitlines()]
        if not scored or None in scored:
            return "score: empty scores"
        if app:  # the server answers its health check: the installed app started
            port = free_port()
            with served(
                [str(bin_dir / "geval"), "app", "--port", str(port)],
                f"http://127.0.0.1:{port}/_stcore/health",
                work / "app.log",
                timeout=90.0,
                cwd=work,
                env=env,
            ):
                pass
        return f"ok ({len(scored)} items scored{', app served' if app else ''})"
    finally:
        server.close()


def main(pythons: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheel = wheel_of_checkout(work)
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e6:.2f} MB")
        print(f"{'python':<8} {'core MB':>8} {'[app] MB':>9} {'app adds':>9}  use (core / [app])")
        for number, base in enumerate(pythons):
            version = subprocess.run(
                [base, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            try:
                core_bin, core_mb, core_names = install(base, str(wheel), work / f"core{number}")
                app_bin, app_mb, app_names = install(base, f"{wheel}[app]", work / f"app{number}")
            except (
                subprocess.CalledProcessError
            ) as exc:  # `make bench` on a machine without the package index
                print(
                    f"{version:<8} not measured: pip failed ({exc.returncode}); is the package index reachable?"
                )
                continue
            used = [
                use(b, Path(tempfile.mkdtemp(dir=work)), app=a)
                for b, a in ((core_bin, False), (app_bin, True))
            ]
            print(
                f"{version:<8} {core_mb:>8.1f} {app_mb:>9.1f} {app_mb / core_mb:>8.2f}x  {used[0]} / {used[1]}"
            )
            print(
                f"         [app] adds {len(app_names - core_names)} distributions: "
                f"{', '.join(sorted(app_names - core_names))}"
            )


if __name__ == "__main__":
    main(sys.argv[1:] or [sys.executable])
