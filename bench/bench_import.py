"""`geval datasets import` in flat memory: max RSS of the import process at 1,000 / 10,000 / 100,000 items.

Each size is a JSONL file of bench items (a document of about 600 characters, a summary, a rating, a group of
16 items, as SummEval is shaped), written once; `geval datasets import FILE` runs as a child process and
os.wait4's rusage gives its max RSS alone. Target: at most 60 MB at 100,000 items, and flat in N (the 100k
figure within 1.5x the 1k one). One run prints every figure and its ratio to the target (<= 1 meets it).

Run: .venv/bin/python bench/bench_import.py   (GEVAL_IMPORT_SIZES=1000,10000 for a quick look)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_deepeval import item_texts  # noqa: E402

SIZES = tuple(int(n) for n in os.environ.get("GEVAL_IMPORT_SIZES", "1000,10000,100000").split(","))
TARGET_MB = 60.0
FLAT = 1.5
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def write_file(path: Path, items: int) -> None:
    """A JSONL file of `items` bench rows."""
    with path.open("w", encoding="utf-8") as handle:
        for k in range(items):
            document, summary = item_texts(k)
            handle.write(
                json.dumps(
                    {
                        "id": f"b{k:06d}",
                        "document": document,
                        "summary": summary,
                        "coherence": 1 + k % 5,
                        "doc": f"d{k // 16}",
                    }
                )
                + "\n"
            )


def import_rss(db: Path, path: Path, name: str) -> tuple[float, float, float]:
    """(max RSS in MB, wall seconds, CPU seconds) of one `geval datasets import` child."""
    args = [
        *CLI,
        "datasets",
        "import",
        str(path),
        "--name",
        name,
        "--db",
        str(db),
        "--input",
        "document=document",
        "--input",
        "summary=summary",
        "--human",
        "coherence=coherence",
        "--group",
        "doc",
        "--json",
    ]
    began = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    out, err = child.stdout.read(), child.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import of {path.name} failed: {err.decode()[-500:]}")
    assert json.loads(out)["item_count"] == int(name.removeprefix("n"))
    return usage.ru_maxrss / 1024, wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    """Print the RSS curve and the ratios."""
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="geval-import-") as folder:
        rows = {}
        for items in SIZES:
            path = Path(folder) / f"items{items}.jsonl"
            write_file(path, items)
            rss, wall, cpu = import_rss(Path(folder) / "lib.db", path, f"n{items}")
            rows[items] = rss
            print(
                f"{items:>7,} items ({path.stat().st_size / 1e6:6.1f} MB file): max RSS {rss:6.1f} MB, "
                f"{wall:5.1f} s wall, {cpu:5.1f} s CPU"
            )
    largest, smallest = rows[max(rows)], rows[min(rows)]
    print(
        f"max RSS at {max(rows):,}: {largest:.1f} MB / {TARGET_MB:.0f} MB = ratio {largest / TARGET_MB:.2f} "
        f"(target <= 1: {'met' if largest <= TARGET_MB else 'missed'})"
    )
    print(
        f"flatness {max(rows):,} vs {min(rows):,}: {largest / smallest:.2f}x / {FLAT}x = ratio "
        f"{largest / smallest / FLAT:.2f} (target <= 1: {'met' if largest / smallest <= FLAT else 'missed'})"
    )


if __name__ == "__main__":
    main()
