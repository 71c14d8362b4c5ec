"""The promptfoo export run by real promptfoo (from npm; .ci/run installs it): every string a prompt's author
wrote reaches the grader as the same text, and nothing in it runs, reads the environment or loads a file; the
exported pass rule (the assert-set's threshold) decides pass and fail in promptfoo itself, and reasoning_effort reaches the grader exactly
where the file says it does."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest
from faultserver import FaultServer
from needs import missing

from geval_core.files.tool_exports import PROMPTFOO_LOADER_PREFIXES, promptfoo_text
from geval_core.prompts import content_hash, render
from geval_core.providers.exports import export_for_tool
from geval_core.types import Dimension, FrozenPrompt, JudgeSettings, Scale

CANARY = "geval-canary-7f3a9"  # the value of an environment variable no export may print
VERDICT = '{"reason": "fine", "score": 0.75, "pass": true}'


def payloads(marker: Path) -> list[str]:
    """Template and loader tricks against Nunjucks, promptfoo's env renderer and its file/package loaders."""
    write = f"process.getBuiltinModule('fs').writeFileSync('{marker}', 'ran')"
    return [
        f'{{{{ range.constructor("{write}")() }}}}',
        '{{ range.constructor("return process.env.GEVAL_CANARY")() }}',
        "{{ env.GEVAL_CANARY }} {{env['GEVAL_CANARY']}} {{ env.GEVAL_CANARY | upper }}",
        f'{{% set x = range.constructor("{write}")() %}}{{# comment #}}{{% raw %}}raw{{% endraw %}}',
        "${GEVAL_CANARY} $(id) `id` 'single' \"double\" \\ back\nnew line\u2028\x85 é 漢字 🙂 {{{ }}} {",
    ]


def hostile_prompt(marker: Path, first: str) -> FrozenPrompt:
    """A frozen prompt whose name, definition, anchors and steps each start with or hold a payload."""
    tricks = payloads(marker)
    scale = Scale(1, 5)
    dim = Dimension(
        name=f"{first} coherence {tricks[2]}",
        definition=first + " " + " ".join(tricks),
        scale=scale,
        anchors={p: f"{first}anchor {p} {tricks[p - 1]}" for p in scale.points},
        inputs=("document", "summary"),
        steps=tuple(f"{first}{t}" for t in tricks),
        judge=JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18"),
    )
    return FrozenPrompt(content_hash(dim), "hostile", 1, dim, "2026-01-01")


def promptfoo_command() -> tuple[list[str], dict[str, str]]:
    """How to run promptfoo: GEVAL_PROMPTFOO names its bin folder (node 22 and promptfoo), else PATH."""
    if os.environ.get("GEVAL_PROMPTFOO_UNAVAILABLE"):  # set by .ci/run when npm cannot install it
        pytest.skip(os.environ["GEVAL_PROMPTFOO_UNAVAILABLE"])
    bin_dir = os.environ.get("GEVAL_PROMPTFOO_BIN", "")
    path = (bin_dir + os.pathsep if bin_dir else "") + os.environ.get("PATH", "")
    exe = Path(bin_dir, "promptfoo") if bin_dir else None
    if not (exe and exe.is_file()):
        missing(
            "promptfoo (npm, with node >= 22) not found: set GEVAL_PROMPTFOO_BIN to its bin folder "
            "(.ci/run installs it)"
        )
    return [str(exe)], {"PATH": path}


def config_with(assertion_text: str) -> str:
    """A promptfoo config holding the export, byte for byte, as the one assertion of every test."""
    indented = "".join(
        ("      - " if i == 0 else "        ") + line + "\n"
        for i, line in enumerate(assertion_text.splitlines())
    )
    return (
        "prompts:\n  - '{{ summary }}'\nproviders:\n  - echo\n"
        "tests:\n  - vars:\n      document: 'The cat sat on the mat.'\n      summary: 'A cat sat.'\n"
        "    assert:\n" + indented
    )


def promptfoo_eval(
    tmp_path: Path, config: str, distribution: dict, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, list[dict], list[dict]]:
    """promptfoo eval of `config` (written to tmp_path) graded by a loopback server replying `distribution`:
    the finished process (0, or 100 when a test failed), the grader requests, the results in test order."""
    command, env_path = promptfoo_command()
    (tmp_path / "promptfooconfig.yaml").write_text(config, encoding="utf-8")
    with FaultServer(distribution=distribution) as grader:
        env = {
            **env_path,
            "HOME": str(tmp_path),
            "OPENAI_API_KEY": "sk-loopback",
            "OPENAI_BASE_URL": grader.base_url,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(tmp_path / ".promptfoo"),
            "PROMPTFOO_DISABLE_SHARING": "1",
            "NO_COLOR": "1",
            **(extra_env or {}),
        }
        done = subprocess.run(
            [
                *command,
                "eval",
                "-c",
                "promptfooconfig.yaml",
                "-o",
                "out.json",
                "--no-cache",
                "--no-table",
                "--no-progress-bar",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        requests = [body for _, body in grader.log]
    assert done.returncode in (0, 100), done.stdout[-3000:] + done.stderr[-3000:]  # 100: a test failed
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["results"]["results"]
    return done, requests, sorted(results, key=lambda r: r["testIdx"])


def run_promptfoo(
    tmp_path: Path, assertion_text: str, verdict: str, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, list[dict], dict]:
    """promptfoo eval of one test holding the export, graded by a loopback server that replies `verdict`:
    the finished process, the grader requests and the one result."""
    done, requests, [result] = promptfoo_eval(
        tmp_path, config_with(assertion_text), {verdict: 1.0}, extra_env
    )
    return done, requests, result


@pytest.mark.parametrize(
    "first", ["", "file://payload.js ", "package:payload:run ", "file://payload.py:get "]
)
def test_real_promptfoo_sends_the_authors_text_and_runs_none_of_it(tmp_path, first):
    marker = tmp_path / "marker.txt"
    for script in ("payload.js", "payload.py"):  # what a loader would run if it were handed a file:// string
        body = (
            f"require('fs').writeFileSync('{marker}', 'js')"
            if script.endswith("js")
            else f"open({str(marker)!r}, 'w').write('py')\ndef get(*a):\n    return 'x'\n"
        )
        (tmp_path / script).write_text(body, encoding="utf-8")
    prompt = hostile_prompt(marker, first)
    done, requests, result = run_promptfoo(
        tmp_path, export_for_tool(prompt, "promptfoo"), VERDICT, {"GEVAL_CANARY": CANARY}
    )
    assert not marker.exists(), "a payload in the export ran code"
    out = (tmp_path / "out.json").read_text(encoding="utf-8")
    for text in (out, done.stdout, done.stderr, json.dumps(requests)):
        assert CANARY not in text, "a payload in the export read the environment"
    [request] = requests  # one item, one grader call with the export's own grader model
    assert request["model"] == "gpt-4o-mini-2024-07-18"
    sent = request["messages"][-1]["content"]
    expected = render(prompt, {"document": "The cat sat on the mat.", "summary": "A cat sat."})
    assert sent.startswith(expected)  # the rendered G-Eval prompt, every payload in it as plain text
    assert "Reply with only a JSON object" in sent[len(expected) :]
    _, component = result["gradingResult"]["componentResults"]  # the assert-set, then its llm-rubric
    assert component["score"] == 0.75 and component["pass"] is True
    assert result["namedScores"] == {prompt.dimension.name: 0.75}  # the metric is shown as written


def rated_prompt(model: str, reasoning_effort: str | None) -> FrozenPrompt:
    """A plain 1-5 prompt judged by `model`, with a seed and the reasoning effort given."""
    dim = Dimension(
        name="Coherence",
        definition="How well it hangs together.",
        scale=Scale(1, 5),
        anchors={p: f"anchor {p}" for p in range(1, 6)},
        inputs=("document", "summary"),
        steps=("Read it.",),
        judge=JudgeSettings(provider="openai", model=model, seed=11, reasoning_effort=reasoning_effort),
    )
    return FrozenPrompt(content_hash(dim), "rated", 1, dim, "2026-01-01")


# --pass-at 3.5 on 1-5 is threshold (3.5 - 1) / 4 = 0.625 on the rubric's 0-1 score: a judge stating rating 4
# (0.75) passes, rating 3 (0.5) fails; without a pass rule both pass, as the file says.
@pytest.mark.parametrize(
    ("pass_at", "score", "passes"),
    [(3.5, 0.75, True), (3.5, 0.5, False), (3.5, 0.625, True), (None, 0.0, True)],
)
def test_real_promptfoo_applies_the_exported_pass_rule(tmp_path, pass_at, score, passes):
    prompt = rated_prompt("gpt-5-mini-2025-08-07", "low")
    verdict = json.dumps({"reason": "stated", "score": score})  # no "pass": the threshold alone decides
    done, [request], result = run_promptfoo(
        tmp_path, export_for_tool(prompt, "promptfoo", pass_at=pass_at), verdict
    )
    rule, component = result["gradingResult"]["componentResults"]  # the assert-set, then its llm-rubric
    assert (
        rule["score"] == component["score"] == score
        and rule["pass"] is passes
        and result["success"] is passes
    )
    assert done.returncode == (0 if passes else 100)
    assert "threshold" not in request["messages"][-1]["content"]  # the rule is promptfoo's, never the judge's
    # promptfoo takes gpt-5* as a reasoning model: the frozen reasoning_effort and seed reach the grader.
    assert request["reasoning_effort"] == "low" and request["seed"] == 11


def test_real_promptfoo_drops_reasoning_effort_where_the_file_says_it_does(tmp_path):
    prompt = rated_prompt("qwen2.5-7b-instruct", "high")
    text = export_for_tool(prompt, "promptfoo", pass_at=3.5)
    assert "for qwen2.5-7b-instruct it is dropped" in text
    _, [request], result = run_promptfoo(tmp_path, text, json.dumps({"reason": "r", "score": 0.75}))
    assert "reasoning_effort" not in request and request["seed"] == 11 and request["temperature"] == 0.0
    assert result["success"] is True


def random_texts(count: int, seed: int = 1) -> list[str]:
    """Short strings drawn from template, comment, loader and quoting fragments."""
    rng = random.Random(seed)
    pieces = list("{}%#-'\" \n\\ax$`:/") + [
        "{{",
        "}}",
        "{%",
        "%}",
        "{#",
        "#}",
        "{{-",
        "-}}",
        "raw",
        "endraw",
        "file://",
        "package:",
        "FILE:",
        "env.",
        "🙂",
    ]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 14))) for _ in range(count)]


def test_promptfoos_nunjucks_renders_every_escaped_text_back_to_itself(tmp_path):
    command, env_path = promptfoo_command()
    nunjucks = Path(command[0]).parent.parent / "nunjucks"  # node_modules/.bin -> promptfoo's own engine
    texts = random_texts(20000) + payloads(tmp_path / "marker.txt")
    escaped = [promptfoo_text(text) for text in texts]
    assert not any(e.lower().startswith(PROMPTFOO_LOADER_PREFIXES) for e in escaped)
    (tmp_path / "in.json").write_text(json.dumps(escaped), encoding="utf-8")
    script = (
        "const nj = require(process.argv[1]); const env = new nj.Environment();"
        "const xs = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));"
        "const out = xs.map(s => { try { return env.renderString(s, {env: process.env}); }"
        " catch (e) { return 'ERROR ' + e.message; } });"
        "require('fs').writeFileSync(process.argv[3], JSON.stringify(out));"
    )
    done = subprocess.run(
        ["node", "-e", script, str(nunjucks), str(tmp_path / "in.json"), str(tmp_path / "out.json")],
        env={**env_path, "GEVAL_CANARY": CANARY},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rendered = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    wrong = [(text, out) for text, out in zip(texts, rendered, strict=True) if text != out]
    assert wrong == [] and not (tmp_path / "marker.txt").exists()
