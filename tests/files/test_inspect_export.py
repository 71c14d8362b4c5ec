"""The Inspect AI export run by real Inspect (PyPI's inspect-ai, in a venv of its own: .ci/run installs it and sets
GEVAL_INSPECT_PYTHON): a real `inspect eval` of the exported file against a loopback OpenAI-compatible server gives
every item the score the workbench gives the same reply, sending the same message; its scoring rules equal
geval_core's on thousands of token lists (think blocks, signed and multi-token ratings, impossible values); every
string of the prompt stays a literal."""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import math
import os
import random
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from faultserver import FaultServer
from needs import missing

from geval_core.export import score_item
from geval_core.files.tool_exports import FORMATS, tool_filename
from geval_core.prompts import content_hash, messages, render
from geval_core.providers.exports import export_for_tool
from geval_core.run.one_item import judgment_of
from geval_core.scoring import sampled_score
from geval_core.scoring.reply_check import reply_problem
from geval_core.types import (
    Choice,
    Dimension,
    FrozenPrompt,
    JudgeReply,
    JudgeSettings,
    Position,
    Scale,
    TopLogprob,
)

MODEL = "fault-model-2024-01-01"
HOSTILE = "Co'he\"rence\n# x {{ evil }} ''' \"\"\" \\ \"); import os; os.system('id') #\u2028 {document}"
# One reply per item (the server's top-logprob list at the rating position): plain, spaced and repeated tokens,
# mass off the ratings, out-of-scale digits, a tie, a leading minus, an unclosed <think>.
DISTRIBUTIONS = [
    {"3": 0.6, "4": 0.3, "2": 0.05, "The": 0.05},  # the design's worked example: 3.263...
    {"5": 0.9, "4": 0.1},
    {" 4": 0.5, "4": 0.2, "3": 0.3},  # " 4" and "4" are one rating
    {"The": 0.7, "2": 0.2, "3": 0.1},  # 30% on the ratings: below the 50% floor, no score
    {"1": 0.55, "2": 0.25, "Score": 0.2},
    {"6": 0.5, "5": 0.3, "4": 0.2},  # "6" lies off the 1-5 scale
    {"2": 0.4, "3": 0.4, "x": 0.2},  # a tie
    {"-": 0.6, "1": 0.4},  # a minus that begins no rating of 1-5
    {"4": 0.97, "5": 0.03},
    {"<think>": 0.9, "3": 0.1},  # still thinking when the reply stopped: no rating
    {"3": 0.45, "4": 0.45, "5": 0.1},
    {"\u25812": 0.5, "1": 0.25, "3": 0.25},  # SentencePiece's space mark
]


def inspect_python() -> str:
    """A Python that has inspect-ai: GEVAL_INSPECT_PYTHON (.ci/run installs one), else this one if it has it."""
    if os.environ.get("GEVAL_INSPECT_UNAVAILABLE"):  # set by .ci/run when pip cannot install it
        pytest.skip(os.environ["GEVAL_INSPECT_UNAVAILABLE"])
    named = os.environ.get("GEVAL_INSPECT_PYTHON")
    if named and Path(named).is_file():
        return named
    if importlib.util.find_spec("inspect_ai") is not None:
        return sys.executable
    missing(
        "Inspect AI is not installed: set GEVAL_INSPECT_PYTHON to a Python with inspect-ai (e.g. python3 -m venv "
        "/tmp/inspect && /tmp/inspect/bin/pip install inspect-ai openai; .ci/run installs one)"
    )


def frozen(scale: Scale | None = None, name: str = "Coherence", **judge) -> FrozenPrompt:
    """A frozen prompt judged by the loopback server's model."""
    scale = scale or Scale(1, 5)
    settings = {"provider": "openai", "model": MODEL, "seed": 7, **judge}
    dim = Dimension(
        name=name,
        definition=f"How well the summary hangs together. {name}",
        scale=scale,
        anchors={p: f"anchor {p} {name}" for p in scale.points},
        inputs=("document", "summary"),
        steps=("Read the document.", f"Check the summary. {name}"),
        judge=JudgeSettings(**settings),
    )
    return FrozenPrompt(content_hash(dim), "coherence", 3, dim, "2026-01-01")


def items() -> list[dict[str, str]]:
    """12 items, each naming itself in its summary so the server can answer it its own reply."""
    return [
        {
            "id": f"item-{i:02d}",
            "document": f"Document {i}: the cat sat.\nIt purred.",
            "summary": f"summary number {i}.",
        }
        for i in range(len(DISTRIBUTIONS))
    ]


def reply_for(body: dict) -> dict[str, float]:
    """The server's distribution for the item named in the request's message."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
    return next(
        DISTRIBUTIONS[i] for i in reversed(range(len(DISTRIBUTIONS))) if f"summary number {i}." in text
    )


def run_inspect(
    tmp_path: Path, prompt: FrozenPrompt, server: FaultServer, pass_at: float | None = 3.5
) -> dict:
    """`inspect eval` of the exported file on the 12 items against `server`: the JSON log."""
    python = inspect_python()
    (tmp_path / "task.py").write_text(export_for_tool(prompt, "inspect", pass_at=pass_at), encoding="utf-8")
    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in items()), encoding="utf-8"
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "LOOPBACK_BASE_URL": server.base_url,
        "LOOPBACK_API_KEY": "sk-loopback",
        "INSPECT_DISPLAY": "none",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [
            python,
            "-m",
            "inspect_ai",
            "eval",
            "task.py",
            "--model",
            f"openai-api/loopback/{MODEL}",
            "-T",
            "dataset=items.jsonl",
            "--log-format",
            "json",
            "--log-dir",
            "logs",
            "--display",
            "none",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [log] = (tmp_path / "logs").glob("*.json")
    data = json.loads(log.read_text(encoding="utf-8"))
    assert data["status"] == "success", json.dumps(data.get("error"))[:3000]
    return data


def test_real_inspect_eval_scores_every_item_as_the_workbench_does(tmp_path):
    prompt = frozen()
    with FaultServer(distribution=reply_for) as server:
        workbench = {
            item["id"]: score_item(
                prompt, {k: item[k] for k in ("document", "summary")}, base_url=server.base_url
            )
            for item in items()
        }
        sent_by_workbench = [body for _, body in server.log]
        server.log.clear()
        log = run_inspect(tmp_path, prompt, server)
        sent_by_inspect = [body for _, body in server.log]
    scores = {s["id"]: s["scores"]["geval_judge"] for s in log["samples"]}
    got = {item_id: (None if math.isnan(s["value"]) else s["value"]) for item_id, s in scores.items()}
    expected = {item_id: judgment.score for item_id, judgment in workbench.items()}
    print("\nitem: Inspect score / workbench score")
    for item_id in sorted(expected):
        print(f"{item_id}: {got[item_id]} / {expected[item_id]}")
    assert got == expected  # equal, not close: the same reply, the same arithmetic
    assert (
        expected["item-00"] == pytest.approx(3.1 / 0.95) and scores["item-00"]["answer"] == "3"
    )  # the worked example
    assert expected["item-03"] is None and "(the floor is 50%)" in scores["item-03"]["reason"]
    assert expected["item-09"] is None and expected["item-01"] == pytest.approx(4.9)
    for item_id, s in scores.items():  # an item without a score says why
        if got[item_id] is None:
            assert s["reason"] and s["metadata"]["content_hash"] == prompt.id
    # The same message and the frozen decoding, item by item.
    assert len(sent_by_inspect) == len(sent_by_workbench) == 12
    by_item = {json.dumps(body["messages"]): body for body in sent_by_workbench}
    for body in sent_by_inspect:
        assert body["messages"] in [
            list(messages(prompt, {k: item[k] for k in ("document", "summary")})) for item in items()
        ]
        ours = by_item[json.dumps(body["messages"])]
        assert {
            k: body[k] for k in ("model", "logprobs", "top_logprobs", "temperature", "max_tokens", "seed")
        } == {k: ours[k] for k in ("model", "logprobs", "top_logprobs", "temperature", "max_tokens", "seed")}
    # The pass rule (--pass-at 3.5): the passed metric is the share of scored items at or above it.
    metrics = log["results"]["scores"][0]["metrics"]
    scored = [v for v in expected.values() if v is not None]
    assert metrics["passed"]["value"] == sum(v >= 3.5 for v in scored) / len(scored)
    assert metrics["mean"]["value"] == pytest.approx(sum(scored) / len(scored), rel=1e-12)


def test_real_inspect_eval_in_auto_mode_falls_back_to_sampling_as_the_workbench_does(tmp_path):
    prompt = frozen(mode="auto", n=4, temperature=0.9)

    def no_logprobs(_index: int, body: dict) -> str:  # a server that never gives log-probabilities
        return "nologprobs" if body.get("logprobs") else "ok"

    with FaultServer(script=no_logprobs, distribution=reply_for) as server:
        workbench = {
            item["id"]: score_item(
                prompt, {k: item[k] for k in ("document", "summary")}, base_url=server.base_url
            )
            for item in items()
        }
        server.log.clear()
        log = run_inspect(tmp_path, prompt, server, pass_at=None)
        sent = [body for _, body in server.log]
    got = {s["id"]: s["scores"]["geval_judge"] for s in log["samples"]}
    assert {k: (None if math.isnan(s["value"]) else s["value"]) for k, s in got.items()} == {
        k: j.score for k, j in workbench.items()
    }
    assert all(j.fallback for j in workbench.values()) and all(
        s["metadata"]["fallback"] for s in got.values()
    )
    assert got["item-00"]["value"] == 3.5 and got["item-00"]["metadata"]["values"] == [3, 3, 4, 4]
    assert [(b.get("logprobs"), b.get("n"), b["temperature"]) for b in sent].count((None, 4, 0.9)) == 12


# ---- the scoring rules against geval_core's, on token lists the loopback server cannot send ------------------------
RATING_POOL = ["0", "1", "2", "3", "4", "5", "9", "10", " 3", "\u25814", "\u01205", "-", "-1", "-2"]
OTHER_POOL = ["\u2212", "<think>", "</think>", "The", " ", "\n", "Score", ":", "\u0663", "\u00b2", "1.", "x"]
POOL = RATING_POOL * 3 + OTHER_POOL
# Replies the rules must read over several tokens: a closed <think> block, "1" "0" on 1-10, "-" "1" on -2..2.
SPELLED = [
    (
        "1-5",
        [
            ("<think>", -0.01, []),
            ("hm", -0.2, []),
            ("</think>", -0.01, []),
            (" 4", -0.4, [(" 4", -0.4), (" 3", -1.6), ("5", -2.6)]),
        ],
    ),
    ("1-10", [("1", -0.2, [("1", -0.2), ("9", -2.0)]), ("0", -0.1, [("0", -0.1), ("\n", -2.5)])]),
    ("-2-2", [("-", -0.3, [("-", -0.3), ("2", -1.6)]), ("1", -0.4, [("1", -0.4), ("2", -1.2)])]),
]


def random_reply(rng: random.Random) -> list[tuple[str, list | None]]:
    """One or two replies of 1-5 positions, each a chosen token and up to 20 alternatives."""
    replies = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        positions = []
        for _ in range(rng.randint(1, 5)):
            tokens = rng.sample(POOL, rng.randint(1, 8))
            weights = [rng.random() ** 3 for _ in tokens]
            total = sum(weights) / rng.uniform(0.5, 1.0)
            top = [(t, math.log(w / total) if w > 0 else -50.0) for t, w in zip(tokens, weights, strict=True)]
            if rng.random() < 0.02:  # now and then an impossible value, or one a hair above 0 (rounding)
                top[0] = (top[0][0], rng.choice([float("nan"), 0.5, 5e-7]))
            chosen = top[0] if rng.random() < 0.8 else (rng.choice(POOL), math.log(rng.uniform(0.01, 0.5)))
            positions.append((chosen[0], chosen[1], top))
        replies.append(("".join(p[0] for p in positions), positions))
    return replies


def workbench_score(replies: list, scale: Scale, floor: float) -> tuple[float | None, float | None]:
    """geval_core's score and valid mass of one reply (None when it has none or is impossible)."""
    reply = JudgeReply(
        tuple(
            Choice(
                text,
                tuple(Position(t, lp, tuple(TopLogprob(a, b) for a, b in top)) for t, lp, top in positions),
            )
            for text, positions in replies
        ),
        "m",
    )
    if reply_problem(reply, scale.points) is not None:
        return None, None
    judgment = judgment_of("x", reply, scale, "logprobs", floor=floor)
    return judgment.score, (judgment.valid_mass if judgment.score is not None else None)


SAMPLED = [
    "4",
    " 3.5 - good",
    "Score: 4",
    "<think>hm</think> 2",
    "<think>unclosed 3",
    "10",
    "-1",
    "4th",
    "3.",
    "3.0",
    "+2",
    "\u0663",
    "5\n",
    "2.5x",
    "-0",
    "</think>1",
    "",
]
CHECK = """\
import importlib.util, json, sys
cases = json.load(open(sys.argv[1]))
modules = {}
for key, path in cases["files"].items():
    spec = importlib.util.spec_from_file_location("export_" + key.replace("-", "m"), path)
    modules[key] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(modules[key])
out = []
for case in cases["logprobs"]:
    result = modules[case["scale"]].logprobs_result([(t, [(a, b, [tuple(x) for x in c]) for a, b, c in p])
                                                    for t, p in case["replies"]])
    out.append([result["score"], result.get("valid_mass") if result["score"] is not None else None])
sampled = [modules[key].sampled_result(texts)["score"] for key, texts in cases["sampled"]]
json.dump({"logprobs": out, "sampled": sampled}, open(sys.argv[2], "w"))
"""


def test_the_exported_rules_equal_geval_cores_on_random_token_lists(tmp_path):
    python = inspect_python()
    scales = {"1-5": Scale(1, 5), "1-10": Scale(1, 10), "-2-2": Scale(-2, 2)}
    files = {}
    for key, scale in scales.items():
        files[key] = str(tmp_path / f"export_{len(files)}.py")
        Path(files[key]).write_text(
            export_for_tool(frozen(scale, valid_mass_floor=0.5), "inspect"), encoding="utf-8"
        )
    rng = random.Random(41)
    cases = [
        {"scale": key, "replies": [("".join(p[0] for p in positions), positions)]}
        for key, positions in SPELLED
    ]
    cases += [{"scale": rng.choice(list(scales)), "replies": random_reply(rng)} for _ in range(3000)]
    sampled = [(rng.choice(list(scales)), rng.sample(SAMPLED, rng.randint(1, 6))) for _ in range(300)]
    (tmp_path / "cases.json").write_text(json.dumps({"files": files, "logprobs": cases, "sampled": sampled}))
    (tmp_path / "check.py").write_text(CHECK, encoding="utf-8")
    done = subprocess.run(
        [python, "check.py", "cases.json", "out.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    expected = [list(workbench_score(case["replies"], scales[case["scale"]], 0.5)) for case in cases]
    assert out["logprobs"] == expected
    assert all(score is not None for score, _ in expected[: len(SPELLED)])
    assert (
        600 < sum(score is not None for score, _ in expected) < 2400
    )  # scored and unscored both well represented
    assert out["sampled"] == [sampled_score(texts, scales[key]).score for key, texts in sampled]


# ---- the file itself, without Inspect -------------------------------------------------------------------------------
def test_every_string_of_the_prompt_stays_a_literal_and_renders_as_the_workbench_does():
    prompt = frozen(name=HOSTILE)
    text = export_for_tool(prompt, "inspect")
    tree = ast.parse(text)
    compile(tree, "task.py", "exec")
    code = " ".join(
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type not in (tokenize.COMMENT, tokenize.STRING)
    )
    assert "os.system" not in code and "evil" not in code  # the payload lives in literals and comments only
    comments = [line for line in text.split("\n") if line.startswith("#")]
    assert not any(mark in line for line in comments for mark in "\r\u2028\u2029\x85")  # one line each
    kept = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign)
        and getattr(n.targets[0], "id", "") == "PROMPT"
        or isinstance(n, ast.FunctionDef)
        and n.name == "render"
    ]
    namespace: dict = {}
    exec(compile(ast.Module(body=kept, type_ignores=[]), "task.py", "exec"), namespace)
    fields = {"document": "Doc {summary} {{ x }}", "summary": "Sum \"'\n"}
    assert namespace["render"](fields) == render(prompt, fields)
    values = {
        t.targets[0].id: ast.literal_eval(t.value)
        for t in tree.body
        if isinstance(t, ast.Assign)
        and getattr(t.targets[0], "id", "") in ("CONTENT_HASH", "INPUTS", "SCALE", "PASS_AT")
    }
    assert values == {
        "CONTENT_HASH": prompt.id,
        "INPUTS": ("document", "summary"),
        "SCALE": (1, 5),
        "PASS_AT": None,
    }
    assert f"Content hash (the prompt's identity; name and version are labels): {prompt.id}" in text


@pytest.mark.parametrize(
    ("judge", "logprobs", "sampling", "notes"),
    [
        (
            {},
            "GenerateConfig(temperature=0.0, max_tokens=5, logprobs=True, top_logprobs=20, seed=7)",
            "None",
            [],
        ),
        (
            {"mode": "sampling", "n": 5, "temperature": 0.7},
            "None",
            "GenerateConfig(temperature=0.7, max_tokens=5, num_choices=5, seed=7)",
            ["n=5", "the sampling reducer"],
        ),
        (
            {"mode": "auto", "n": 3, "temperature": 1.0, "reasoning_effort": "low"},
            "GenerateConfig(temperature=1.0, max_tokens=5, logprobs=True, top_logprobs=20, num_choices=3, seed=7, "
            "reasoning_effort='low')",
            "GenerateConfig(temperature=1.0, max_tokens=5, num_choices=3, seed=7, reasoning_effort='low')",
            ["n=3", "the sampling reducer", "a reasoning model's budget"],
        ),
    ],
)
def test_the_frozen_decoding_and_the_notes_follow_the_prompts_mode(judge, logprobs, sampling, notes):
    text = export_for_tool(frozen(**judge), "inspect")
    assert f"LOGPROBS_CONFIG = {logprobs}\n" in text and f"SAMPLING_CONFIG = {sampling}\n" in text
    listed = [line[4:] for line in text.splitlines() if line.startswith("# - ")]
    assert [line.split(":")[0] for line in listed[3:]] == notes
    assert "--model openai/fault-model-2024-01-01" in text


def test_the_embedded_judge_is_named_as_a_loss_with_its_priming():
    text = export_for_tool(frozen(provider="local", model="smollm2-135m-instruct"), "inspect")
    [note] = [line for line in text.splitlines() if line.startswith("# - the embedded judge")]
    assert "primed with the form's '- Coherence: '" in note and "--model MODEL " in text


def test_the_cli_and_the_library_page_offer_the_inspect_export(tmp_path, monkeypatch, downloads):
    from app_support import open_page, use_temp_library
    from click.testing import CliRunner

    from geval_core.cli import cli
    from prompt_library import Library

    assert "inspect" in FORMATS and tool_filename(frozen(), "inspect") == "coherence@3.inspect.py"
    lib_path = use_temp_library(tmp_path, monkeypatch)
    prompt = Library(lib_path).get_prompt("coherence")
    done = CliRunner().invoke(
        cli,
        ["prompts", "export", "coherence", "--format", "inspect", "--pass-at", "3", "--db", str(lib_path)],
    )
    assert done.exit_code == 0, done.output
    assert done.output == export_for_tool(prompt, "inspect", pass_at=3.0) and "PASS_AT = 3.0" in done.output
    at = open_page("library")
    at.radio(key="lib_format").set_value("inspect").run()
    assert not at.exception and not at.error
    assert downloads(at, "Download") == export_for_tool(prompt, "inspect")
