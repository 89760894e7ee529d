"""Parallel candidates: a draft step that samples several replies at once, and the pick.

With `candidates` > 1 (or a run that samples or searches) a draft step is a fan-out:
the routing sends one `candidate` branch per reply (`Send`), so LangGraph runs them
as parallel tasks of one step, each checkpointed as it finishes, and Studio shows
them side by side. A branch asks for its reply as its `Send` says (the draw of the
model, `models.calls.candidate_model`, and the refine form; a first draft when it is
sent no attempts), holds it to the draft rules (`models/hygiene.py`; a rejected reply
is not asked again, the other branches stand in for that) and has the run's critic
judge it: under a token budget, only when its share of what was left before the step
(the budget left over the step's width), less its draft, holds a critique
(`requests.unasked_why`); else the verifiers judge it alone, its critique says why,
and the run stops after the step ("token_budget"). The `pick` node then takes the best
(`best_candidate`), records it as the step's attempt with the others beside it, and
names the stop reason, as the critique node does for a single reply (`nodes/steps.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langgraph.func import task
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from self_refine.content import resolved
from self_refine.critics import CritiqueResult
from self_refine.drafts import (
    Attempt,
    Candidate,
    ChainAttempt,
    add_usage,
    drafts_of,
    place_of,
    placed,
)
from self_refine.models.calls import (
    DraftReply,
    aask_draft,
    ask_draft,
    candidate_model,
    model_errors,
)
from self_refine.nodes.draft import DraftRequest
from self_refine.nodes.first_verified import StepStops, first_verified, first_verified_async
from self_refine.nodes.ranking import best_candidate, vote_so_far, why_kept
from self_refine.nodes.requests import (
    critique_request,
    generate_request,
    refine_request,
    unasked_why,
)
from self_refine.nodes.routing import CandidateInput
from self_refine.nodes.runnable import Node
from self_refine.nodes.steps import step_record
from self_refine.settings.call import Parts
from self_refine.settings.fields import RefineContext
from self_refine.settings.plan import RunPlan
from self_refine.state import (
    Critique,
    RefineState,
)

__all__ = ["NO_USABLE_REPLY", "make_candidate", "make_pick"]

NO_USABLE_REPLY = "Every reply was rejected, so there is no draft yet: write the response."
"""The feedback on an empty first draft when every candidate reply was rejected."""


def _request(plan: RunPlan, state: Mapping[str, Any]) -> DraftRequest:
    """The branch's request: a refinement of the attempts it was sent, in the form it was
    sent (absent: a search's refinement in the run's search form, another in the run's
    form), else a first draft; asked by the draw it was sent."""
    if state.get("attempts"):
        planned = state.get("parent") is not None  # a search's refinement of a node
        form = state.get("form") or (plan.search_form if planned else None)
        ask = refine_request(plan, state, form)
    else:
        ask = generate_request(plan, state)
    warm = plan.settings.temperature is None  # a temperature the run set holds for all
    draw = state.get("draw", state["candidate"])
    model = candidate_model(ask.model, draw, ask.config, warm=warm)
    return ask._replace(model=model, config=_labelled(ask.config, state["candidate"]))


def _labelled(config: Any, index: int) -> Any:
    """A call's config with the candidate's index in its metadata (traces, the live line)."""
    return {**config, "metadata": {**(config.get("metadata") or {}), "candidate": index}}


def _candidate(
    state: Mapping[str, Any], reply: DraftReply, judged: CritiqueResult | None
) -> dict[str, Any]:
    """The branch's write: its reply, judged (or rejected), appended to `candidates`."""
    record: Candidate = {
        "index": state["candidate"],
        "draft": reply.text,
        "critique": judged.critique.model_dump() if judged else {},
        "usage": add_usage(reply.usage, judged.usage if judged else None),
        "verified": judged.critique.verified if judged else None,
        "checked": judged.checked if judged else None,
    }
    problems = [*([reply.problem] if reply.problem else []), *(judged.problems if judged else ())]
    if problems:
        record["problems"] = problems
    if reply.rejected is not None:
        record["rejected"] = reply.rejected
    if judged is not None:
        record["critique_usage"] = add_usage(judged.usage)
    if state.get("planned_because"):
        record["planned_because"] = state["planned_because"]
    return {"branches": [placed(record, place_of(state))]}


DRAFT_TASK = "candidate_draft"
"""The task a branch asks its reply in: its result is saved as it comes in (see `_draft`)."""


def _ask(ask: DraftRequest) -> dict[str, Any]:
    """The branch's reply, asked as a task of its own inside the branch's task.

    LangGraph saves a task's result at once, as a write of the branch, and hands it back
    when the branch runs again (a resume after a kill) instead of calling it again: a
    branch stopped during its critique keeps its draft, so a kill repeats only the calls
    that were in flight. A reply is saved as a plain dict (the saver's own types).
    """
    return ask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)._asdict()


async def _aask(ask: DraftRequest) -> dict[str, Any]:
    """`_ask`, on the event loop."""
    reply = await aask_draft(ask.model, ask.messages, ask.role, ask.config, ask.guard)
    return reply._asdict()


_draft: Any = cast(Any, task(name=DRAFT_TASK))(_ask)
_adraft: Any = cast(Any, task(name=DRAFT_TASK))(_aask)


def make_candidate(parts: Parts) -> Node:
    """Build the branch node: one sampled reply of a draft step, critiqued."""

    def candidate(state: CandidateInput, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Sample one reply for the draft step and critique it."""
        state = {**state, "task": resolved(state["task"])}
        plan = parts.plan(runtime.context)
        ask = _request(plan, state)
        reply = DraftReply(**_draft(ask).result())
        judged = None
        if reply.text:
            why = _unasked(plan, state, reply)
            request = critique_request(state, reply.text, ask.iteration, unasked=why)
            with model_errors("critic", plan.critic.model):
                judged = plan.critic.invoke(request, _trace(plan, ask.iteration, state))
        return _candidate(state, reply, judged)

    async def acandidate(state: CandidateInput, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Sample one reply for the draft step and critique it."""
        state = {**state, "task": resolved(state["task"])}
        plan = parts.plan(runtime.context)
        ask = _request(plan, state)
        reply = DraftReply(**await _adraft(ask))
        judged = None
        if reply.text:
            why = _unasked(plan, state, reply)
            request = critique_request(state, reply.text, ask.iteration, unasked=why)
            with model_errors("critic", plan.critic.model):
                judged = await plan.critic.ainvoke(request, _trace(plan, ask.iteration, state))
        return _candidate(state, reply, judged)

    stops = StepStops()  # this graph's steps of candidates, each while its branches run
    return Node(
        first_verified(candidate, stops), first_verified_async(acandidate, stops), name="candidate"
    )


def _unasked(plan: RunPlan, state: Mapping[str, Any], reply: DraftReply) -> str | None:
    """Why the branch's critic is not to be asked: its share of the budget left before the
    step (what was left over the step's width), less its draft, cannot hold a critique
    (None: it can, or the run has no budget). A share, not what the other branches have
    spent, so that the decision does not hang on which branch finishes first."""
    budget = plan.settings.max_tokens_total
    if budget is None:
        return None
    share = (budget - int(state.get("spent") or 0)) / max(int(state.get("width") or 1), 1)
    drafted = int(reply.usage["total_tokens"])
    return unasked_why(plan, share - drafted, drafted, state.get("critique_cost"))


def _trace(plan: RunPlan, iteration: int, state: Mapping[str, Any]) -> Any:
    config = plan.trace("candidate", "critic", plan.critic.model, iteration)
    return _labelled(config, state["candidate"])


def _attempt(state: RefineState, candidates: list[Candidate]) -> Attempt:
    """The step's attempt: the picked candidate, the others beside it.

    When every reply was rejected, a refine step keeps the previous draft and its
    critique (the `unchanged` policy then ends the run), a first draft stays empty.
    """
    attempts = state.get("attempts") or []
    chosen = best_candidate(candidates)
    iteration = state.get("iteration", 0) + 1 if attempts else 0
    if chosen is not None:
        draft, critique = chosen["draft"], chosen["critique"]
    elif attempts:
        draft, critique = attempts[-1]["draft"], attempts[-1]["critique"]
    else:
        draft, critique = "", Critique(feedback=[NO_USABLE_REPLY], score=0.0).model_dump()
    attempt: ChainAttempt = {
        "iteration": iteration,
        "draft": draft,
        "critique": critique,
        "usage": add_usage(*(c["usage"] for c in candidates)),
        "critique_usage": add_usage(*(c.get("critique_usage") for c in candidates)),
        "candidates": [c for c in candidates if c is not chosen],
    }
    if chosen is None:
        return attempt
    attempt["candidate"] = chosen["index"]
    attempt["kept_because"] = why_kept(chosen, candidates)
    attempt["checked"] = chosen.get("checked")
    if chosen.get("problems"):
        attempt["problems"] = list(chosen["problems"])
    if chosen.get("planned_because"):
        attempt["planned_because"] = chosen["planned_because"]
    return placed(attempt, place_of(chosen))


def _say_the_vote_decides(attempt: Attempt, drafts: Sequence[Mapping[str, Any]]) -> None:
    """With `select="vote"`, the step's kept draft only feeds the next step: say that the
    vote of every draft so far decides the answer, with its tally, before why this one."""
    votes = vote_so_far(drafts)
    if votes is None:
        return
    why = attempt.get("kept_because")
    attempt["kept_because"] = (
        f"the vote decides the answer, not this pick (so far {votes.words()}); "
        f"kept as the step's draft" + (f": {why}" if why else "")
    )


def make_pick(parts: Parts) -> Node:
    """Build the node that takes the best candidate and records the step."""

    def pick(state: RefineState, runtime: Runtime[RefineContext]) -> dict[str, Any]:
        """Keep the best of the step's candidates as its draft, and decide whether to stop."""
        candidates = sorted(state.get("branches") or [], key=lambda c: c["index"])
        attempt = _attempt(state, candidates)
        plan = parts.plan(runtime.context)
        if plan.select == "vote" and "candidate" in attempt:
            _say_the_vote_decides(attempt, [*drafts_of(state.get("attempts") or []), *candidates])
        writes = step_record(plan, state, attempt, attempt["usage"])
        return {
            **writes,
            "draft": attempt["draft"],
            "iteration": attempt["iteration"],
            "branches": Overwrite([]),
        }

    return Node(pick, name="pick")
