"""Bounded work (iteration cap, token budget) and bad input refused before any model call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.config import get_config
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph

from self_refine import ConfigError, RefineContext, create_self_refine_graph, refine, refine_node
from self_refine.cli.main import main
from self_refine.graphs import GRAPH_NAME, recursion_limit
from self_refine.input_checks import MAX_TASK_CHARS
from self_refine.state import Critique
from self_refine.stopping import reply_cost
from tests.openai_server import OpenAIServer, offline_responder
from tests.scripted_responder import role_of

TASK = "Write one sentence using the words: dog, frisbee, park."


def _never_satisfied(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """A critic that always wants more, and a refiner that always changes something."""
    role = role_of(messages)
    if role == "critic":
        return json.dumps({"feedback": ["Make it better."], "score": 0.5, "done": False})
    if role == "refiner":
        return f"Draft number {len(str(messages))}."
    return offline_responder(messages, request)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=_never_satisfied) as running:
        yield running


_STORABLE = "between 1 and 9223372036854775807"
"""What a whole-number setting with no bound of its own may be: what a checkpoint stores."""


def _graph_run(server: OpenAIServer, task: Any, **settings: Any) -> dict[str, Any]:
    graph = create_self_refine_graph(None).compile(checkpointer=InMemorySaver(), name=GRAPH_NAME)
    context = RefineContext(
        model="openai:test-model", base_url=server.base_url, api_key="sk-test", **settings
    )
    config: Any = {
        "configurable": {"thread_id": "t"},
        "recursion_limit": recursion_limit(settings.get("max_iterations", 3)),
    }
    return dict(graph.invoke({"task": task}, config, context=context))


@pytest.mark.integration
@pytest.mark.parametrize("max_iterations", [1, 4])
def test_a_critic_that_is_never_satisfied_gets_exactly_the_calls_the_cap_implies(
    server: OpenAIServer, max_iterations: int
) -> None:
    result = _graph_run(server, TASK, max_iterations=max_iterations)

    roles = [r.role for r in server.chat_requests()]
    assert roles.count("generator") == 1
    assert roles.count("critic") == max_iterations + 1
    assert roles.count("refiner") == max_iterations
    assert len(roles) == 2 * max_iterations + 2
    assert result["stop_reason"] == "max_iterations"
    assert [a["iteration"] for a in result["attempts"]] == list(range(max_iterations + 1))


@pytest.mark.parametrize(
    "where",
    [{"max_iterations": 50}, {"context": RefineContext(max_iterations=50)}],
    ids=["option", "context"],
)
def test_the_recursion_limit_follows_the_largest_iteration_cap(where: dict[str, Any]) -> None:
    result = refine(TASK, model="offline", stop=[], **where)

    assert result["stop_reason"] == "max_iterations"
    assert result["iterations"] == 50


def _limit_seen(seen: list[int]) -> Any:
    """A verifier that passes every draft, noting the recursion limit of the run it is in."""

    def limit_seen(task: str, draft: str, reference: Any) -> Critique:
        seen.append(get_config()["recursion_limit"])
        return Critique(feedback=[], score=1.0, done=True)

    return limit_seen


@pytest.mark.parametrize(
    ("config", "expected"),
    [(None, recursion_limit(7)), ({"recursion_limit": 40}, 40)],
    ids=["worked-out", "the-caller-s"],
)
def test_a_run_s_recursion_limit_is_worked_out_from_its_settings_unless_the_caller_gives_one(
    config: Any, expected: int
) -> None:
    seen: list[int] = []
    graph = create_self_refine_graph("offline", critics=[_limit_seen(seen)]).compile()

    graph.invoke({"task": TASK}, config, context={"max_iterations": 7})
    graph.with_config(config or {}).invoke({"task": TASK}, context={"max_iterations": 7})

    assert seen == [expected, expected]


def test_a_recursion_limit_the_caller_gives_bounds_the_run() -> None:
    graph = create_self_refine_graph("offline", stop=[]).compile()

    with pytest.raises(GraphRecursionError, match="Recursion limit of 4 reached"):
        graph.invoke({"task": TASK}, {"recursion_limit": 4}, context={"max_iterations": 50})


def test_a_refine_run_in_a_parent_gets_what_its_settings_need_whatever_the_parent_s_limit() -> None:
    seen: list[int] = []
    refiner = create_self_refine_graph("offline", critics=[_limit_seen(seen)]).compile()
    parent = StateGraph(MessagesState, context_schema=RefineContext)
    parent.add_node("refine_reply", refine_node(refiner))
    parent.add_edge(START, "refine_reply")
    parent.add_edge("refine_reply", END)

    result = parent.compile().invoke(
        {"messages": [HumanMessage(TASK)]}, {"recursion_limit": 5}, context={"max_iterations": 7}
    )

    assert result["messages"][-1].name == "answer"
    assert seen == [recursion_limit(7)]


def test_a_token_budget_stops_the_run() -> None:
    unlimited = refine(TASK, model="offline")
    budget = unlimited["usage"]["total_tokens"] // 2

    result = refine(TASK, model="offline", context=RefineContext(max_tokens_total=budget))

    assert result["stop_reason"] == "token_budget"
    spent, attempts = result["usage"]["total_tokens"], result["attempts"]
    # It stopped when what was left would not pay for one more reply, one reply over at most.
    assert spent + (reply_cost(attempts) or 0) > budget
    assert spent <= budget + max(a["usage"]["total_tokens"] for a in attempts)
    assert len(attempts) < len(unlimited["attempts"])


def test_the_cli_takes_a_token_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "c.sqlite")
    code = main(["run", TASK, "--max-tokens-total", "300", "--json", "--db", db])

    assert code == 0
    assert json.loads(capsys.readouterr().out)["stop_reason"] == "token_budget"


# -- bad input: a clear error naming the fix, and no model call --------------------------


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["   "], "the task is empty"),
        (["x" * (MAX_TASK_CHARS + 1)], f"over the limit of {MAX_TASK_CHARS:,}"),
        ([TASK, "--max-iterations", "-1"], "--max-iterations must be between 0 and 50"),
        ([TASK, "--score-threshold", "1.5"], "--score-threshold must be between 0 and 1"),
        ([TASK, "--patience", "0"], "--patience must be >= 1"),
        ([TASK, "--history-window", "-1"], "--history-window must be >= 0"),
        ([TASK, "--max-retries", "-1"], "--max-retries must be between 0 and 100"),
        ([TASK, "--timeout", "0"], "--timeout must be at least 0.001 seconds"),
        ([TASK, "--timeout", "1e-320"], "--timeout must be at least 0.001 seconds (a millisecond"),
        ([TASK, "--max-tokens-total", "0"], "--max-tokens-total must be >= 1"),
        ([TASK, "--max-tokens-total", str(2**64)], f"--max-tokens-total must be {_STORABLE}"),
        ([TASK, "--patience", str(2**64)], "--patience must be between 1 and 9223372036854775807"),
        (
            [TASK, "--history-window", str(10**30)],
            f"--history-window must be between 0 and {2**63 - 1}",
        ),
        ([TASK, "--timeout", "inf"], "--timeout must be at most 86400 seconds (a day), got inf"),
        ([TASK, "--timeout", "1e300"], "--timeout must be at most 86400 seconds (a day)"),
        ([TASK, "--api-key", " "], "--api-key is empty"),
        ([TASK, "--profile", "nope"], "unknown profile 'nope'; choose one of: acronym,"),
        ([TASK, "--temperature", "3"], "--temperature must be between 0 and 2, got 3.0"),
        ([TASK, "--seed", "-1"], "--seed must be between 0 and 2147483647, got -1"),
        ([TASK, "--model", "not a model"], "unknown model string 'not a model'"),
    ],
)
def test_the_cli_refuses_bad_input_before_any_model_call(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    db = str(tmp_path / "c.sqlite")
    argv = ["run", *args, "--db", db, "--base-url", server.base_url]
    if "--model" not in args:
        argv += ["--model", "openai:test-model"]
    if "--api-key" not in args:
        argv += ["--api-key", "sk-test"]

    code = main(argv)

    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and err.startswith("self-refine: error: ")
    assert server.chat_requests() == []


@pytest.mark.parametrize(
    ("db", "message"),
    [
        ("/proc/no-such-dir/c.sqlite", "choose a writable path with --db"),
        ("{tmp}", "is not a regular file: give the path of an SQLite file"),
        ("{tmp}/not-a-database.sqlite", "is not an SQLite database: give the path of"),
    ],
)
def test_the_cli_refuses_an_unusable_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str, message: str
) -> None:
    (tmp_path / "not-a-database.sqlite").write_text("plain text, not SQLite\n" * 100)

    code = main(["run", TASK, "--db", db.format(tmp=tmp_path)])

    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1


@pytest.mark.integration
@pytest.mark.parametrize(
    ("task", "message"),
    [
        (None, "task must be a string, got NoneType"),
        (42, "task must be a string, got int"),
        ("", "task is empty"),
        ("y" * (MAX_TASK_CHARS + 1), "over the limit"),
    ],
)
def test_the_graph_refuses_a_bad_task_before_any_model_call(
    server: OpenAIServer, task: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        _graph_run(server, task)
    assert server.chat_requests() == []


@pytest.mark.integration
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"critics": ["nope"]}, "unknown critic 'nope'; known: 'llm', 'human', 'answer'"),
        ({"profile": "nope"}, "unknown profile 'nope'"),
        ({"max_iterations": "3"}, "max_iterations must be an integer, got '3'"),
        ({"timeout": -1}, "timeout must be"),
        (
            {"timeout": 1e-320},
            "timeout must be at least 0.001 seconds (a millisecond; a model request takes "
            "longer), got 1e-320",
        ),
        ({"max_retries": 1.5}, "max_retries must be an integer"),
        ({"score_threshold": "high"}, "score_threshold must be a number"),
        ({"max_tokens_total": 0}, "max_tokens_total must be >= 1"),
        ({"max_tokens_total": 10**20}, f"max_tokens_total must be {_STORABLE}, got an integer"),
        ({"timeout": float("inf")}, "timeout must be at most 86400 seconds (a day), got inf"),
    ],
)
def test_the_graph_refuses_bad_settings_before_any_model_call(
    server: OpenAIServer, settings: dict[str, Any], message: str
) -> None:
    graph = create_self_refine_graph(None).compile(checkpointer=InMemorySaver())
    context = {"model": "openai:test-model", "base_url": server.base_url, **settings}

    with pytest.raises(ConfigError) as raised:
        graph.invoke({"task": TASK}, {"configurable": {"thread_id": "t"}}, context=context)

    assert message in str(raised.value)
    assert server.chat_requests() == []


@pytest.mark.integration
def test_a_budget_no_checkpoint_can_hold_is_refused_and_the_thread_still_runs(
    server: OpenAIServer, tmp_path: Path
) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        graph = create_self_refine_graph(None).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        context = {"model": "openai:test-model", "base_url": server.base_url, "api_key": "sk"}

        with pytest.raises(ConfigError, match="max_tokens_total must be between 1 and"):
            graph.invoke({"task": TASK}, config, context={**context, "max_tokens_total": 10**20})
        assert server.chat_requests() == []
        assert graph.get_state(config).values == {}, "nothing of the refused run is saved"

        done = graph.invoke({"task": TASK}, config, context={**context, "max_iterations": 0})
    assert done["stop_reason"] == "max_iterations"
