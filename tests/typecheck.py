"""Run mypy over the product packages and hold it to the baseline of known errors, which may only shrink.

`python tests/typecheck.py` fails on any error the baseline does not list and names the listed ones that are
gone (then `--update` writes the smaller baseline). Entries leave out line numbers, so an edit above a known
error does not turn it into a new one; the same message twice in one file is two entries.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tests" / "mypy_baseline.txt"
# path:line[:column]: error: message  [code]
ERROR = re.compile(
    r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: (?P<message>.*?)(?:\s+\[(?P<code>[a-z-]+)\])?$"
)


def entries(output: str) -> Counter[str]:
    """mypy's error lines as baseline entries ("path: [code] message"), counted."""
    found: Counter[str] = Counter()
    for line in output.splitlines():
        match = ERROR.match(line.strip())
        if match:
            found[f"{match['path']}: [{match['code'] or 'misc'}] {match['message']}"] += 1
    return found


def read_baseline(path: Path = BASELINE) -> Counter[str]:
    """The baseline's entries (comment and blank lines skipped)."""
    if not path.exists():
        return Counter()
    lines = path.read_text(encoding="utf-8").splitlines()
    return Counter(line for line in lines if line.strip() and not line.startswith("#"))


def compare(now: Counter[str], baseline: Counter[str]) -> tuple[list[str], list[str]]:
    """(errors the baseline does not list, listed errors that are gone), each entry once per extra copy."""
    return sorted((now - baseline).elements()), sorted((baseline - now).elements())


def write_baseline(found: Counter[str], path: Path = BASELINE) -> None:
    """Write the entries, sorted, under a header that says what the file is."""
    header = (
        "# Known mypy errors (tests/typecheck.py): this list may only shrink. One entry per error, no line "
        "numbers.\n"
    )
    path.write_text(header + "".join(f"{entry}\n" for entry in sorted(found.elements())), encoding="utf-8")


def run_mypy() -> tuple[int, str]:
    """mypy over the packages pyproject.toml names, with its configuration: (exit code, output)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout + done.stderr


def main(argv: list[str] | None = None) -> int:
    """0 when mypy finds no error outside the baseline; 1 otherwise (or when mypy itself failed to run)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="write the baseline when it only shrinks")
    args = parser.parse_args(argv)
    code, output = run_mypy()
    now = entries(output)
    if code not in (0, 1) or (code == 1 and not now):  # a crash or a configuration error, not type errors
        print(output, file=sys.stderr)
        return 1
    new, gone = compare(now, read_baseline())
    for entry in new:
        print(f"new type error: {entry}")
    for entry in gone:
        print(f"fixed, drop it from {BASELINE.name}: {entry}")
    if new:
        print(output)
        print(
            f"{len(new)} type error(s) not in {BASELINE.relative_to(ROOT)}: fix them (the baseline only shrinks)"
        )
        return 1
    if gone and args.update:
        write_baseline(now)
    print(f"mypy: {sum(now.values())} known error(s) in the baseline, none new")
    return 0


if __name__ == "__main__":
    sys.exit(main())
