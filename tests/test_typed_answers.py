"""Typed answers: `response_format` on the factory, refine(), refine_batch() and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from self_refine import ConfigError, arefine, create_self_refine_graph, refine, refine_batch
from self_refine.cli.main import main
from tests.fakes import FakeChatModel, critique

TASK = "Describe a cat as JSON: its name and its age in whole years."
INVALID = '{"name": "Tom", "age": "old"}'
VALID = '{"name": "Tom", "age": 3}'
SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


class Cat(BaseModel):
    name: str
    age: int = Field(ge=0, description="Age in whole years.")


class CatDict(TypedDict):
    name: str
    age: int


def _model(*refined: str) -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": [INVALID],
            "critic": [critique(score=1.0, done=True)],
            "refiner": list(refined or [VALID]),
        }
    )


def test_an_invalid_draft_gets_its_validation_errors_and_the_output_holds_the_instance() -> None:
    model = _model()
    result = refine(TASK, model=model, response_format=Cat)
    assert result["structured_response"] == Cat(name="Tom", age=3)
    assert result["structured_error"] is None and result["stop_reason"] == "critic_done"
    assert json.loads(result["answer"]) == {"name": "Tom", "age": 3}
    first = result["attempts"][0]["critique"]
    assert first["source"] == "response_format" and first["verified"] is False
    error = "At $.age: Input should be a valid integer, unable to parse string as an integer."
    assert first["feedback"] == [error]
    # The refiner was told exactly that; drafts were asked for as structured output.
    assert error in model.requests_for("refiner")[0].prompt
    assert all(sent.structured for sent in model.requests_for("generator"))
    assert all(sent.structured for sent in model.requests_for("refiner"))
    # Only the valid draft reached the LLM critic.
    assert len(model.requests_for("critic")) == 1
    assert '"type": "integer"' in model.requests_for("generator")[0].prompt


@pytest.mark.parametrize("response_format", [CatDict, SCHEMA], ids=["typeddict", "json-schema"])
async def test_a_typeddict_or_a_json_schema_gives_the_json_value(response_format: Any) -> None:
    result = await arefine(TASK, model=_model(), response_format=response_format)
    assert result["structured_response"] == {"name": "Tom", "age": 3}


def test_a_json_schemas_findings_are_the_json_schema_verifiers() -> None:
    model = _model('{"name": 5, "age": -1}', VALID)
    result = refine(TASK, model=model, response_format=SCHEMA)
    feedback = [a["critique"]["feedback"] for a in result["attempts"]]
    assert feedback[1] == [
        "At $.age: -1 is less than the minimum of 0.",
        "At $.name: 5 is not of type 'string'.",
    ]
    assert result["structured_response"] == {"name": "Tom", "age": 3}


def test_a_run_whose_drafts_never_validate_ends_with_the_best_draft_and_says_so() -> None:
    model = _model('{"name": "Tom"}', "not json at all", '{"name": "Tom", "age": "x"}')
    result = refine(TASK, model=model, response_format=Cat, max_iterations=3)
    assert result["structured_response"] is None
    assert result["structured_error"].startswith("no draft matched the response format")
    scores = [a["critique"]["score"] for a in result["attempts"]]
    assert result["answer"] == result["attempts"][scores.index(max(scores))]["draft"]
    assert model.requests_for("critic") == []  # no invalid draft is critiqued by a model


def test_the_answer_is_the_best_valid_draft() -> None:
    model = FakeChatModel(
        script={
            "generator": [VALID],
            "critic": [critique(["Give it a longer name."], score=0.6)],
            "refiner": [INVALID],
        }
    )
    result = refine(TASK, model=model, response_format=Cat, max_iterations=1)
    assert result["attempts"][1]["critique"]["score"] == 0.5  # one error: 1 / (1 + 1)
    assert result["structured_response"] == Cat(name="Tom", age=3)


def test_refine_batch_gives_instances_and_records_give_json(tmp_path: Path) -> None:
    log = tmp_path / "records.jsonl"
    result = refine_batch(
        [TASK, TASK], model=_model(), response_format=Cat, verifiers=(), log=log, concurrency=1
    )
    assert result.structured == [Cat(name="Tom", age=3)] * 2
    written = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["structured_response"] for r in written] == [{"name": "Tom", "age": 3}] * 2


@pytest.mark.parametrize(
    ("response_format", "message"),
    [
        (42, "response_format must be a pydantic model class, a TypedDict or a JSON schema"),
        ({"type": "nonsense"}, "is not a valid JSON Schema"),
    ],
)
def test_a_bad_response_format_is_refused_before_any_call(
    response_format: Any, message: str
) -> None:
    model = _model()
    with pytest.raises(ConfigError, match=message):
        create_self_refine_graph(model, response_format=response_format)
    assert model.requests == []


def test_the_cli_keeps_the_schema_with_the_thread(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = workdir / "cat.json"
    schema.write_text(json.dumps(SCHEMA))
    task = "Describe a cat as JSON with its name and age."
    code = main(["run", task, "--response-format", str(schema), "--json", "--thread-id", "cat"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    # The offline stand-in writes prose, never JSON: the run says no draft matched.
    assert result["structured_response"] is None
    assert result["structured_error"].startswith("no draft matched the response format")
    from tests.conftest import thread_values

    kept = thread_values(".self-refine/checkpoints.sqlite", "cat")
    assert kept["answer_schema"] == {"title": "Answer", **SCHEMA}
    assert main(["show", "cat", "--html", "cat.html"]) == 0
    assert "response format: no draft matched" in capsys.readouterr().out
    page = (workdir / "cat.html").read_text()
    assert "<h3>Structured response</h3>" in page and "no draft matched" in page


def test_a_schema_file_that_is_no_schema_is_a_one_line_usage_error(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "bad.json").write_text("[1, 2]")
    assert main(["run", "Describe a cat.", "--response-format", "bad.json"]) == 2
    err = capsys.readouterr().err
    assert "must hold a JSON schema object" in err and err.count("\n") <= 2


def test_a_page_shows_the_structured_response_as_json() -> None:
    from self_refine.pages.render import render_page
    from self_refine.pages.thread import thread_view

    result = refine(TASK, model=_model(), response_format=SCHEMA)
    html = render_page("thread.html.j2", thread_view(dict(result), title="cat"))
    shown = "{\n  &#34;name&#34;: &#34;Tom&#34;,\n  &#34;age&#34;: 3\n}"
    assert f'<pre class="structured">{shown}' in html
