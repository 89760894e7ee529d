"""Whether a call may run: every refusal of a run's settings, before anything is written.

The door (`graphs/checked.py`) calls `check` once for every call, with the thread it
read; the command line calls it first, before it opens its storage, and hands what it
returns to the door, which then does not check again (`Checked.checked_for`). `check`
works the call's settings out (`resolve.resolve`) and refuses:

- settings that do not suit the graph (`check_settings`: a run with no critic must
  sample and vote, a vote needs drafts that state a final answer, the human critic
  answers one draft at a time and needs the run saved);
- a continued run whose thread lost its input (`thread_damage`) or that changes a
  setting that shapes its tree (`FIXED_SETTINGS`);
- new input of the wrong shape (`validate_input`), on a thread whose run is unfinished,
  or that the run's critics cannot judge or its models cannot answer (`check_models`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command, StateSnapshot

from self_refine.content import TaskContent, has_images
from self_refine.critics import HumanCritic, LLMCritic
from self_refine.errors import ConfigError
from self_refine.input_checks import validate_input
from self_refine.models.images import refuse_images
from self_refine.models.local import LocalChatModel
from self_refine.persistence.failures import thread_damage
from self_refine.prompts import PROFILES, generate_messages
from self_refine.settings.fields import NO_CRITIC, RefineContext
from self_refine.settings.plan import Parts, Role, RunPlan
from self_refine.settings.resolve import StrategyRow, default_select, from_kept, resolve
from self_refine.state import RUN_CONTEXT

__all__ = [
    "FIXED_SETTINGS",
    "UNFINISHED_MESSAGE",
    "Checked",
    "check",
    "check_models",
    "check_settings",
    "is_new_input",
    "run_finished",
]

FIXED_SETTINGS = ("strategy", "candidates")
"""The settings a continued run cannot change: they shape the tree its steps have begun."""

UNFINISHED_MESSAGE = (
    "this thread has an unfinished refinement: continue it by invoking the graph "
    "with None as the input, or give the new task a new thread id"
)


@dataclass(frozen=True)
class Checked:
    """A call the door may run: its settings, and what it was checked for.

    `row` is the row of `DEFAULT_STRATEGY` that made a strategy of "auto" concrete (None
    when the settings or the thread named it). `input` is the call's input and
    `checkpoint` the thread's checkpoint it was checked on (None: a thread with no run).
    """

    settings: RefineContext
    row: StrategyRow | None
    input: Any
    checkpoint: str | None
    saved: bool

    def checked_for(self, input: Any, thread: StateSnapshot | None, saved: bool) -> bool:
        """Whether this is the check of that very call: the same input, on the thread as
        it stands, saved alike. The door runs such a call without checking it again."""
        return (
            self.input is input and _checkpoint(thread) == self.checkpoint and (self.saved == saved)
        )


def is_new_input(payload: Any) -> bool:
    """Whether a call brings new input (not None, nor a Command that continues a run)."""
    return payload is not None and not isinstance(payload, Command)


def run_finished(thread: StateSnapshot) -> bool:
    """Whether the thread's run has ended: nothing to run next and no step left half-done.

    A run paused or stopped mid-way is not: it has a node to run next, or a step whose
    every branch wrote before the program stopped (nothing is next, but the step's tasks
    are there with their writes, and continuing the thread applies them and goes on),
    or attempts and no stop reason.
    """
    values = thread.values
    unfinished = values.get("attempts") and not values.get("stop_reason")
    return not (thread.next or thread.tasks or unfinished)


def check(
    parts: Parts,
    input: Any,
    context: Any = None,
    *,
    thread: StateSnapshot | None = None,
    saved: bool,
) -> Checked:
    """The settings of a call (`input`: new input, or None / a Command to continue the run
    on `thread`), once it is known to be one that may run; ConfigError otherwise.

    `saved` says whether the run is saved (the human critic needs it to be). See the
    module docstring for what is refused.
    """
    values: Mapping[str, Any] = thread.values if thread is not None else {}
    unfinished = thread is not None and not run_finished(thread)
    if not is_new_input(input):
        # A stored run with no settings kept began before runs kept them: {}.
        kept = values.get(RUN_CONTEXT, {} if values.get("task") else None)
        settings, row = resolve(parts, context, kept, values)
        plan = parts.plan(settings)
        _refuse_damaged(thread)
        check_settings(plan, saved=saved)
        if unfinished:
            _refuse_fixed_changes(values.get(RUN_CONTEXT), settings)
        return Checked(settings, row, input, _checkpoint(thread), saved)
    call = resolve(parts, context).settings
    if call.critics == (NO_CRITIC,):
        _check_without_critic(call, call.select or _profile_select(call))
    merged = {**values, **input} if isinstance(input, Mapping) else input
    validate_input(merged)
    settings, row = resolve(parts, call, None, merged)
    plan = parts.plan(settings)
    if unfinished:
        raise ConfigError(UNFINISHED_MESSAGE)
    check_settings(plan, saved=saved)
    plan.critic.critic.check(merged.get("reference"))
    generates = not (merged.get("draft") or "").strip()  # else the input brings it
    check_models(plan, generates=generates, images=has_images(merged.get("task")))
    if generates:
        _check_room(plan, merged["task"])
    return Checked(settings, row, input, _checkpoint(thread), saved)


def check_settings(plan: RunPlan, *, saved: bool) -> None:
    """Raise ConfigError when a run's settings cannot run in this graph, new run or not.

    A run with no critic must sample and vote (`_check_without_critic`: the graph's
    `critics=["none"]` meets the call's settings here); a vote needs drafts that state a
    final answer. A human critic answers one draft at a time and needs the run saved
    (`saved`) to be resumed with the answer.
    """
    settings = plan.settings
    if not plan.critiques:
        _check_without_critic(settings, plan.select)
    _check_vote(plan)
    if not isinstance(plan.critic.critic.explainer, HumanCritic):
        return
    if settings.candidates > 1:
        raise ConfigError(
            "the human critic answers one draft at a time; "
            f"candidates={settings.candidates} would ask about every candidate at "
            "once: use candidates=1 with it"
        )
    if not saved:
        raise ConfigError(
            "the human critic needs a checkpointer to resume the run with the answer: "
            "compile the graph with one (e.g. checkpointer=InMemorySaver()) or serve it "
            "with `self-refine studio`"
        )


def check_models(plan: RunPlan, *, generates: bool = True, images: bool = False) -> None:
    """Raise ConfigError when a model the run calls cannot be had (a model string of no
    known form, a missing key) or, for a task with `images`, cannot read them."""
    roles: list[Role] = ["generator", "refiner"] if generates else ["refiner"]
    models = {role: plan.model(role) for role in roles}
    explainer = plan.critic.critic.explainer
    if isinstance(explainer, LLMCritic):
        models["critic"] = explainer.model
    if images:
        for role, model in models.items():
            refuse_images(role, model)


def _check_without_critic(settings: RefineContext, select: str) -> None:
    """Raise ConfigError unless a run of these settings, answering by `select` (theirs, or
    the default their prompts give), can go without a critic.

    With no critique there is no feedback to refine from and no score to rank or stop
    by: only fresh samples answered by their vote make sense.
    """
    fix = 'or name a critic (e.g. critics "llm")'
    if settings.strategy in ("refine", "search"):
        raise ConfigError(
            f'critics "none" leaves nothing to refine from, and strategy "{settings.strategy}" '
            f'refines: use strategy "sample" (with select "vote"), {fix}'
        )
    if select != "vote":
        raise ConfigError(
            f'critics "none" gives no score, so select "{select}" has nothing to '
            f'rank by: use select "vote" (the final answer most samples state), {fix}'
        )
    for name in ("score_threshold", "patience"):
        if getattr(settings, name) is not None:
            raise ConfigError(
                f'{name} stops by the critic\'s score, and critics "none" gives none: '
                f"leave {name} out, {fix}"
            )


def _profile_select(settings: RefineContext) -> str:
    """The select a run of these settings takes when they name none, as far as their
    profile tells (the graph's own prompts may say otherwise: `RunPlan.select`)."""
    known = PROFILES.get(settings.profile)
    return default_select(known is not None and known.final_answer)


def _check_vote(plan: RunPlan) -> None:
    """Raise ConfigError for `select="vote"` when the run's prompts (the graph's own, else
    the profile's) ask for drafts that state no final answer: there is nothing to count."""
    if plan.settings.select != "vote" or plan.prompts.final_answer:
        return
    voting = ", ".join(f'"{p.name}"' for p in PROFILES.values() if p.final_answer)
    raise ConfigError(
        f'select="vote" counts final answers, and the drafts of profile '
        f"{plan.prompts.name!r} state none: use a profile whose drafts end with one "
        f'({voting}), or select "best"'
    )


def _check_room(plan: RunPlan, task: TaskContent) -> None:
    """Refuse now a task whose first request would not fit the local model's context."""
    generator = plan.models.get("generator")
    if isinstance(generator, LocalChatModel):
        generator.check_room(generate_messages(plan.prompts, task))


def _refuse_fixed_changes(kept: Mapping[str, Any] | None, settings: RefineContext) -> None:
    """Raise ConfigError when a continuation changes a setting the run cannot change midway."""
    if not kept:
        return
    began = from_kept({})
    changed = [
        f"{name}={kept.get(name, getattr(began, name))!r} -> {getattr(settings, name)!r}"
        for name in FIXED_SETTINGS
        if getattr(settings, name) != kept.get(name, getattr(began, name))
    ]
    if changed:
        raise ConfigError(
            f"a continued run cannot change {', '.join(changed)}: continue it with the "
            "settings it began with (leave them out), or start the task again on a new "
            "thread with the new ones"
        )


def _refuse_damaged(thread: StateSnapshot | None) -> None:
    """Raise ConfigError when the thread to continue lost its input (`thread_damage`):
    continued, it would run on with an empty task."""
    if thread is None:
        return
    thread_id = (thread.config.get("configurable") or {}).get("thread_id")
    if damage := thread_damage(str(thread_id), thread.values):
        raise ConfigError(f"{damage}: it cannot be continued; start its task again on a new thread")


def _checkpoint(thread: StateSnapshot | None) -> str | None:
    """The id of the thread's last checkpoint (None: no thread, or one with no run yet)."""
    if thread is None or not thread.values:
        return None
    checkpoint = (thread.config.get("configurable") or {}).get("checkpoint_id")
    return None if checkpoint is None else str(checkpoint)
