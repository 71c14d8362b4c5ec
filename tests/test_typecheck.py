"""The type-check gate of `make test` (tests/typecheck.py): entries without line numbers, new errors refused,
fixed ones reported, and a baseline that stays small."""

from __future__ import annotations

from collections import Counter

import typecheck

OUTPUT = """\
geval_core/run/plan.py:474: error: Argument 5 to "run_scoring" has incompatible type "str | None"; expected "str"  [arg-type]
geval_core/run/plan.py:474: note: a note is no entry
workbench_ui/a.py:3:7: error: Need type annotation for "x"  [var-annotated]
workbench_ui/a.py:9:7: error: Need type annotation for "x"  [var-annotated]
Found 3 errors in 2 files (checked 180 source files)
"""


def test_entries_leave_out_line_numbers_and_count_repeats():
    found = typecheck.entries(OUTPUT)
    assert found == Counter(
        {
            'geval_core/run/plan.py: [arg-type] Argument 5 to "run_scoring" has incompatible type "str | None"; '
            'expected "str"': 1,
            'workbench_ui/a.py: [var-annotated] Need type annotation for "x"': 2,
        }
    )


def test_a_new_error_is_refused_and_a_fixed_one_reported():
    baseline = typecheck.entries(OUTPUT)
    now = baseline.copy()
    now['workbench_ui/a.py: [var-annotated] Need type annotation for "x"'] += 1  # a third copy is new
    now.pop(
        'geval_core/run/plan.py: [arg-type] Argument 5 to "run_scoring" has incompatible type "str | None"; '
        'expected "str"'
    )
    new, gone = typecheck.compare(now, baseline)
    assert new == ['workbench_ui/a.py: [var-annotated] Need type annotation for "x"']
    assert gone == [
        'geval_core/run/plan.py: [arg-type] Argument 5 to "run_scoring" has incompatible type '
        '"str | None"; expected "str"'
    ]


def test_the_baseline_written_reads_back(tmp_path):
    path = tmp_path / "baseline.txt"
    typecheck.write_baseline(typecheck.entries(OUTPUT), path)
    assert typecheck.read_baseline(path) == typecheck.entries(OUTPUT)
    assert path.read_text(encoding="utf-8").startswith("# Known mypy errors")


def test_the_baseline_holds_at_most_twenty_known_errors():
    assert 0 < sum(typecheck.read_baseline().values()) <= 20
