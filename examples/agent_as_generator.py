"""Refine a tool-using ReAct agent's answer with an exact verifier.

The generator and the refiner are a LangGraph ReAct agent with a calculator tool;
the `answer` verifier checks the result against the known answer, and the run
refines a wrong answer (`strategy="refine"`: with a verifier, a run's default
strategy would write fresh answers instead). The agent runs
inside the refine run: its tool calls, and its checkpoints, nest under the refine
node that called it (stream with `subgraphs=True` to see its steps).

The agent's chat model here is scripted, so the example runs anywhere; give
`create_react_agent` a real model (`ChatOpenAI(model="gpt-4o-mini")`) instead.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from self_refine import RefineContext, Roles, create_self_refine_graph


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


class ScriptedToolModel(GenericFakeChatModel):
    """Replies in the order given: a stand-in for a chat model that calls tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


def call(a: int, b: int) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": "multiply", "args": {"a": a, "b": b}, "id": f"{a}x{b}"}]
    )


model = ScriptedToolModel(
    messages=iter(
        [
            call(6, 6),  # the first draft: the agent multiplies the wrong numbers ...
            AIMessage("The answer is 36."),
            call(6, 7),  # ... and, told so by the verifier, the right ones
            AIMessage("The answer is 42."),
        ]
    )
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent now also lives in langchain.agents
    agent = create_react_agent(model, [multiply], name="calculator")

graph = create_self_refine_graph(
    "offline",
    roles=Roles(generator=agent, refiner=agent),
    critics=["answer"],
    settings=RefineContext(strategy="refine"),
).compile()
task = {"task": "What is 6 times 7?", "reference": {"answer": "42"}}
for namespace, update in graph.stream(task, subgraphs=True, stream_mode="updates"):
    where = namespace[0].split(":")[0] + " > " if namespace else ""
    for node, values in update.items():
        if node == "tools":
            print(f"{where}tool: multiply -> {values['messages'][-1].content}")
        elif node == "critique":
            feedback = values["attempts"][-1]["critique"]["feedback"]
            print(f"critique: {feedback or 'verified'}")
        elif node == "finalize":
            print(f"answer: {values['answer']}")
