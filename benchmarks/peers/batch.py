"""The peers' batches for target 3, run in the peers' environment.

    python -m benchmarks.peers.batch WAY URL ITEMS

The same items as `benchmarks.batch_runs` (one task each, 3 refine steps), sent
to the stand-in server at URL as each peer's users would send them:

- `dspy`: `dspy.Refine(dspy.Predict("task -> draft"), N=4, reward_fn=...,
  threshold=1.0)` over `dspy.LM("openai/stub", api_base=URL)` (DSPy's own
  client, its cache off), run by `Refine.batch(examples, num_threads=32)`, DSPy's
  way of running a module over many inputs: 4 drafts and 3 feedback calls per item;
- `reflection`: langgraph-reflection's graph (`peers/loops.py`) with async nodes
  over the same `ChatOpenAI` client as the library, no checkpointer, run by
  `graph.abatch(inputs, config={"max_concurrency": 32})`: 8 calls per item.

Prints the batch's wall and CPU seconds (all threads), after the imports, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import dspy
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph_reflection import create_reflection_graph
from pydantic import SecretStr

from benchmarks.batch_runs import SLOTS, STEPS, task_text
from benchmarks.peers.loops import PROMPTS, _attempts
from self_refine.critics.llm import CritiqueReply
from self_refine.prompts import feedback_messages, generate_messages, refine_messages
from self_refine.prompts.render import format_feedback

WAYS = ("dspy", "reflection")


def _dspy(url: str, items: int) -> None:
    lm = dspy.LM("openai/stub", api_base=url, api_key="unused", cache=False, num_retries=0)
    refine = dspy.Refine(
        module=dspy.Predict("task -> draft"),
        N=STEPS + 1,
        reward_fn=lambda args, prediction: 0.0,
        threshold=1.0,
    )
    examples = [dspy.Example(task=task_text(n)).with_inputs("task") for n in range(items)]
    with dspy.context(lm=lm):
        refine.batch(examples, num_threads=SLOTS, disable_progress_bar=True)


def _reflection_graph(url: str) -> Any:
    model = ChatOpenAI(model="stub", base_url=url, api_key=SecretStr("unused"))
    critic = model.with_structured_output(CritiqueReply, include_raw=True)

    async def draft(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        task = messages[0].text
        attempts = _attempts(messages)
        prompt = (
            refine_messages(PROMPTS, task, attempts, attempts[-1]["critique"], None)
            if attempts
            else generate_messages(PROMPTS, task)
        )
        return {"messages": [AIMessage((await model.ainvoke(prompt)).text)]}

    async def reflect(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        drafts = [m for m in messages if isinstance(m, AIMessage)]
        reply = await critic.ainvoke(feedback_messages(PROMPTS, messages[0].text, drafts[-1].text))
        critique = reply["parsed"].model_dump()
        if len(drafts) > STEPS:
            return {"messages": []}
        note = HumanMessage(format_feedback(critique["feedback"]))
        note.additional_kwargs["critique"] = critique
        return {"messages": [note]}

    main = StateGraph(MessagesState)
    main.add_node("draft", draft)
    main.add_edge(START, "draft")
    main.add_edge("draft", END)
    judge = StateGraph(MessagesState)
    judge.add_node("reflect", reflect)
    judge.add_edge(START, "reflect")
    judge.add_edge("reflect", END)
    return create_reflection_graph(
        main.compile(), judge.compile(), state_schema=MessagesState
    ).compile()


async def _reflection(url: str, items: int) -> None:
    graph = _reflection_graph(url)
    inputs = [{"messages": [HumanMessage(task_text(n))]} for n in range(items)]
    config: Any = {"max_concurrency": SLOTS, "recursion_limit": 2 * STEPS + 10}
    await graph.abatch(inputs, config)


def main() -> None:
    """Run one peer's batch and print its wall and CPU seconds as JSON."""
    way, url, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if way not in WAYS:
        raise SystemExit(f"unknown way {way!r}; choose from {', '.join(WAYS)}")
    wall, cpu = time.perf_counter(), time.process_time()
    if way == "dspy":
        _dspy(url, items)
    else:
        asyncio.run(_reflection(url, items))
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))


if __name__ == "__main__":
    main()
