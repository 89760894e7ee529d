"""Any runnable as a role: a real prebuilt ReAct agent, a messages-to-message chain."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import create_react_agent
from typing_extensions import TypedDict

from self_refine import (
    ConfigError,
    ModelCallError,
    RefineContext,
    Roles,
    arefine,
    create_self_refine_graph,
    refine,
)
from tests.fakes import FakeChatModel, critique

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

TASK = "What is 6 times 7?"
REFERENCE = {"answer": "42"}


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


def _tool_results(messages: Sequence[BaseMessage]) -> list[str]:
    return [m.text for m in messages if isinstance(m, ToolMessage)]


def _calculator(first: tuple[int, int]) -> Any:
    """A scripted turn of the agent's model: call multiply(*first) once, then state its result."""

    def reply(messages: list[BaseMessage]) -> AIMessage | str:
        results = _tool_results(messages[-2:])
        if not results:
            args = {"a": first[0], "b": first[1]}
            return AIMessage("", tool_calls=[{"name": "multiply", "args": args, "id": "call-1"}])
        return f"The answer is {results[-1]}."

    return reply


def _agent_model() -> FakeChatModel:
    """The agent's chat model: a wrong multiplication as generator, the right one as refiner."""
    return FakeChatModel(
        script={"generator": [_calculator((6, 6))], "refiner": [_calculator((6, 7))]}
    )


def test_a_react_agent_as_generator_and_refiner_runs_its_tool_and_its_answer_is_refined() -> None:
    model = _agent_model()
    agent = create_react_agent(model, [multiply], name="calculator")
    saver = InMemorySaver()
    graph = create_self_refine_graph(
        "offline",
        roles=Roles(generator=agent, refiner=agent),
        critics=["answer"],
        settings=RefineContext(strategy="refine"),  # a verifier's default would sample
    ).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "agent"}}
    chunks = list(
        graph.stream(
            {"task": TASK, "reference": REFERENCE}, config, subgraphs=True, stream_mode="updates"
        )
    )

    result = graph.get_state(config).values
    assert [a["draft"] for a in result["attempts"]] == ["The answer is 36.", "The answer is 42."]
    assert result["answer"] == "The answer is 42." and result["stop_reason"] == "verified"
    # The tool ran inside the agent: the model saw its result in each role.
    for role, product in (("generator", "36"), ("refiner", "42")):
        sent = model.requests_for(role)
        assert len(sent) == 2 and _tool_results(sent[1].messages) == [product]
    # Usage adds up both of the agent's model calls (10 + 5 tokens each).
    assert all(a["usage"]["total_tokens"] == 30 for a in result["attempts"])
    # The agent's steps stream and are checkpointed under the refine run's nodes.
    inner = {(ns[0].split(":")[0], node) for ns, update in chunks if ns for node in update}
    assert {("generate", "tools"), ("refine", "tools"), ("refine", "agent")} <= inner
    spaces = {c.config["configurable"]["checkpoint_ns"] for c in saver.list(None)}
    assert {ns.split(":")[0] for ns in spaces} == {"", "generate", "refine"}


async def test_an_agent_role_runs_under_ainvoke_too() -> None:
    agent = create_react_agent(_agent_model(), [multiply])
    result = await arefine(
        TASK,
        model="offline",
        reference=REFERENCE,
        critics=["answer"],
        generator_model=agent,
        refiner_model=agent,
        strategy="refine",
    )
    assert result["answer"] == "The answer is 42."


def test_a_chain_from_messages_to_a_message_is_a_role() -> None:
    model = FakeChatModel(script={"*": ["The answer is 42."]})

    def house_style(messages: list[BaseMessage]) -> list[BaseMessage]:
        return [SystemMessage("Answer in one sentence."), *messages]

    chain = RunnableLambda(house_style) | model
    words = chain | RunnableLambda(lambda message: message.text)  # a string reply works too
    for generator in (chain, words):
        result = refine(
            TASK,
            model="offline",
            generator_model=generator,
            reference=REFERENCE,
            critics=["answer"],
        )
        assert result["answer"] == "The answer is 42." and result["stop_reason"] == "verified"
    assert model.requests[0].messages[0].text == "Answer in one sentence."


def test_an_agent_as_critic_is_asked_in_plain_text() -> None:
    model = FakeChatModel(
        script={
            "generator": ["A draft."],
            "critic": [critique(["Say more."], score=0.4), critique(score=1.0, done=True)],
            "refiner": ["A longer draft."],
        }
    )
    critic = create_react_agent(model, [multiply])
    result = refine("Write a draft.", model=model, critic_model=critic)
    assert result["answer"] == "A longer draft." and result["stop_reason"] == "critic_done"
    assert not any(sent.structured for sent in model.requests_for("critic"))


def test_an_agents_empty_reply_is_asked_again_as_a_step() -> None:
    model = FakeChatModel(script={"generator": ["", "The answer is 42."]})
    agent = create_react_agent(model, [multiply])
    steps: list[str] = []
    graph = create_self_refine_graph("offline", roles=Roles(generator=agent), critics=["answer"])
    for update in graph.compile().stream(
        {"task": TASK, "reference": REFERENCE}, stream_mode="updates"
    ):
        steps += list(update)
    assert steps[:4] == ["begin", "generate", "generate", "critique"]


def test_a_failing_endpoint_inside_an_agent_is_a_one_line_model_call_error() -> None:
    model = FakeChatModel(script={"generator": [ConnectionError("connection refused")]})
    agent = create_react_agent(model, [multiply], name="calculator")
    with pytest.raises(ModelCallError, match="the generator model 'calculator' .* failed: "):
        refine(
            TASK, model="offline", reference=REFERENCE, critics=["answer"], generator_model=agent
        )


def test_the_thread_lock_is_held_once_around_an_agents_nested_run(tmp_path: Path) -> None:
    agent = create_react_agent(_agent_model(), [multiply])
    with SqliteSaver.from_conn_string(str(tmp_path / "runs.sqlite")) as saver:
        result = refine(
            TASK,
            model="offline",
            reference=REFERENCE,
            critics=["answer"],
            generator_model=agent,
            refiner_model=agent,
            strategy="refine",
            checkpointer=saver,
            thread_id="locked",
        )
    assert result["answer"] == "The answer is 42."


class _Plain(TypedDict):
    text: str


def test_a_graph_that_cannot_fill_a_role_is_refused_before_any_call() -> None:
    builder = StateGraph(_Plain)
    builder.add_node("echo", lambda state: state)
    builder.add_edge(START, "echo")
    with pytest.raises(ConfigError, match="no 'messages' in its state"):
        create_self_refine_graph("offline", roles=Roles(generator=builder.compile()))
    saved = create_react_agent(_agent_model(), [multiply], checkpointer=InMemorySaver())
    with pytest.raises(ConfigError, match="compile it without one"):
        create_self_refine_graph("offline", roles=Roles(refiner=saved))
    with pytest.raises(ConfigError, match="a compiled graph with 'messages'"):
        create_self_refine_graph(42)  # type: ignore[arg-type]


@pytest.mark.skipif(
    importlib.util.find_spec("langchain") is None, reason="needs langchain (the agents extra)"
)
def test_langchains_create_agent_is_a_role() -> None:
    from langchain.agents import create_agent

    agent = create_agent(_agent_model(), [multiply])
    result = refine(
        TASK,
        model="offline",
        reference=REFERENCE,
        critics=["answer"],
        generator_model=agent,
        refiner_model=agent,
        strategy="refine",
    )
    assert result["answer"] == "The answer is 42."


def _counter(calls: int) -> Any:
    """A scripted agent turn: multiply(2, k) for k = 1..calls, one tool call per turn, then 42."""

    def reply(messages: list[BaseMessage]) -> AIMessage | str:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < calls:
            args = {"a": 2, "b": done + 1}
            return AIMessage("", tool_calls=[{"name": "multiply", "args": args, "id": f"c{done}"}])
        return "The answer is 42."

    return reply


def test_an_agent_in_a_role_has_steps_of_its_own_beyond_the_refine_runs() -> None:
    # Nine tool calls take 19 agent steps: more than the refine run's own limit
    # (15 for max_iterations=3), within the agent's.
    agent = create_react_agent(FakeChatModel(script={"*": [_counter(9)]}), [multiply])
    result = refine(
        TASK, model="offline", roles=Roles(generator=agent), critics=["answer"], reference=REFERENCE
    )
    assert result["answer"] == "The answer is 42." and result["stop_reason"] == "verified"


def test_an_agent_that_never_stops_fails_naming_its_role_within_its_own_limit() -> None:
    model = FakeChatModel(script={"*": [_counter(10_000)]})
    agent = create_react_agent(model, [multiply], name="looper")
    graph = create_self_refine_graph(
        "offline", roles=Roles(generator=agent), critics=["answer"]
    ).compile()
    with pytest.raises(ModelCallError) as raised:
        graph.invoke({"task": TASK, "reference": REFERENCE})  # as the guide calls it
    said = str(raised.value)
    assert "the generator agent 'looper' did not finish within 25 steps" in said
    assert "with_config(recursion_limit=" in said
    assert len(model.requests) <= 13, "25 steps: about a dozen model calls, not thousands"


def test_an_agent_given_a_limit_of_its_own_keeps_it() -> None:
    model = FakeChatModel(script={"*": [_counter(10_000)]})
    agent = create_react_agent(model, [multiply], name="looper").with_config(recursion_limit=7)
    graph = create_self_refine_graph(
        "offline", roles=Roles(generator=agent), critics=["answer"]
    ).compile()
    with pytest.raises(ModelCallError, match="'looper' did not finish within 7 steps"):
        graph.invoke({"task": TASK, "reference": REFERENCE})
    assert len(model.requests) == 4
    roomy = create_react_agent(FakeChatModel(script={"*": [_counter(20)]}), [multiply])
    result = refine(
        TASK,
        model="offline",
        roles=Roles(generator=roomy.with_config(recursion_limit=60)),
        critics=["answer"],
        reference=REFERENCE,
    )
    assert result["stop_reason"] == "verified"
