"""The align flow on real SummEval data with the embedded local judge, through the command line: a split by
document, three drafts compared with the base on dev, two evaluated on the sealed test side (with the base),
the report with its corrected interval, and the sealing checked in the store. The local judge's ratings are
close to noise: the figures show the flow works end to end, not a judge quality.

    python bench/demo_align.py [DOCS] [SYSTEMS]     (default 25 documents x 2 systems)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.run.splits import get_split, sealed_uses
from prompt_library import Library

ROOT = Path(__file__).resolve().parent.parent
SUMMEVAL = ROOT.parent / "shared" / "data" / "summeval" / "summeval.jsonl"
DRAFTS = (
    "How well the summary's sentences fit together into one account of the article.",
    "Whether the summary reads as a structured whole, each sentence following from the one before.",
    "Coherence: the summary is organised, its facts in a sensible order, with no jumps or contradictions.",
)


def subset(path: Path, docs: int, systems: int) -> Path:
    """The first `docs` articles, `systems` summaries of each."""
    rows, seen = [], {}
    for line in SUMMEVAL.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        kept = seen.setdefault(row["doc_id"], [])
        if len(kept) < systems and (row["doc_id"] in seen and len(seen) <= docs):
            kept.append(row["id"])
            rows.append(line)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def shown(interval: list[float] | None) -> str:
    """'[-0.120, +0.080]', or 'withheld'."""
    return "withheld" if interval is None else f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


def geval(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    if result.exit_code != 0:
        raise SystemExit(f"geval {' '.join(args)} failed: {result.output}")
    return json.loads(result.output[result.output.index("{") :])


def main(docs: int = 25, systems: int = 2) -> None:
    folder = Path(tempfile.mkdtemp())
    db = str(folder / "align.db")
    data = subset(folder / "summeval.jsonl", docs, systems)
    started = time.perf_counter()
    CliRunner().invoke(
        cli,
        [
            "--db",
            db,
            "datasets",
            "import",
            str(data),
            "--name",
            "summeval",
            "--id",
            "id",
            "--input",
            "document=source",
            "--input",
            "summary=output",
            "--human",
            "coherence=scores.coherence",
            "--group",
            "doc_id",
        ],
    )
    split = geval("--db", db, "split", "summeval", "--dev", "0.6", "--seed", "3")
    print(
        f"split {split['hash'][:12]}: {len(split['dev'])} dev items in {split['groups']['dev']} documents, "
        f"{len(split['test'])} test items in {split['groups']['test']} documents"
    )
    with Library(db) as lib:
        base = lib.get_prompt("coherence")
        labels = [base.label]
        for n, definition in enumerate(DRAFTS, 2):
            dim = {**base.dimension.to_dict(), "definition": definition}
            (folder / f"draft{n}.json").write_text(json.dumps(dim))
    for n in range(2, 2 + len(DRAFTS)):
        labels.append(geval("--db", db, "prompts", "freeze", str(folder / f"draft{n}.json"))["label"])
    runs = {
        label: geval("--db", db, "align", "dev", label, "--data", "summeval")["run_id"] for label in labels
    }
    print(f"\ndev side, base {labels[0]} vs each draft (paired, documents resampled):")
    for label in labels[1:]:
        result = geval("--db", db, "compare", runs[labels[0]], runs[label], "--human", "coherence")
        fig = result["figures"]["spearman"]
        interval = shown(fig["interval"])
        print(
            f"  {label}: Spearman {fig['first']:.3f} -> {fig['second']:.3f} ({fig['difference']:+.3f} {interval}), "
            f"{result['items']} dev items, scope {result['scope']['side']}"
        )
    chosen = labels[1]
    for label in (labels[0], chosen, labels[2]):  # two candidates looked at: the report widens for both
        geval("--db", db, "align", "test", label, "--data", "summeval")
    report = geval("--db", db, "align", "report", chosen, "--data", "summeval")
    print(
        f"\ntest side, {report['base']} vs {report['candidate']}: {report['items']} items in {report['groups']} "
        f"documents; {report['candidates_evaluated']} candidate(s) evaluated ({report['test_looks']} looks)"
    )
    for name, fig in report["figures"].items():
        plain, wide = fig["interval"], fig.get("corrected_interval")
        print(
            f"  {name:<16} {fig['first']:.3f} -> {fig['second']:.3f}: {fig['difference']:+.3f} 95% "
            f"{shown(plain)} corrected ({report['corrected_level']:.2%}) {shown(wide)}"
        )
    with Library(db) as lib:
        dataset = lib.get_dataset("summeval")
        split = get_split(lib, dataset["id"])
        test = set(split["test"])
        dev_runs = [lib.get_run(runs[label]) for label in labels]
        leaked = sum(len(set(r["item_ids"]) & test) for r in dev_runs)
        uses = sealed_uses(lib, split)
    print(
        f"\nsealing: test items in the dev runs {leaked}; test uses recorded {len(uses)} "
        f"({len({u['prompt_id'] for u in uses})} prompts); {time.perf_counter() - started:.0f} s in all"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
