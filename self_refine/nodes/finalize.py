"""The finalize node: pick the answer from the attempts."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from self_refine.critics.typed import ResponseFormat
from self_refine.drafts import Attempt, DraftNode, drafts_of
from self_refine.nodes.ranking import (
    attempt_votes,
    best_attempt,
    tree_attempt,
    vote_count,
    voted_attempt,
    voted_candidate,
)
from self_refine.nodes.runnable import Node
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.state import ANSWER_NAME, RefineState

__all__ = ["make_finalize"]


def _typed(form: ResponseFormat, chosen: Attempt | None, any_valid: bool) -> dict[str, Any]:
    """The answer's JSON value, or why there is none (no draft matched the format)."""
    draft = chosen["draft"] if chosen else ""
    found = form.check(draft)
    if found is None:
        return {"structured_response": form.value(draft), "structured_error": None}
    why = found.feedback[0] if found.feedback else "it is not JSON of the schema"
    which = "the chosen draft does not" if any_valid else "no draft"
    error = f"{which} matched the response format; the answer is the best draft as it is: {why}"
    return {"structured_response": None, "structured_error": error}


def _drafts(attempts: list[Attempt], answer_format: ResponseFormat | None) -> list[DraftNode]:
    """Every draft of a run that samples or searches; with a response format, those that
    match it (all of them when none does)."""
    drafts = drafts_of(attempts)
    if answer_format is not None:
        drafts = [d for d in drafts if answer_format.check(d["draft"]) is None] or drafts
    return drafts


def make_finalize(parts: Parts) -> Node:
    """Build the node that chooses the answer ("best", "last" or "vote") and sends it as a
    message.

    The message (an `AIMessage` named "answer", in the node's output) is what
    `stream_mode="messages"` shows last: a chat front end can show the drafts'
    tokens as progress and this message as the reply.
    """

    def finalize(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Choose the answer among the attempts (in a run that samples or searches, among
        all its drafts)."""
        attempts = state.get("attempts") or []
        last = attempts[-1] if attempts else None
        plan = parts.plan(runtime.context)
        answer_format = plan.answer_format
        valid = (
            [a for a in attempts if answer_format.check(a["draft"]) is None]
            if answer_format
            else []
        )
        drafts = _drafts(attempts, answer_format)
        best = tree_attempt(attempts, drafts=drafts) or best_attempt(valid or attempts)
        chosen = last if plan.select == "last" else best
        vote: dict[str, Any] = {}
        if plan.select == "vote":
            chain = valid or attempts
            in_tree = tree_attempt(attempts, voted_candidate, drafts)
            chosen = in_tree or voted_attempt(chain) or best
            votes = vote_count(drafts) if in_tree else attempt_votes(chain)
            vote = {"vote": votes.summary() if votes else None}
        answer = chosen["draft"] if chosen else state.get("draft", "")
        score = chosen["critique"].get("score") if chosen else None
        outcome = {"stop_reason": state.get("stop_reason"), "iterations": state.get("iteration", 0)}
        return {
            "answer": answer,
            # The answer as the run's last message on the messages stream (see the state).
            "answer_message": AIMessage(
                answer,
                name=ANSWER_NAME,
                response_metadata={"self_refine": {**outcome, "score": score, **vote}},
            ),
            "best": best,
            "last": last,
            "iterations": state.get("iteration", 0),
            "score": score,
            **(_typed(answer_format, chosen, bool(valid)) if answer_format else {}),
            # The working draft is cleared, so that new input on this thread starts
            # over from its own draft (or generates one) rather than this run's.
            "draft": "",
        }

    return Node(finalize, name="finalize")
