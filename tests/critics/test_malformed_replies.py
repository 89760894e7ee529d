"""Unusable model replies, over HTTP: each is retried, repaired or recorded, never a crash.

Every run below finishes with all its attempts; what went wrong is in the
attempt's `problems`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph
from self_refine.critics.parse import NOTHING_COMPLETE
from self_refine.graphs import GRAPH_NAME
from tests.openai_server import REFUSAL, OpenAIServer
from tests.scripted_responder import ScriptedResponder

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park."


@pytest.fixture
def responder() -> ScriptedResponder:
    return ScriptedResponder()


@pytest.fixture
def server(responder: ScriptedResponder) -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=responder) as running:
        yield running


@pytest.fixture
def plain_server(responder: ScriptedResponder) -> Iterator[OpenAIServer]:
    """A server without structured output (as many local ones): critiques come as text."""
    with OpenAIServer(responder=responder, structured_output=False) as running:
        yield running


def _refine(server: OpenAIServer, **settings: Any) -> dict[str, Any]:
    graph = create_self_refine_graph(None).compile(checkpointer=InMemorySaver(), name=GRAPH_NAME)
    context = RefineContext(
        model="openai:test-model", base_url=server.base_url, api_key="sk-test", **settings
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    return dict(graph.invoke({"task": TASK}, config, context=context))


def _problems(result: dict[str, Any]) -> list[str]:
    return [p for attempt in result["attempts"] for p in attempt.get("problems", [])]


def test_an_empty_first_draft_is_asked_for_again(server: OpenAIServer) -> None:
    server.fail_next("empty", times=1, role="generator")

    result = _refine(server)

    assert len(server.chat_requests("generator")) == 2
    first = result["attempts"][0]
    assert first["draft"] == "this is a very rough draft about dog"
    assert first["problems"] == ["the generator returned an empty reply; asked again"]
    assert result["stop_reason"] == "critic_done"


def test_a_generator_that_stays_silent_is_recorded_and_the_run_goes_on(
    server: OpenAIServer,
) -> None:
    server.fail_next("empty", times=2, role="generator")

    result = _refine(server)

    first = result["attempts"][0]
    assert first["draft"] == ""
    assert first["problems"] == [
        "the generator returned an empty reply; asked again",
        "the generator returned an empty reply; the first draft is empty",
    ]
    assert first["critique"]["feedback"] == ["Write a response: the draft is empty."]
    assert len(result["attempts"]) > 1


def test_a_critique_in_prose_is_read_as_text(
    plain_server: OpenAIServer, responder: ScriptedResponder
) -> None:
    responder.queues["critic"].append(
        "Not bad, but:\n- Start with a capital letter.\n- Mention the park.\nScore: 6/10"
    )

    result = _refine(plain_server, max_iterations=1)

    critique = result["attempts"][0]["critique"]
    assert critique["feedback"] == ["Start with a capital letter.", "Mention the park."]
    assert critique["score"] == pytest.approx(0.6)
    assert result["attempts"][0]["problems"] == ["the critique was not JSON; read it as plain text"]


@pytest.mark.parametrize(
    ("reply", "feedback", "score", "problems"),
    [
        (
            '{"feedback": "Add a full stop.", "done": "no"}',
            ["Add a full stop."],
            None,
            [
                "the critique JSON had no score",
                "the critique's done 'no' is not true or false; read as text",
            ],
        ),
        (
            '{"feedback": 3, "score": "high", "done": false}',
            [],
            None,
            [
                "the critique's feedback was a int; ignored",
                "the critique's score 'high' is not a number; ignored",
            ],
        ),
        (
            '{"feedback": ["Add a full stop."], "score": 7, "done": false}',
            ["Add a full stop."],
            0.7,
            ["the critic's score 7 was outside [0, 1]; read as 0.7"],
        ),
        (
            '{"feedback": ["Add a full stop."], "score": -2, "done": false}',
            ["Add a full stop."],
            0.0,
            ["the critic's score -2 was outside [0, 1]; read as 0"],
        ),
    ],
)
def test_a_critique_with_missing_wrong_or_out_of_range_fields_is_repaired(
    plain_server: OpenAIServer,
    responder: ScriptedResponder,
    reply: str,
    feedback: list[str],
    score: float | None,
    problems: list[str],
) -> None:
    responder.queues["critic"].append(reply)

    result = _refine(plain_server, max_iterations=1)

    first = result["attempts"][0]
    assert first["critique"]["feedback"] == feedback
    assert first["critique"]["score"] == (pytest.approx(score) if score is not None else None)
    assert first["problems"] == problems
    assert len(result["attempts"]) == 2


def test_an_out_of_range_structured_score_is_clamped(
    server: OpenAIServer, responder: ScriptedResponder
) -> None:
    responder.queues["critic"].append(
        '{"feedback": ["Add a full stop."], "score": 4.5, "done": false}'
    )

    result = _refine(server, max_iterations=1)

    first = result["attempts"][0]
    assert first["critique"]["score"] == pytest.approx(0.45)
    assert first["problems"] == ["the critic's score 4.5 was outside [0, 1]; read as 0.45"]


def test_an_unreadable_structured_critique_is_asked_again_in_plain_text(
    server: OpenAIServer,
) -> None:
    server.fail_next("malformed", times=1, role="critic")

    result = _refine(server)

    first = result["attempts"][0]
    assert [r.fault for r in server.chat_requests("critic")][:2] == ["malformed", None]
    assert len(first["critique"]["feedback"]) == 5
    assert len(first["problems"]) == 1
    assert first["problems"][0].startswith("the critic's structured reply was unreadable (")
    assert first["problems"][0].endswith("); asked again in plain text")
    assert result["stop_reason"] == "critic_done"


def test_a_plain_critique_cut_off_before_its_first_item_keeps_none(
    plain_server: OpenAIServer, responder: ScriptedResponder
) -> None:
    responder.queues["critic"].append('{"feedback": ["unterminated')

    result = _refine(plain_server)

    first = result["attempts"][0]
    assert first["critique"]["feedback"] == []
    assert first["problems"] == [NOTHING_COMPLETE]
    assert [a["iteration"] for a in result["attempts"]] == [0, 1]


def test_an_empty_critique_is_asked_for_again(server: OpenAIServer) -> None:
    server.fail_next("empty", times=1, role="critic")

    result = _refine(server)

    assert len(result["attempts"][0]["critique"]["feedback"]) == 5
    assert result["attempts"][0]["problems"] == ["the critic returned an empty reply; asked again"]
    assert result["stop_reason"] == "critic_done"


def test_a_critic_refusal_is_recorded(server: OpenAIServer) -> None:
    server.fail_next("refusal", times=1, role="critic")

    result = _refine(server)

    first = result["attempts"][0]
    assert first["critique"]["feedback"] == [] and first["critique"]["score"] is None
    assert first["problems"] == [f"the critic refused: {REFUSAL!r}"]
    assert result["stop_reason"] == "unchanged"  # no feedback: the refiner changed nothing


def test_a_refiner_refusal_keeps_the_previous_draft(
    server: OpenAIServer, responder: ScriptedResponder
) -> None:
    refusal = "I'm sorry, but I cannot help with that request."
    responder.queues["refiner"].extend([refusal, refusal])  # asked again once, refused again

    result = _refine(server)

    first, second = result["attempts"]
    assert second["draft"] == first["draft"]
    assert second["problems"] == [
        f"the refiner refused: {refusal!r}; asked again",
        f"the refiner refused: {refusal!r}; the previous draft was kept",
    ]
    assert [r["reason"] for r in second["rejected"]] == ["refusal", "refusal"]
    assert len(server.chat_requests("refiner")) == 2
    assert result["stop_reason"] == "unchanged"
    assert len(server.chat_requests("critic")) == 1  # the same draft is not critiqued again


def test_the_cli_shows_the_problems_of_an_attempt(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from self_refine.cli.main import main

    server.fail_next("empty", times=1, role="generator")
    args = ["run", TASK, "--model", "openai:test-model", "--base-url", server.base_url]

    assert main([*args, "--api-key", "k", "--db", str(tmp_path / "c.sqlite")]) == 0
    assert "    ! the generator returned an empty reply; asked again" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("I'm sorry, but I can't help with that.", True),
        ("I cannot assist with this request.", True),
        ("Sorry, I won't write that.", True),
        ("I’m unable to comply with this request.", True),
        (
            "I'm sorry for the delay. Here is the letter you asked for, dog and park included.",
            False,
        ),
        ("I can't wait to play frisbee with my dog in the park.", False),
        ("A dog caught the frisbee in the park.", False),
    ],
)
def test_refusals_are_told_apart_from_drafts_that_apologise(text: str, refused: bool) -> None:
    from langchain_core.messages import AIMessage

    from self_refine.models.calls import refusal_of

    assert (refusal_of(AIMessage(text)) is not None) is refused
