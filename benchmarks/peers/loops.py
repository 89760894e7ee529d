"""The peers' loops on target 1 and 2's work, timed here: `python -m benchmarks.peers.loops`.

    python -m benchmarks.peers.loops ITERATIONS REPEATS FOLDER

Runs in the peers' environment. The same instant scripted model (2 KB drafts,
2 KB critiques) answers every peer, and each makes the calls of one refinement
of ITERATIONS refine steps:

- `loop`: the plain Python loop of `t1_orchestration` (the same code as the
  library's side runs), so each process has its own baseline;
- `reflection`: langgraph-reflection's `create_reflection_graph(graph,
  reflection)`: a main graph that drafts (the library's generate and refine
  prompts, the attempts read back from the messages) and a reflection graph
  that critiques (the library's critique prompt, structured output) and adds
  the feedback as a user message until ITERATIONS refine steps are done; no
  checkpointer, and `reflection_sqlite` with SQLite opened as the library's
  command line opens it;
- `dspy_refine`: `dspy.Refine(dspy.Predict("task -> draft"), N=ITERATIONS + 1,
  reward_fn=..., threshold=1.0)`, whose reward is never reached, so it drafts
  N times and asks its feedback module (OfferFeedback) N - 1 times;
- `dspy_loop`: a plain Python loop over `dspy.Predict` modules making the same
  calls as the library (draft, then critique and refine with the whole history).

Prints the medians, {name: [wall seconds, CPU seconds]}, as one JSON line.
"""

from __future__ import annotations

import json
import sys
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from benchmarks.scripted import ScriptedModel
from benchmarks.t1_orchestration import TASK, plain_loop
from benchmarks.timing import Clock, Timed, alternate
from self_refine.critics.llm import CritiqueReply
from self_refine.persistence.storage import open_checkpointer
from self_refine.prompts import feedback_messages, generate_messages, get_profile, refine_messages
from self_refine.prompts.render import format_feedback
from self_refine.state import Attempt

PROMPTS = get_profile("general")


def _attempts(messages: list[BaseMessage]) -> list[Attempt]:
    """The (draft, feedback) pairs so far: AI drafts, each followed by a user's feedback."""
    drafts = [m for m in messages if isinstance(m, AIMessage)]
    notes = [m for m in messages[1:] if isinstance(m, HumanMessage)]
    return [
        {
            "iteration": i,
            "draft": draft.text,
            "critique": dict(note.additional_kwargs.get("critique") or {}),
            "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        }
        for i, (draft, note) in enumerate(zip(drafts, notes, strict=False))
    ]


def reflection_graph(model: ScriptedModel, iterations: int, checkpointer: Any = None) -> Any:
    """langgraph-reflection's graph over the library's prompts and the scripted model."""
    from langgraph_reflection import create_reflection_graph

    critic = model.with_structured_output(CritiqueReply, include_raw=True)

    def draft(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        task = messages[0].text
        attempts = _attempts(messages)
        prompt = (
            refine_messages(PROMPTS, task, attempts, attempts[-1]["critique"], None)
            if attempts
            else generate_messages(PROMPTS, task)
        )
        return {"messages": [AIMessage(model.invoke(prompt).text)]}

    def reflect(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        drafts = [m for m in messages if isinstance(m, AIMessage)]
        reply = critic.invoke(feedback_messages(PROMPTS, messages[0].text, drafts[-1].text))
        critique = reply["parsed"].model_dump()
        if len(drafts) > iterations:
            return {"messages": []}
        note = HumanMessage(format_feedback(critique["feedback"]), additional_kwargs={})
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
    # Its default state schema is read from `graph.builder.schema`, which LangGraph 1.x
    # renamed; the schema is given explicitly instead.
    outer = create_reflection_graph(main.compile(), judge.compile(), state_schema=MessagesState)
    return outer.compile(checkpointer=checkpointer)


def reflection_run(iterations: int, db: Path | None) -> Timed:
    """One refinement through langgraph-reflection; its wall and CPU seconds."""
    model = ScriptedModel()
    with open_checkpointer(str(db)) if db else nullcontext(None) as saver:
        graph = reflection_graph(model, iterations, saver)
        config: Any = {"recursion_limit": 4 * iterations + 20}
        config["configurable"] = {"thread_id": str(uuid.uuid4())}
        clock = Clock()
        for _ in graph.stream({"messages": [HumanMessage(TASK)]}, config, stream_mode="updates"):
            pass
        elapsed = clock.read()
    if model.calls != 2 * iterations + 2:
        raise RuntimeError(f"reflection made {model.calls} calls, not {2 * iterations + 2}")
    return elapsed


def dspy_refine_run(iterations: int) -> Timed:
    """One dspy.Refine of N = iterations + 1 drafts; its wall and CPU seconds."""
    import dspy

    from benchmarks.peers.scripted_dspy import scripted_lm

    lm, engine = scripted_lm()
    refine = dspy.Refine(
        module=dspy.Predict("task -> draft"),
        N=iterations + 1,
        reward_fn=lambda args, prediction: 0.0,
        threshold=1.0,
    )
    with dspy.context(lm=lm):
        clock = Clock()
        refine(task=TASK)
        elapsed = clock.read()
    if engine.calls != 2 * iterations + 1:
        raise RuntimeError(f"dspy.Refine made {engine.calls} calls, not {2 * iterations + 1}")
    return elapsed


def dspy_loop_run(iterations: int) -> Timed:
    """The library's calls made by a plain loop over dspy.Predict modules."""
    import dspy

    from benchmarks.peers.scripted_dspy import scripted_lm

    lm, engine = scripted_lm()
    write = dspy.Predict("task -> draft")
    judge = dspy.Predict("task, draft -> feedback")
    rewrite = dspy.Predict("task, attempts -> draft")
    with dspy.context(lm=lm):
        clock = Clock()
        draft = write(task=TASK).draft
        attempts: list[Attempt] = []
        for iteration in range(iterations + 1):
            feedback = judge(task=TASK, draft=draft).feedback
            critique = {"feedback": [feedback]}
            usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
            attempts.append(
                {"iteration": iteration, "draft": draft, "critique": critique, "usage": usage}  # type: ignore[typeddict-item]
            )
            if iteration == iterations:
                break
            history = refine_messages(PROMPTS, TASK, attempts, critique, None)[-1].text
            draft = rewrite(task=TASK, attempts=history).draft
        elapsed = clock.read()
    if engine.calls != 2 * iterations + 2:
        raise RuntimeError(f"the DSPy loop made {engine.calls} calls, not {2 * iterations + 2}")
    return elapsed


def main() -> None:
    """Alternate the peers' runs; print their medians."""
    iterations, repeats, folder = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    counter = iter(range(10**6))
    medians = alternate(
        {
            "loop": lambda: plain_loop(iterations),
            "reflection": lambda: reflection_run(iterations, None),
            "reflection_sqlite": lambda: reflection_run(
                iterations, folder / f"reflection-{iterations}-{next(counter)}.sqlite"
            ),
            "dspy_refine": lambda: dspy_refine_run(iterations),
            "dspy_loop": lambda: dspy_loop_run(iterations),
        },
        repeats,
    )
    print(json.dumps({name: list(value) for name, value in medians.items()}))


if __name__ == "__main__":
    main()
