"""Coverage of `geval compare`'s paired intervals on both judge families (bench/coverage_families.py): the judge
minus the second judge, each figure's difference with people, documents drawn with replacement; the compare rows
of bench/bench_coverage.py alone.

    python bench/bench_compare_coverage.py [REPEATS]     (default 400)
"""

from __future__ import annotations

import sys

from bench_coverage import main

if __name__ == "__main__":
    repeats = sys.argv[1:2] or ["400"]
    sys.argv = [sys.argv[0], "--only", "compare", "--reps", repeats[0]]
    main()
