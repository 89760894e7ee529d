"""Stepping through a run as Studio does: pause before refine, edit the critique, fork."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from self_refine import RefineContext, create_self_refine_graph
from self_refine.models.offline import OfflineModel

TASK = "Write one sentence using the words: dog, frisbee, park."
EDITED = {"feedback": ['Mention "zebra"'], "score": 0.2, "done": False, "source": "human"}


class RecordingModel(OfflineModel):
    """The offline model, keeping every request it was sent."""

    sent: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.sent.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def refine_prompts(self) -> list[str]:
        """The text of every request made to the refiner role."""
        return [
            m[-1].text
            for m in self.sent
            if isinstance(m[0], SystemMessage) and m[0].text.startswith("Role: refiner")
        ]


def _paused_graph(model: RecordingModel) -> tuple[Any, dict[str, Any]]:
    graph = create_self_refine_graph(model, settings=RefineContext(max_iterations=3)).compile(
        checkpointer=InMemorySaver(), interrupt_before=["refine"]
    )
    config = {"configurable": {"thread_id": "step"}}
    graph.invoke({"task": TASK}, config)
    return graph, config


def test_edited_critique_is_what_the_refiner_is_sent() -> None:
    model = RecordingModel()
    graph, config = _paused_graph(model)
    paused = graph.get_state(config)
    assert paused.next == ("refine",)
    assert 'Mention "frisbee", which the task asks for.' in paused.values["critique"]["feedback"]

    graph.update_state(config, {"critique": EDITED}, as_node="critique")
    assert graph.get_state(config).next == ("refine",)
    graph.invoke(None, config)

    prompt = model.refine_prompts()[-1]
    assert '- Mention "zebra"' in prompt
    assert "frisbee, which the task asks for" not in prompt
    after = graph.get_state(config)
    assert after.next == ("refine",)  # paused again after the next critique
    assert after.values["draft"].endswith("It also covers zebra.")
    # The record keeps what the critic said; the edit steered the refine step.
    assert after.values["attempts"][0]["critique"]["source"] == "offline"


def test_setting_a_stop_reason_as_the_critique_ends_the_run() -> None:
    model = RecordingModel()
    graph, config = _paused_graph(model)
    graph.update_state(config, {"stop_reason": "accepted"}, as_node="critique")
    result = graph.invoke(None, config)
    assert result["stop_reason"] == "accepted"
    assert result["answer"] == "this is a very rough draft about dog"
    assert model.refine_prompts() == []


def test_fork_from_an_earlier_checkpoint_keeps_the_earlier_attempts() -> None:
    graph = create_self_refine_graph("offline", settings=RefineContext(max_iterations=5)).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "fork"}}
    original = graph.invoke({"task": TASK}, config)
    assert len(original["attempts"]) >= 3
    history = list(graph.get_state_history(config))
    # The checkpoint just before the second refine step: two attempts critiqued so far.
    before = next(s for s in history if s.next == ("refine",) and len(s.values["attempts"]) == 2)

    forked = graph.update_state(before.config, {"critique": EDITED}, as_node="critique")
    branch = graph.invoke(None, forked)

    assert branch["attempts"][:2] == original["attempts"][:2]
    assert "zebra" in branch["attempts"][2]["draft"]
    assert "zebra" not in original["answer"]
    # The original branch is still there, unchanged; the thread's head is the new branch.
    original_end = graph.get_state(history[0].config)
    assert original_end.values["answer"] == original["answer"]
    assert original_end.values["attempts"] == original["attempts"]
    assert graph.get_state(config).values["answer"] == branch["answer"]
