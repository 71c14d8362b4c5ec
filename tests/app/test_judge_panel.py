"""AppTest, issue 11 in the app: server presets, the sidebar's Test judge (against the loopback judges), the
Score page reading the latest test, the reasoning-effort input on the Design page, and a batch run."""

from __future__ import annotations

import math
import socket
from dataclasses import replace

import pytest
from app_support import metric, open_design, open_page, plain, use_temp_library, values
from judge_fakes import FakeJudges, rating_of
from runner_helpers import dimension

from geval_core import prompts
from geval_core.diagnostics.judge_probe import latest_probe
from geval_core.prompts import content_hash
from geval_core.providers.capabilities import NO_LOGPROBS, PRESETS, preset_summary
from geval_core.run.cost import estimate_cost
from geval_core.types import JudgeSettings, Scale
from prompt_library import Library


def split_chat(body: dict) -> tuple[int, dict]:
    """A compatible server whose tokenizer writes numbers one digit per token ("10" -> "1", "0")."""
    counting = body["messages"][0]["content"].startswith("Count from")
    texts = ["1", *[f" {k}" for k in range(2, 10)], " 1", "0"] if counting else ["7"]
    alternatives = [{"token": "7", "logprob": -0.1}, {"token": "8", "logprob": -2.5}]
    content = [
        {"token": t, "logprob": -0.01, "top_logprobs": alternatives[: body.get("top_logprobs", 0)]}
        for t in texts
    ]
    choices = [
        {
            "index": i,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "".join(texts)},
            "logprobs": {"content": content} if body.get("logprobs") else None,
        }
        for i in range(body.get("n", 1))
    ]
    return 200, {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "splitter-1-q4",
        "choices": choices,
        "usage": {"prompt_tokens": 20, "completion_tokens": len(texts), "total_tokens": 20 + len(texts)},
    }


class Judges(FakeJudges):
    """The loopback judges of tests/judge_fakes.py, plus "splitter-*" models (split_chat)."""

    def route(self, method, path, body, data, headers):
        if path == "/v1/chat/completions" and body["model"].startswith("splitter"):
            return split_chat(body)
        return super().route(method, path, body, data, headers)


@pytest.fixture(scope="module")
def fake():
    server = Judges()
    yield server
    server.close()


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def compatible(at, url: str, model: str):
    """Choose an OpenAI-compatible server and a model in the sidebar."""
    at.sidebar.selectbox(key="sb_judge").set_value("compatible").run()
    at.sidebar.text_input(key="sb_base_url").set_value(url).run()
    at.sidebar.text_input(key="sb_model_compatible").set_value(model).run()
    return at


def click_test_judge(at):
    """Click Test judge; the facts block the sidebar shows, as lines."""
    at.sidebar.button(key="sb_test_judge").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.sidebar.code[0].value.splitlines()


def sidebar_judge_on_score_page(at):
    at.switch_page("app_pages/score.py").run()
    at.radio(key="score_judge_source").set_value("sidebar").run()
    return at


def test_presets_fill_the_base_url_and_say_what_the_server_returns(lib_path):
    at = open_page()
    at.sidebar.selectbox(key="sb_judge").set_value("compatible").run()
    assert at.sidebar.selectbox(key="sb_preset").value == "llama.cpp"
    assert at.sidebar.text_input(key="sb_base_url").value == "http://127.0.0.1:8080/v1"
    for key, url in (
        ("vllm", "http://127.0.0.1:8000/v1"),
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("lm-studio", "http://127.0.0.1:1234/v1"),
    ):
        at.sidebar.selectbox(key="sb_preset").set_value(key).run()
        assert at.sidebar.text_input(key="sb_base_url").value == url == PRESETS[key].base_url
        assert preset_summary(PRESETS[key]) in values(at.sidebar.caption)
    at.sidebar.selectbox(key="sb_preset").set_value("other").run()
    assert at.sidebar.text_input(key="sb_base_url").value == "http://127.0.0.1:1234/v1"  # kept: yours to edit
    assert "What this server returns is not known: Test judge measures it." in values(at.sidebar.caption)


def test_test_judge_keeps_the_probe_and_the_score_page_refuses_logprobs_mode(lib_path, fake):
    url = f"{fake.url}/v1"
    at = compatible(
        open_page(), url, "reasoner-2"
    )  # reasons, though no model list says so: only a probe knows
    at = sidebar_judge_on_score_page(at)
    assert not at.error and not at.button(key="score_start").disabled  # untested: nothing known against it
    lines = click_test_judge(at)
    assert lines[:6] == [
        "reachable: yes",
        "model version: reasoner-2-2026-01-01",
        "log-probabilities: no",
        "top_logprobs max: unknown",
        "single-token ratings: yes",
        "n honoured: yes",
    ]
    assert (
        lines[6].startswith("latency: ") and lines[6].endswith(" s") and lines[7] == "cost per item: unpriced"
    )
    kept = latest_probe(Library(lib_path), JudgeSettings(provider="openai", model="reasoner-2", base_url=url))
    assert (kept["reachable"], kept["logprobs"], kept["n_honoured"]) == (True, False, True)
    assert lines[8] == f"tested: {kept['probed_at']}"
    assert any(w.startswith(NO_LOGPROBS) for w in values(at.sidebar.warning))
    # The Score page (same script run) read the probe: a logprobs prompt cannot start with this judge.
    assert f"{NO_LOGPROBS} (openai:reasoner-2)" in values(at.main.error)
    assert at.button(key="score_start").disabled
    assert f"This judge's latest test: {kept['probed_at']}." in values(at.caption)


def test_test_judge_names_a_split_ten_and_the_score_page_warns_on_a_1_to_10_prompt(lib_path, fake):
    ten = (
        Library(lib_path)
        .freeze(
            dimension(name="Relevance", scale=Scale(1, 10), anchors={i: f"level {i}" for i in range(1, 11)})
        )
        .prompt
    )
    at = compatible(open_page(), f"{fake.url}/v1", "splitter-1")
    at.sidebar.radio(key="sb_probe_scale").set_value(10).run()
    lines = click_test_judge(at)
    assert lines[:6] == [
        "reachable: yes",
        "model version: splitter-1-q4",
        "log-probabilities: yes",
        "top_logprobs max: 2",
        'single-token ratings: no: 10 comes back as "1", "0"',
        "n honoured: yes",
    ]
    assert values(at.sidebar.warning)[0].startswith("this judge splits 10 into several tokens")
    at = sidebar_judge_on_score_page(at)
    at.selectbox(key="score_prompt").set_value(f"{ten.name}@{ten.version}").run()
    warned = [w for w in values(at.main.warning) if w.startswith("this judge splits 10")]
    assert len(warned) == 1 and not at.button(key="score_start").disabled  # a warning, not a refusal
    at.selectbox(key="score_prompt").set_value("coherence@1").run()  # 1-5: the split 10 does not matter
    assert not [w for w in values(at.main.warning) if "splits" in w]


def test_test_judge_failures_are_shown_as_text(lib_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    at = compatible(open_page(), f"http://127.0.0.1:{port}/v1", "nobody")
    lines = click_test_judge(at)
    assert lines[0] == "reachable: no" and "log-probabilities: unknown" in lines
    assert "UnreachableError" in at.sidebar.code[1].value  # what went wrong, verbatim and unformatted
    at.sidebar.selectbox(key="sb_judge").set_value("openai").run()
    at.sidebar.button(key="sb_test_judge").click().run()
    assert not at.exception
    assert "The judge test could not start:" in values(at.sidebar.error)
    assert "OPENAI_API_KEY" in at.sidebar.code[0].value


def test_reasoning_effort_is_offered_for_reasoning_models_and_changes_the_hash(lib_path):
    at = open_design()
    assert "design_reasoning_effort" not in [s.key for s in at.selectbox]  # the local judge does not reason
    at.sidebar.selectbox(key="sb_judge").set_value("openai").run()
    assert "design_reasoning_effort" not in [s.key for s in at.selectbox]  # gpt-4o-mini neither
    at.sidebar.text_input(key="sb_model_openai").set_value("gpt-5-mini-2025-08-07").run()
    at.selectbox(key="design_mode").set_value("sampling")
    at.number_input(key="design_n").set_value(3)
    at.number_input(key="design_temperature").set_value(1.0).run()
    assert at.selectbox(key="design_reasoning_effort").value == "default"
    lib = Library(lib_path)
    frozen = {}
    for effort in ("high", "low", "default"):
        before = {p["id"] for p in lib.list_prompts()}
        at.selectbox(key="design_reasoning_effort").set_value(effort).run()
        at.button(key="design_freeze").click().run()
        assert not at.exception and not at.main.error, values(at.main.error)
        [new_id] = {p["id"] for p in lib.list_prompts()} - before
        newest = lib.get_prompt(new_id)
        frozen[effort] = newest
        assert newest.dimension.judge.model == "gpt-5-mini-2025-08-07"
        assert newest.dimension.judge.reasoning_effort == (None if effort == "default" else effort)
        assert newest.id == content_hash(newest.dimension)
    assert len({p.id for p in frozen.values()}) == 3  # every effort is another metric
    high = frozen["high"].dimension
    assert content_hash(replace(high, judge=replace(high.judge, reasoning_effort="low"))) == frozen["low"].id


def expected_score(prompt, item) -> float:
    """The loopback judge's weighted score for one item, by hand: its two ratings at e^-0.2 and e^-1.9."""
    best, top = rating_of("".join(m["content"] for m in prompts.messages(prompt, item)))
    (b, lb), (o, lo) = top[0], top[1]
    return (int(b) * math.exp(lb) + int(o) * math.exp(lo)) / (math.exp(lb) + math.exp(lo))


def test_score_page_batch_of_the_sealed_test_side_is_planned_and_recorded_as_a_use(lib_path, fake):
    from geval_core.run.splits import make_split, sealed_uses

    lib = Library(lib_path)
    dataset = lib.get_dataset("sample")
    split, _ = make_split(lib, dataset.id, 0.5, None, 3)
    at = sidebar_judge_on_score_page(compatible(open_page(), f"{fake.url}/v1", "gpt-4o-mini"))
    at.radio(key="score_side").set_value("test").run()
    at.toggle(key="score_batch_on").set_value(True).run()
    assert metric(at, "Batch requests") == str(len(split["test"]))
    assert sealed_uses(lib, split) == []  # choosing the side is no use; sending it is
    at.button(key="score_batch_submit").click().run()
    assert not at.exception and not at.main.error, values(at.main.error)
    [run] = lib.list_runs()
    assert set(run.item_ids) == set(split["test"]) and run.plan["side"] == "test"
    assert run.plan["server"] == f"{fake.url}/v1"
    assert [u["run_id"] for u in sealed_uses(lib, split)] == [run.id]


def test_score_page_sends_a_batch_checks_it_and_collects_scores_like_a_live_run(lib_path, fake):
    at = sidebar_judge_on_score_page(compatible(open_page(), f"{fake.url}/v1", "gpt-4o-mini"))
    [count] = [w for w in at.number_input if w.label.startswith("Items to score")]
    count.set_value(3).run()
    at.toggle(key="score_batch_on").set_value(True).run()
    lib = Library(lib_path)
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")[:3]
    settings = JudgeSettings(
        **{
            **prompt.dimension.judge.__dict__,
            "provider": "openai",
            "model": "gpt-4o-mini",
            "base_url": f"{fake.url}/v1",
        }
    )
    live_usd = estimate_cost(prompt, items, settings, store=lib)["usd"]
    assert metric(at, "Batch requests") == "3"
    assert metric(at, "Live cost (est.)") == metric(at, "Cost (est.)") == f"${live_usd:.4f}"
    assert metric(at, "Batch cost (est.)") == f"${live_usd * 0.5:.4f}"
    at.button(key="score_batch_submit").click().run()
    assert not at.exception and not at.main.error, values(at.main.error)
    [run] = lib.list_runs()
    batch_id = run.extra["batch_id"]
    assert (run.extra["batch_provider"], run.extra["batch_requests"], run.status) == ("openai", 3, "running")
    assert (
        f"Submitted batch {batch_id} (3 requests): validating. Check its status now and then; collect it when "
        "it has finished." in values(at.success)
    )
    assert not [b for b in at.button if b.key == "score_resume"]  # no live resume while the batch is out
    at.button(key="score_batch_check").click().run()
    assert f"Batch {batch_id}: in_progress: check again later." in values(at.info)
    at.button(key="score_batch_collect").click().run()
    assert not at.exception and not at.main.error, values(at.main.error)
    assert f"Collected batch {batch_id}: 3 scored, 0 errors, 0 collected before." in values(at.success)
    run = lib.get_run(run.id)
    assert run.status == "done" and at.button(key="score_batch_collect").disabled
    scores = {r["item_id"]: r["score"] for r in lib.judgments(run.id)}
    assert scores == pytest.approx({i.id: expected_score(prompt, i) for i in items}, abs=1e-9)
    assert metric(at, "Judged") == "3 / 3"
    assert run.cost_usd == pytest.approx(0.5 * (run.input_tokens * 0.15 + run.output_tokens * 0.60) / 1e6)
    assert plain(f"Batch run: batch {batch_id} at openai") in " ".join(values(at.caption))


def test_no_batch_is_offered_for_a_known_local_server(lib_path):
    """llama.cpp at its default address answers chat completions only: the Score page scores it live."""
    at = sidebar_judge_on_score_page(compatible(open_page(), "http://127.0.0.1:8080/v1", "smollm2"))
    assert not [t for t in at.toggle if t.key == "score_batch_on"]
    assert any("No batch: llama.cpp server serves no Files and Batches APIs" in c for c in values(at.caption))


def test_an_in_process_judge_is_never_said_to_have_a_server(lib_path):
    at = open_page("score")  # the examples are pinned to the in-process local judge
    captions = values(at.caption)
    assert any("This judge was never tested in this library" in c for c in captions)
    assert not any("on this server" in c for c in captions)
    assert any("in process" in c for c in values(at.markdown))  # "Will score with local in process"
