"""The OpenAI grader export driven through the installed openai SDK against a loopback server: the Evals API it
used to target is deprecated in the SDK, the graders API it targets now is not, and the file's grader reaches
`client.fine_tuning.alpha.graders.run` / `.validate` intact, with the shapes the SDK's own types declare."""

from __future__ import annotations

import json
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from openai.types.graders.score_model_grader_param import Input, SamplingParams, ScoreModelGraderParam

from geval_core.prompts import content_hash
from geval_core.providers.exports import export_for_tool
from geval_core.types import Dimension, FrozenPrompt, JudgeSettings, Scale

RUN_REPLY = {
    "reward": 4.0,
    "sub_rewards": {},
    "model_grader_token_usage_per_model": {},
    "metadata": {
        "name": "g",
        "type": "score_model",
        "execution_time": 0.1,
        "scores": {},
        "token_usage": 1,
        "sampled_model_name": None,
        "errors": dict.fromkeys(
            (
                "formula_parse_error",
                "invalid_variable_error",
                "model_grader_parse_error",
                "model_grader_refusal_error",
                "model_grader_server_error",
                "other_error",
                "python_grader_runtime_error",
                "python_grader_server_error",
                "sample_parse_error",
                "truncated_observation_error",
                "unresponsive_reward_error",
            ),
            False,
        ),
    },
}


class Recorder:
    """A loopback server answering every POST with a fixed JSON body and recording (path, body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                recorder.posts.append((self.path, body))
                reply = RUN_REPLY if self.path.endswith("/run") else {"grader": body.get("grader"), "id": "x"}
                payload = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        """The server as an OpenAI base URL."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    recorder = Recorder()
    yield recorder
    recorder.close()


def frozen(
    inputs: tuple[str, ...] = ("document", "summary"),
    definition: str = "How well it hangs together.",
    **judge,
) -> FrozenPrompt:
    """A 1-5 prompt judged by an OpenAI model."""
    dim = Dimension(
        name="Coherence",
        definition=definition,
        scale=Scale(1, 5),
        anchors={p: f"anchor {p}" for p in range(1, 6)},
        inputs=inputs,
        steps=("Read it.", "Rate it."),
        judge=JudgeSettings(provider="openai", model="gpt-4o-2024-08-06", **judge),
    )
    return FrozenPrompt(content_hash(dim), "coherence", 2, dim, "2026-01-01")


def client(server: Recorder) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-loopback", base_url=server.base_url, max_retries=0)


def test_the_sdk_deprecates_the_evals_api_and_not_the_graders_api(server):
    sdk = client(server)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sdk.evals.create(data_source_config={"type": "custom", "item_schema": {}}, testing_criteria=[])
    [warning] = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert "shutdown for November 30, 2026" in str(warning.message) and "Promptfoo" in str(warning.message)
    data = json.loads(export_for_tool(frozen(), "openai-grader"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a deprecation of the graders API would fail here
        sdk.fine_tuning.alpha.graders.validate(grader=data["grader"])
        result = sdk.fine_tuning.alpha.graders.run(
            grader=data["grader"], item={"document": "The cat sat."}, model_sample="A cat sat."
        )
    assert result.reward == 4.0


def test_the_grader_reaches_the_graders_api_intact(server):
    prompt = frozen(seed=7)
    data = json.loads(export_for_tool(prompt, "openai-grader"))
    grader = data["grader"]
    client(server).fine_tuning.alpha.graders.run(
        grader=grader, item={"document": "The cat sat."}, model_sample="A cat sat."
    )
    [(path, body)] = server.posts
    assert path == "/v1/fine_tuning/alpha/graders/run"
    assert body == {"grader": grader, "item": {"document": "The cat sat."}, "model_sample": "A cat sat."}
    # Every key is one the SDK's types declare for a score_model grader.
    assert set(grader) <= set(ScoreModelGraderParam.__annotations__)
    assert set(grader["input"][0]) <= set(Input.__annotations__)
    assert set(grader["sampling_params"]) <= set(SamplingParams.__annotations__)
    assert (
        grader["type"] == "score_model"
        and grader["range"] == [1, 5]
        and grader["model"] == "gpt-4o-2024-08-06"
    )
    assert grader["sampling_params"] == {"temperature": 0.0, "seed": 7}
    content = grader["input"][0]["content"]
    assert content.count("{{") == 2 and "{{item.document}}" in content and "{{sample.output_text}}" in content
    assert data["content_hash"] == prompt.id and data["item_fields"] == ["document"]
    assert "pass_threshold" not in data
    assert any("client.fine_tuning.alpha.graders.run" in line for line in data["comment"])
    assert not any("evals.create" in line for line in data["comment"])


@pytest.mark.parametrize(
    ("inputs", "items"), [(("text",), []), (("question", "context", "answer"), ["question", "context"])]
)
def test_the_judged_output_is_the_sample_and_the_other_inputs_the_item(inputs, items):
    data = json.loads(export_for_tool(frozen(inputs), "openai-grader"))
    content = data["grader"]["input"][0]["content"]
    assert data["item_fields"] == items
    assert [f"{{{{item.{name}}}}}" in content for name in items] == [True] * len(items)
    assert f"{{{{item.{inputs[-1]}}}}}" not in content and content.count("{{sample.output_text}}") == 1


def test_the_pass_rule_sits_beside_the_grader_on_its_own_scale():
    data = json.loads(export_for_tool(frozen(), "openai-grader", pass_at=3.5))
    assert data["pass_threshold"] == 3.5 and "pass_threshold" not in data["grader"]
    assert any("result.reward >= pass_threshold" in line for line in data["comment"])


def test_literal_braces_of_the_prompt_cannot_open_a_template_string():
    data = json.loads(export_for_tool(frozen(definition="Keep {{ item.secret }} apart."), "openai-grader"))
    content = data["grader"]["input"][0]["content"]
    assert "Keep { { item.secret }} apart." in content and content.count("{{") == 2
    assert any("'{ {'" in line for line in data["comment"])
