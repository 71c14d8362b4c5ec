"""A panel of two real judges on the sample set, through the command line: the embedded SmolLM2 (in process)
and the real llama.cpp OpenAI-compatible server on loopback serving the same file with other wording of the
definition. Prints the members' Krippendorff alpha with its interval, each member and the panel against
people with intervals, and the panel minus its best member with a paired interval; then the same command
again, which reuses both members' runs (0 judge calls). The tiny local model's ratings are close to noise:
the figures show the panel works end to end with real judges, not a judge quality.

    python bench/demo_panel.py                 the sample set (about 2 minutes here)
    python bench/demo_panel.py summeval 30 3   30 SummEval articles x 3 summaries with the experts' ratings
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

from demo_align import geval, subset  # the same SummEval subset and --json command runner

from geval_core.providers.local_judge import local_model_path
from prompt_library import Library

WORDING = "How well the summary's sentences build, one after another, a single clear account of the document."


def shown(interval) -> str:
    """'[0.120, 0.480]', or 'withheld'."""
    return "withheld" if not interval else f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def llama_server(model: str, port: int) -> subprocess.Popen:
    """The llama.cpp server on 127.0.0.1:port, once its /v1/models answers."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "geval_core.providers.llama_server",
            "--model",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(900):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("the llama.cpp server did not start") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the llama.cpp server did not answer in 90 s")


def summeval_subset(folder: Path, db: str, docs: int, systems: int) -> str:
    """The first `docs` SummEval articles with `systems` summaries each, imported with the experts' coherence."""
    subset(folder / "summeval.jsonl", docs, systems)
    geval(
        "--db",
        db,
        "datasets",
        "import",
        str(folder / "summeval.jsonl"),
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
    )
    return "summeval"


def main(source: str = "sample", docs: int = 30, systems: int = 3) -> None:
    """Freeze two members and the panel, score the data, print the figures."""
    folder = Path(tempfile.mkdtemp())
    db = str(folder / "panel.db")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with Library(db) as lib:  # seeded: the coherence prompt (local judge) and the sample set
        base = lib.get_prompt("coherence")
        # The same prompt with other wording, judged by the same file behind the llama.cpp server.
        judge = replace(base.dimension.judge, provider="openai", model="smollm2")
        server_member = replace(base.dimension, definition=WORDING, judge=judge).to_dict()
    (folder / "server.json").write_text(json.dumps(server_member))
    second = geval("--db", db, "prompts", "freeze", str(folder / "server.json"), "--name", "coherence-server")
    panel = geval(
        "--db",
        db,
        "panel",
        "freeze",
        "jury",
        "--member",
        base.label,
        "--member",
        second["label"],
        "--rule",
        "pooled",
    )
    print(
        f"panel {panel['label']} ({panel['id'][:12]}): {base.label} (embedded SmolLM2) + "
        f"{second['label']} (llama.cpp server, other wording), rule pooled"
    )
    server = llama_server(str(local_model_path()), port)
    try:
        started = time.perf_counter()
        data = "sample" if source == "sample" else summeval_subset(folder, db, docs, systems)
        args = (
            "--db",
            db,
            "panel",
            "score",
            "jury",
            "--data",
            data,
            "--human",
            "coherence",
            "--member-base-url",
            f"{second['label']}={url}",
            "--out",
            str(folder / "panel.jsonl"),
        )
        result = geval(*args)
        seconds = time.perf_counter() - started
        again = geval(*args)
    finally:
        server.terminate()
        server.wait(timeout=15)
    with Library(db) as lib:
        for member in result["member_runs"]:
            run = lib.get_run(member["run"])
            print(
                f"{member['prompt']}: run {member['run']}, {run.get('items_total')} items, "
                f"{sum(j['score'] is not None for j in lib.judgments(member['run']))} scored (the rest below the "
                "valid-mass floor or without a rating)"
            )
    alpha = result["alpha"]
    print(
        f"members' Krippendorff alpha (interval) {alpha['value']:.3f} {shown(alpha['interval'])}, "
        f"{alpha['resampled']} resampled"
    )
    people = result["against_people"]
    print(f"against people ({people['human']}), {people['items']} items with every score:")
    for who, figures in people["figures"].items():
        line = ", ".join(f"{name} {value:.3f}" for name, value in figures.items())
        versus = people["panel_minus_each"].get(who)
        if versus is not None:
            spearman = versus["figures"]["spearman"]
            line += (
                f"; panel minus it, Spearman {spearman['difference']:+.3f} {shown(spearman['interval'])}"
                f" ({versus['groups']} groups resampled)"
            )
        print(f"  {who}: {line}")
    print(f"  best member: {people['best_member']}")
    calls = sum(m["judge_calls"] for m in again["member_runs"])
    print(f"{seconds:.0f} s; the same command again: {calls} judge calls")


if __name__ == "__main__":
    main(*sys.argv[1:2], *(int(a) for a in sys.argv[2:4]))
