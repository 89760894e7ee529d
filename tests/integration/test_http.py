"""The real HTTP path: ChatOpenAI talking to a local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from self_refine import create_self_refine_graph, refine
from self_refine.cli.main import main
from tests.conftest import run_cli
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."
ROLES_OF_A_FULL_RUN = ["generator", "critic"] + ["refiner", "critic"] * 3


def chat_model(server: OpenAIServer, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="test-model",
        base_url=server.base_url,
        api_key=SecretStr("unused"),
        max_retries=0,
        **options,
    )


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    result = json.loads(out) if code == 0 else {}
    return code, result, err


def test_cli_run_against_an_openai_compatible_server(server: OpenAIServer, workdir: Path) -> None:
    done = run_cli("run", TASK, "--model", "test-model", "--base-url", server.base_url, cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "[critique] iteration 0  score 0.40  done false  (llm)" in done.stdout
    assert "Stopped: critic_done after 3 refine step(s); score 1.00" in done.stdout
    requests = server.chat_requests()
    assert [r.role for r in requests] == ROLES_OF_A_FULL_RUN
    assert {r.body["model"] for r in requests} == {"test-model"}
    for request in requests:
        response_format = request.body.get("response_format") or {}
        if request.role == "critic":
            assert response_format["type"] == "json_schema"
            schema = response_format["json_schema"]["schema"]
            assert set(schema["properties"]) == {"feedback", "score", "done"}
        else:
            assert response_format == {}


def test_cli_prints_tokens_the_server_reported(
    server: OpenAIServer, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, _ = cli_json(
        capsys, "run", TASK, "--model", "test-model", "--base-url", server.base_url, "--json"
    )
    assert code == 0
    state = json.loads(_show(capsys, result["thread_id"]))
    prompt_words = sum(
        len(str(m.get("content", "")).split()) for r in server.chat_requests() for m in r.messages
    )
    assert state["usage"]["input_tokens"] == prompt_words
    assert state["usage"]["output_tokens"] > 0


def _show(capsys: pytest.CaptureFixture[str], thread: str) -> str:
    assert main(["show", thread, "--json"]) == 0
    return capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_streaming_chat_model_gives_the_same_run(server: OpenAIServer) -> None:
    plain = refine(TASK, model=chat_model(server))
    server.requests.clear()
    streamed_model = chat_model(server, streaming=True, stream_usage=True)
    graph = create_self_refine_graph(streamed_model).compile()
    nodes: list[str] = []
    for chunk in graph.stream({"task": TASK}, stream_mode="updates"):
        nodes.extend(chunk)
    requests = server.chat_requests()
    assert [r.role for r in requests] == ROLES_OF_A_FULL_RUN
    assert all(r.body.get("stream") is True for r in requests)
    assert nodes == ["begin", "generate", "critique"] + ["refine", "critique"] * 3 + ["finalize"]
    streamed = graph.invoke({"task": TASK})
    assert streamed["attempts"] == plain["attempts"]
    assert streamed["usage"]["total_tokens"] > 0


def test_server_without_structured_output_gets_plain_text_critiques(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer(structured_output=False) as server:
        code, result, err = cli_json(
            capsys, "run", TASK, "--model", "test-model", "--base-url", server.base_url, "--json"
        )
        critic = server.chat_requests("critic")
    assert code == 0, err
    assert result["stop_reason"] == "critic_done"
    assert [a["critique"]["score"] for a in result["attempts"]][-1] == 1.0
    kinds = [(r.body.get("response_format") or {}).get("type") for r in critic]
    assert kinds[:2] == ["json_schema", "json_object"], "each structured way is tried once"
    assert kinds[2:] == [None] * 4, "then every critique asks for plain text"


def test_malformed_critique_is_asked_again_and_the_run_goes_on(
    server: OpenAIServer, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = refine(TASK, model=chat_model(server))
    server.fail_next("malformed", times=1, role="critic")
    faulty = refine(TASK, model=chat_model(server))
    problems = faulty["attempts"][0].pop("problems")
    assert "asked again in plain text" in problems[0]
    assert faulty["attempts"] == clean["attempts"]
    faults = [r.fault for r in server.chat_requests("critic")]
    assert faults.count("malformed") == 1


def test_bad_input_makes_no_request(
    server: OpenAIServer, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--base-url", server.base_url]
    for args in (
        ["", "--model", "test-model"],
        [TASK, "--model", "test-model", "--max-iterations", "-1"],
        [TASK, "--model", "test-model", "--candidates", "0"],
        [TASK, "--model", "test-model", "--score-threshold", "2"],
        [TASK, "--model", "bad model!"],
        [TASK, "--model", "test-model", "--critic-model", "two words"],
    ):
        code = main(["run", *args, *url])
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert err.count("\n") == 1
    assert server.chat_requests() == []


def test_failure_mid_run_exits_1_then_resume_finishes_the_same_run(
    server: OpenAIServer, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--model", "test-model", "--base-url", server.base_url]
    code, whole, _ = cli_json(capsys, "run", TASK, *url, "--json", "--thread-id", "whole")
    assert code == 0

    server.fail_next("500", times=10, role="refiner")
    code = main(["run", TASK, *url, "--thread-id", "cut", "--strategy", "refine"])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.count("\n") == 1
    assert f"model 'test-model' at {server.base_url} failed: " in err
    assert "Error code: 500" in err
    assert "continue with: self-refine resume cut --db .self-refine/checkpoints.sqlite" in err
    assert "[critique] iteration 0" in out

    server.clear_faults()
    before = len(server.chat_requests())
    code, resumed, err = cli_json(capsys, "resume", "cut", "--json")
    assert code == 0, err
    assert resumed["attempts"] == whole["attempts"]
    assert resumed["stop_reason"] == "critic_done"
    roles = [r.role for r in server.chat_requests()[before:]]
    assert roles == ["refiner", "critic"] * 3, "resume does not redo finished steps"


def test_resume_uses_the_settings_the_thread_started_with(
    server: OpenAIServer, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.fail_next("500", times=10, role="refiner")
    args = ["--model", "test-model", "--base-url", server.base_url, "--max-iterations", "1"]
    assert main(["run", TASK, *args, "--thread-id", "t"]) == 1
    capsys.readouterr()
    server.clear_faults()
    code, resumed, err = cli_json(capsys, "resume", "t", "--json")
    assert code == 0, err
    assert (resumed["stop_reason"], resumed["iterations"]) == ("max_iterations", 1)
    assert {r.body["model"] for r in server.chat_requests()} == {"test-model"}


def test_server_model_ids_with_a_tag_pass_through(
    server: OpenAIServer, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, err = cli_json(
        capsys, "run", TASK, "--model", "llama3.1:8b", "--base-url", server.base_url, "--json"
    )
    assert code == 0, err
    assert result["stop_reason"] == "critic_done"
    assert {r.body["model"] for r in server.chat_requests()} == {"llama3.1:8b"}


def test_a_server_that_fails_json_schema_with_http_500_steps_down_once(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The unmodified llama-cpp-python server answers a json_schema format with HTTP 500
    # ("Input should be 'text' or 'json_object'"); json_object works there.
    with OpenAIServer(json_schema_status=500) as server:
        code, result, err = cli_json(
            capsys, "run", TASK, "--model", "test-model", "--base-url", server.base_url, "--json"
        )
        critic = server.chat_requests("critic")
    assert code == 0, err
    kinds = [(r.body.get("response_format") or {}).get("type") for r in critic]
    probes = kinds.index("json_object")
    assert kinds[:probes] == ["json_schema"] * probes
    assert probes <= 3, "one call (with the client's own two retries of an HTTP 500)"
    assert kinds[probes:] == ["json_object"] * (len(kinds) - probes), "the step is remembered"
    assert len(kinds) - probes >= 2
    assert result["stop_reason"] == "critic_done"


def test_each_role_asks_with_its_profile_reply_cap_unless_max_tokens_says(
    server: OpenAIServer,
) -> None:
    concepts = {"concepts": ["dog", "frisbee", "park", "catch"]}
    refine(
        TASK,
        model="test-model",
        base_url=server.base_url,
        profile="constrained_generation",
        reference=concepts,
        max_iterations=1,
        strategy="refine",
    )
    caps = {r.role: r.body["max_tokens"] for r in server.chat_requests()}
    assert caps == {"generator": 160, "critic": 384, "refiner": 160}
    server.requests.clear()
    refine(TASK, model="test-model", base_url=server.base_url, max_tokens=99, max_iterations=1)
    assert {r.body["max_tokens"] for r in server.chat_requests()} == {99}


def _draw(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """A server that samples the same way every time: its reply is a function of the request."""
    if "Role: critic" in str(messages[0].get("content")):
        return json.dumps({"feedback": ["Name the park."], "score": 0.5, "done": False})
    return f"A dog runs in the park (seed {request.get('seed')}, t {request.get('temperature')})."


def test_candidates_to_a_server_are_requests_of_their_own(workdir: Path) -> None:
    with OpenAIServer(responder=_draw) as server:
        base = ("--model", "test-model", "--base-url", server.base_url, "--max-iterations", "0")
        done = run_cli("run", TASK, *base, "--candidates", "4", "--json", cwd=workdir)
        assert done.returncode == 0, done.stderr
        bodies = [r.body for r in server.chat_requests("generator")]
        assert len({json.dumps(b, sort_keys=True) for b in bodies}) == 4
        assert len({b.get("seed") for b in bodies}) == 4
        (attempt,) = json.loads(done.stdout)["attempts"]
        drafts = {attempt["draft"], *(c["draft"] for c in attempt["candidates"])}
        assert len(drafts) == 4, "four different requests, four different drafts"

        server.requests.clear()
        done = run_cli(
            "run", TASK, *base, "--candidates", "3", "--temperature", "0.7", "--seed", "5",
            cwd=workdir,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        bodies = [r.body for r in server.chat_requests("generator")]
        assert [b["temperature"] for b in bodies] == [0.7] * 3
        assert sorted(b["seed"] for b in bodies)[0] == 5 and len({b["seed"] for b in bodies}) == 3
