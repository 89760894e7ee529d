"""A seeded search plans the same tree whatever the graph's shape: the tree, pinned.

The model's reply is a function of its request alone (its messages and the seed a
candidate's draw binds), so the tree a run makes is a function of what the search
planned: a change to how the planning is wired that changes a step's plan changes
the pinned tree.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import create_self_refine_graph
from self_refine.nodes.candidates import DRAFT_TASK
from self_refine.prompts.render import FRESH_INTRO

WORDS = ["train", "pencil", "compass", "river", "lamp"]
TASK = f"Write one or two natural sentences that use all of these words: {', '.join(WORDS)}."
REFERENCE = {"concepts": WORDS}


class SeededModel(BaseChatModel):
    """Replies that depend only on the request: fresh drafts use a few of the words (which
    ones, by the request's hash), a refinement adds one word the feedback names or not."""

    seed: int = 0
    temperature: float = 0.0
    refine_requests: list[list[BaseMessage]] = []
    """Every refine request sent, in order."""

    @property
    def _llm_type(self) -> str:
        return "seeded-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        blob = f"{kwargs.get('seed', self.seed)}|{text}"
        h = int(hashlib.sha256(blob.encode()).hexdigest(), 16)
        if "Role: refiner" in text:
            self.refine_requests.append(list(messages))
            drafts = [str(m.content) for m in messages if m.type == "ai"]
            drafts += re.findall(r"<draft>\n(.*?)\n</draft>", text, re.S)
            missing = re.findall(r'Use the word "(\w+)"', text)
            base = drafts[-1] if drafts else "A train"
            word = missing[h % len(missing)] if missing and h % 3 else "again"
            reply = f"{base.rstrip('.')} and the {word}."
        else:
            used = [w for i, w in enumerate(WORDS) if (h >> i) & 1][:3] or WORDS[:1]
            reply = "The " + " saw the ".join(used) + "."
        usage: Any = {"input_tokens": len(text) // 40, "output_tokens": len(reply) // 4}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = AIMessage(reply, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _tree(
    strategy: str, draft: str = "", model: BaseChatModel | None = None, **more: Any
) -> list[tuple[int, int | None, int, str]]:
    graph = create_self_refine_graph(model or SeededModel())
    graph = graph.compile(checkpointer=InMemorySaver())
    settings = {
        "strategy": strategy,
        "candidates": 3,
        "max_iterations": 4,
        "critics": ["concepts"],
        "profile": "constrained_generation",
        # The pinned trees show the refined draft in each refinement (the form a search
        # asks in by default shows none: `test_a_search_refines_in_the_fresh_form...`).
        "refine_form": "conversation",
        **more,
    }
    config = {"configurable": {"thread_id": strategy}}
    given = {"task": TASK, "reference": REFERENCE, **({"draft": draft} if draft else {})}
    result = graph.invoke(given, config, context=settings)
    drafts = []
    for attempt in result["attempts"]:
        for draft in [attempt, *attempt.get("candidates", [])]:
            drafts.append((draft["node"], draft["parent"], attempt["iteration"], draft["draft"]))
    return sorted(drafts)


SEARCH_TREE = [
    (0, None, 0, "The lamp."),
    (1, None, 0, "The train saw the compass."),
    (2, None, 0, "The compass saw the river."),
    (3, None, 1, "The train saw the pencil saw the river."),
    (4, None, 1, "The pencil saw the river saw the lamp."),
    (5, None, 1, "The river."),
    (6, 1, 2, "The train saw the compass and the river."),
    (7, None, 2, "The train saw the compass saw the river."),
    (8, None, 2, "The pencil saw the compass saw the river."),
    (9, 6, 3, "The train saw the compass and the river and the river."),
    (10, None, 3, "The compass saw the lamp."),
    (11, None, 3, "The lamp."),
    (12, None, 4, "The pencil saw the lamp."),
    (13, None, 4, "The pencil saw the river saw the lamp."),
    (14, None, 4, "The train saw the compass."),
]
SAMPLE_TREE = [
    (0, None, 0, "The lamp."),
    (1, None, 0, "The train saw the compass."),
    (2, None, 0, "The compass saw the river."),
    (3, None, 1, "The train saw the pencil saw the river."),
    (4, None, 1, "The pencil saw the river saw the lamp."),
    (5, None, 1, "The river."),
    (6, None, 2, "The compass."),
    (7, None, 2, "The train saw the compass saw the river."),
    (8, None, 2, "The pencil saw the compass saw the river."),
    (9, None, 3, "The compass saw the river saw the lamp."),
    (10, None, 3, "The compass saw the lamp."),
    (11, None, 3, "The lamp."),
    (12, None, 4, "The pencil saw the lamp."),
    (13, None, 4, "The pencil saw the river saw the lamp."),
    (14, None, 4, "The train saw the compass."),
]
GIVEN_DRAFT_TREE = [
    (0, None, 0, "The train saw the lamp."),
    (1, None, 1, "The train saw the compass."),
    (2, None, 1, "The compass saw the river."),
    (3, None, 1, "The train saw the pencil saw the river."),
    (4, 1, 2, "The train saw the compass and the again."),
    (5, None, 2, "The river."),
    (6, 3, 2, "The train saw the pencil saw the river and the again."),
    (7, 6, 3, "The train saw the pencil saw the river and the again and the compass."),
    (8, None, 3, "The pencil saw the compass saw the river."),
    (9, 0, 3, "The train saw the lamp and the again."),
    (10, None, 4, "The compass saw the lamp."),
    (11, None, 4, "The lamp."),
    (12, None, 4, "The pencil saw the lamp."),
    (13, 12, 5, "The pencil saw the lamp and the river."),
    (14, None, 5, "The train saw the compass."),
    (15, None, 5, "The train saw the pencil saw the lamp."),
    (16, 10, 6, "The compass saw the lamp and the pencil."),
    (17, None, 6, "The train."),
    (18, None, 6, "The pencil."),
]


def test_a_seeded_search_plans_the_pinned_tree() -> None:
    assert _tree("search") == SEARCH_TREE


def test_a_seeded_sample_run_plans_the_pinned_tree() -> None:
    assert _tree("sample") == SAMPLE_TREE


def test_a_seeded_search_from_a_given_draft_plans_the_pinned_tree() -> None:
    tree = _tree("search", draft="The train saw the lamp.", max_iterations=6)
    assert tree == GIVEN_DRAFT_TREE


def _steps(strategy: str, draft: str = "") -> list[str]:
    graph = create_self_refine_graph(SeededModel()).compile()
    settings = {
        "strategy": strategy,
        "candidates": 2,
        "max_iterations": 1,
        "critics": ["concepts"],
        "profile": "constrained_generation",
    }
    given = {"task": TASK, "reference": REFERENCE, **({"draft": draft} if draft else {})}
    updates = graph.stream(given, context=settings, stream_mode="updates")
    # each branch's reply is streamed as it comes in, as its own task's update (DRAFT_TASK)
    return [node for update in updates for node in update if node != DRAFT_TASK]


def test_the_planner_plans_each_step_of_a_search_and_a_refine_run_never_meets_it() -> None:
    step = ["candidate", "candidate", "pick", "planner"]
    assert _steps("search") == ["begin", "planner", *step, *step, "finalize"]
    assert _steps("sample", draft="The lamp.") == [
        *["begin", "planner", "critique", "planner"],
        *[*step, "finalize"],
    ]
    assert "planner" not in _steps("refine")
    assert "planner" not in _steps("refine", draft="The lamp.")


def test_studio_draws_the_planner_and_the_branches_it_sends() -> None:
    from self_refine.graphs.studio import graph

    drawn = graph.get_graph()
    edges = {(edge.source, edge.target) for edge in drawn.edges}
    assert {("pick", "planner"), ("planner", "candidate"), ("planner", "finalize")} <= edges


def test_a_search_refines_in_the_fresh_form_unless_the_run_sets_a_form() -> None:
    for form in (None, "conversation"):
        model = SeededModel()
        tree = _tree("search", model=model, refine_form=form)
        parents = {node: parent for node, parent, _, _ in tree}
        drafts = {node: text for node, _, _, text in tree}
        refined = [drafts[parent] for parent in parents.values() if parent is not None]
        assert refined and len(model.refine_requests) == len(refined)
        for sent in model.refine_requests:
            asked = "\n".join(str(m.content) for m in sent if m.type != "system")
            shown = [m.content for m in sent if m.type == "ai"]  # the chain of drafts refined
            if form is None:  # the findings of the refined draft, never the draft itself
                assert FRESH_INTRO in asked and 'Use the word "' in asked
                assert not shown and not any(d in asked for d in refined)
            else:
                assert FRESH_INTRO not in asked and shown and shown[-1] in refined
