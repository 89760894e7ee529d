"""Typed answers through the real ChatOpenAI client and a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from self_refine import refine
from self_refine.cli.main import main
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Describe a cat as JSON: its name and its age in whole years."
SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
}


class Cat(BaseModel):
    name: str
    age: int


def _cat_writer(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """Generator: an age that is no integer; refiner: a valid cat; critic: the offline one."""
    system = str(messages[0].get("content", ""))
    if system.startswith("Role: generator"):
        return '{"name": "Tom", "age": "old"}'
    if system.startswith("Role: refiner"):
        return '{"name": "Tom", "age": 3}'
    return json.dumps({"feedback": [], "score": 1.0, "done": True})


def _formats(server: OpenAIServer, role: str) -> list[str]:
    return [
        (r.body.get("response_format") or {}).get("type", "text")
        for r in server.chat_requests(role)
    ]


@pytest.mark.parametrize("structured", [True, False], ids=["json_schema", "stepped-down"])
def test_drafts_are_asked_as_structured_output_stepping_down_as_the_server_needs(
    structured: bool,
) -> None:
    with OpenAIServer(responder=_cat_writer, structured_output=structured) as server:
        model = ChatOpenAI(
            model=f"test-{structured}", base_url=server.base_url, api_key=SecretStr("unused")
        )
        result = refine(TASK, model=model, response_format=Cat)
    assert result["structured_response"] == Cat(name="Tom", age=3)
    assert result["attempts"][0]["critique"]["source"] == "response_format"
    if structured:
        assert _formats(server, "generator") == ["json_schema"]
        assert _formats(server, "refiner") == ["json_schema"]
    else:
        # Refused once each way, then plain text with the schema in the prompt.
        assert _formats(server, "generator") == ["json_schema", "json_object", "text"]
        assert _formats(server, "refiner") == ["text"]
        assert (
            '"age": {"title": "Age", "type": "integer"}'
            in server.chat_requests("generator")[-1].text
        )


def test_resume_asks_for_the_threads_response_format(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "cat.json").write_text(json.dumps(SCHEMA))
    with OpenAIServer(responder=_cat_writer) as server:
        args = ["--model", "test-model", "--base-url", server.base_url, "--max-retries", "0"]
        server.fail_next("500", times=5, role="refiner")
        code = main(["run", TASK, *args, "--response-format", "cat.json", "--thread-id", "cat"])
        assert code == 1
        capsys.readouterr()
        server.clear_faults()
        assert main(["resume", "cat", "--base-url", server.base_url, "--json"]) == 0
        out = capsys.readouterr().out
        refiner = server.chat_requests("refiner")[-1]
    result = json.loads(out)
    assert result["structured_response"] == {"name": "Tom", "age": 3}
    assert refiner.body["response_format"]["type"] == "json_schema"
