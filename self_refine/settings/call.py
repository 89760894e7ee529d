"""A call's settings at the door: what they are (`resolve`), whether they may run
(`check`), and the plan each run gets (`Parts.plan`).

The door (`graphs/checked.py`) calls `check` once for every call, with the thread it
read; the command line calls it first, before it opens its storage, and hands what it
returns to the door, which then does not check again (`Checked.checked_for`). `Parts`
is what the factory was given, which a call's settings fall back on. One module, past
the ~300 lines a module should hold, so that the door's one call stays in one place.

`resolve` works a call's settings out:

1. the call's context: a `RefineContext` is the call's settings, whole; a dict (what
   a server, Studio or a JSON client sends) or a parent graph's own dataclass names
   the fields it changes: over the settings its run began with when the call
   continues a run, over the graph's settings when it starts one;
2. for a call that brings none (a resume, a continuation with None), the settings
   its run began with, kept in the thread (`RefineContext.kept`, never a secret);
3. else the graph's settings (`create_self_refine_graph(settings=...)`);

and a strategy of "auto" then becomes the run's own (`DEFAULT_STRATEGY`). `check`
refuses:

- settings that do not suit the graph (`check_plan`: a run with no critic must
  sample and vote, a vote needs drafts that state a final answer, the human critic
  answers one draft at a time and needs the run saved);
- a continued run whose thread lost its input (`thread_damage`) or that changes a
  setting that shapes its tree (`FIXED_SETTINGS`);
- new input of the wrong shape (`validate_input`), on a thread whose run is unfinished,
  or that the run's critics cannot judge or its models cannot answer (`check_models`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langgraph.types import Command, StateSnapshot

from self_refine.content import TaskContent, has_images
from self_refine.critics import CombinedCritic, Critic, HumanCritic, LLMCritic, resolve_critics
from self_refine.critics.base import RunCritic
from self_refine.critics.judge import FirstDraftJudge
from self_refine.critics.none import NO_CRITIC, NoCritic
from self_refine.critics.typed import ResponseFormat, TypedAnswerCritic
from self_refine.errors import ConfigError
from self_refine.input_checks import validate_input
from self_refine.models.images import refuse_images
from self_refine.models.local import LocalChatModel
from self_refine.models.offline import OfflineModel
from self_refine.models.roles import ModelLike
from self_refine.persistence.failures import thread_damage
from self_refine.prompts import PROFILES, PromptSet, generate_messages, get_profile
from self_refine.prompts.forms import DEFAULT_REFINE_FORM
from self_refine.redact import redact_url, url_has_password
from self_refine.settings.deployment import Deployment
from self_refine.settings.fields import (
    DEFAULT_STRATEGY,
    FIELD_NAMES,
    RefineContext,
    Select,
    StrategyRow,
)
from self_refine.settings.plan import CriticCall, Role, RoleModels, RunPlan
from self_refine.state import RUN_CONTEXT
from self_refine.stopping import StopPolicy, policies_for

__all__ = [
    "DEFAULT_STRATEGY",
    "FIXED_SETTINGS",
    "KEPT_BEFORE",
    "UNFINISHED_MESSAGE",
    "Checked",
    "Parts",
    "Resolved",
    "StrategyRow",
    "check",
    "check_models",
    "check_plan",
    "critic_specs",
    "default_select",
    "from_kept",
    "is_new_input",
    "one_refinement",
    "plans_steps",
    "resolve",
    "run_finished",
]

_ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
"""What a model given as a string reads when the settings do not say: part of a plan's key."""

_PLANS_KEPT = 32


KEPT_BEFORE: dict[str, Any] = {"strategy": "refine"}
"""What a run kept before a setting existed ran with, for each such setting whose default
is no longer that (threads kept before `strategy` refined)."""


def plans_steps(kept: Mapping[str, Any]) -> bool:
    """Whether a run that kept these settings (`RefineContext.kept`) plans its steps (it
    samples or searches) rather than refine one draft, as a run kept before the strategy
    setting did."""
    return bool({**KEPT_BEFORE, **kept}["strategy"] != "refine")


class Resolved(NamedTuple):
    """A call's settings, and which row of `DEFAULT_STRATEGY` made "auto" concrete (None
    when the settings named a strategy or the run kept one)."""

    settings: RefineContext
    row: StrategyRow | None = None


@dataclass(frozen=True)
class Parts:
    """What the factory was given: role models, critics, judge, stop policies, prompts,
    response format, the graph's settings (those of a run whose call brings no context),
    how the nodes call a run's critic (`critic_call`), and, for a served graph, what its
    runs may choose (`deployment`).

    The nodes close over one `Parts` and ask it for their run's plan.
    """

    roles: Mapping[Role, ModelLike | None]
    settings: RefineContext
    critic_call: Callable[[RunCritic], CriticCall]
    critics: tuple[Any, ...] = ()
    judge: tuple[Any, ...] = ()
    stop: tuple[StopPolicy, ...] | None = None
    prompts: PromptSet | None = None
    response_format: ResponseFormat | None = None
    deployment: Deployment | None = None
    _plans: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plans", functools.lru_cache(_PLANS_KEPT)(self._plan))

    def critic_specs(self, settings: RefineContext) -> list[Any]:
        """The critics of a run of these settings (see `critic_specs`)."""
        return critic_specs(settings, self.critics, self.prompts)

    def plan(self, settings: RefineContext) -> RunPlan:
        """The plan of a run's settings, with the environment models read as it is now."""
        if not isinstance(settings, RefineContext):
            raise ConfigError(
                "the run has no settings: run the graph through its compiled form "
                f"(create_self_refine_graph(...).compile()), got context {settings!r}"
            )
        if self.deployment is not None:  # before any model is made for the run
            self.deployment.check(settings, self.settings)
        environment = tuple(os.environ.get(name) for name in _ENVIRONMENT)
        plan: RunPlan = self._plans(settings, environment)
        return plan

    def _plan(self, settings: RefineContext, _environment: tuple[str | None, ...]) -> RunPlan:
        prompts = self.prompts or get_profile(settings.profile)
        critics = resolve_critics(critic_specs(settings, self.critics, prompts))
        answer_format = self.response_format
        final_answer = prompts.final_answer and answer_format is None
        if answer_format is not None:
            prompts = answer_format.prompts(prompts)
        models = RoleModels(settings, self.roles, prompts)
        explainer: Critic | None = None
        if critics.explainer == "human":
            explainer = HumanCritic()
        elif critics.explainer == "llm":
            model = models.get("critic")
            explainer = LLMCritic(model, prompts, models.ask(model))
        elif not isinstance(critics.explainer, str):
            explainer = critics.explainer  # a Critic object, or None
        critic: RunCritic
        if not critics.critiques:  # critics "none": a vote's samples, judged by nothing
            critic = NoCritic()
        elif answer_format is not None:
            critic = TypedAnswerCritic(
                critics.verifiers, explainer, answer_format, words_settle=prompts.words_settle
            )
        else:
            critic = CombinedCritic(critics.verifiers, explainer, words_settle=prompts.words_settle)
        judge = self.judge if settings.judge is None else settings.judge
        if judge:
            critic = FirstDraftJudge(judge, critic)
        return RunPlan(
            settings=settings,
            prompts=prompts,
            form=settings.refine_form or prompts.refine_form or DEFAULT_REFINE_FORM,
            policies=tuple(
                policies_for(
                    self.stop,
                    prompts.stop,
                    max_iterations=settings.max_iterations,
                    score_threshold=settings.score_threshold,
                    patience=settings.patience,
                    max_tokens_total=settings.max_tokens_total,
                )
            ),
            critic=self.critic_call(critic),
            critiques=critics.critiques,
            writes_code=prompts.name.startswith("code") or "python_tests" in prompts.critics,
            models=models,
            answer_format=answer_format,
            select=settings.select or default_select(final_answer),
        )


def default_select(final_answer: bool) -> Select:
    """The select of a run whose settings name none: "vote" when its drafts end with a final
    answer (the profile's `final_answer`, drafts not typed as JSON), else "best": where
    drafts state an answer, their count picks better than the critic's score (measured:
    docs/guides/quality.md, "Arithmetic without a key: the vote by default")."""
    return "vote" if final_answer else "best"


def critic_specs(
    settings: RefineContext, critics: Sequence[Any] = (), prompts: PromptSet | None = None
) -> list[Any]:
    """A run's critics: its settings' names, else the graph's `critics`, else the profile's."""
    if settings.critics:
        return list(settings.critics)
    if critics:
        return list(critics)
    return list((prompts or get_profile(settings.profile)).critics)


def resolve(
    given: Parts,
    context: Any,
    kept: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
) -> Resolved:
    """A call's settings: `context` (the call's) over the settings the run began with
    (`kept`, what its thread keeps), else over the graph's (see the module docstring).

    A strategy of "auto" becomes the run's own: the one the run kept (`kept` empty: a
    run kept before its settings were, which refined; its select and critics too unless
    the call names them), else the one the checks of its input `run` (its task and
    reference) call for (the "answer" row also sets select "vote" and critics "none");
    with neither (a batch's settings, shared by runs of many references) it stays
    "auto" for each run's door to work out.
    """
    if isinstance(context, RefineContext):
        settings = context
    elif not kept:
        changes = _changes(context)
        settings = dataclasses.replace(given.settings, **changes) if changes else given.settings
    else:
        settings = from_kept({**kept, **_changes(context)})
    if settings.strategy != "auto":
        return Resolved(settings)
    if kept is not None:
        kept = {**KEPT_BEFORE, **kept}
        return Resolved(
            dataclasses.replace(
                settings,
                strategy=kept["strategy"],
                select=settings.select or kept.get("select"),
                critics=settings.critics or kept.get("critics"),
            )
        )
    if run is None:
        return Resolved(settings)
    row = _auto_row(given, settings, run.get("reference"))
    strategy = DEFAULT_STRATEGY[row][0]
    if row == "answer":
        concrete = dataclasses.replace(
            settings, strategy=strategy, select="vote", critics=(NO_CRITIC,)
        )
        return Resolved(concrete, row)
    return Resolved(dataclasses.replace(settings, strategy=strategy), row)


def from_kept(kept: Mapping[str, Any]) -> RefineContext:
    """The settings a run began with, read back from what its thread kept.

    A kept `base_url` whose password was masked cannot be used: the call must give its
    context again. A run kept before the `strategy` setting existed refined.
    """
    url = kept.get("base_url") or ""
    if url_has_password(url) and redact_url(url) == url:  # its password is the mask
        raise ConfigError(
            "the run's base_url carries a password, which is never stored: "
            "give base_url again in the context of this call"
        )
    return RefineContext(**{**KEPT_BEFORE, **kept})


def _auto_row(given: Parts, settings: RefineContext, reference: Any) -> StrategyRow:
    """The row of `DEFAULT_STRATEGY` for a run of `settings` on `reference`: by whether it
    votes, whether the offline stand-in writes its drafts, whether a verifier of its critics
    can judge drafts for that reference, and whether its drafts state a final answer."""
    prompts = given.prompts or get_profile(settings.profile)
    verifiers = resolve_critics(critic_specs(settings, given.critics, prompts)).verifiers
    writers = (
        getattr(settings, f"{role}_model") or settings.model or given.roles.get(role)
        for role in ("generator", "refiner")
    )
    if settings.select == "vote":
        return "vote"
    if any(_is_offline(writer) for writer in writers):
        return "offline"
    if any(verifier.applies(reference) is None for verifier in verifiers):
        return "verifier"
    # A typed answer's drafts are JSON, checked by its schema: no number to vote on.
    answer = (
        prompts.final_answer
        and given.response_format is None
        and settings.select is None
        and (settings.critics or given.critics or (NO_CRITIC,)) == (NO_CRITIC,)
        and settings.score_threshold is None
        and settings.patience is None
    )
    return "answer" if answer else "critic"


def _changes(context: Any) -> dict[str, Any]:
    """The settings a dict (its names checked, its None values left out) or another
    dataclass (a parent graph's own context: the fields it shares with this one) names.

    Anything else names none.
    """
    if isinstance(context, Mapping):
        for key in context:
            if key not in FIELD_NAMES:
                close = difflib.get_close_matches(str(key), FIELD_NAMES, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(
                    f"unknown context field {key!r}{hint}; valid fields: "
                    f"{', '.join(sorted(FIELD_NAMES))}"
                )
        return {key: value for key, value in context.items() if value is not None}
    if context is not None and dataclasses.is_dataclass(context):
        return {
            name: value
            for name in FIELD_NAMES
            if (value := getattr(context, name, None)) is not None
        }
    return {}


def _is_offline(model: Any) -> bool:
    """Whether `model` (a model string or object) is the offline stand-in."""
    if isinstance(model, str):
        return model.partition(":")[0].strip() == "offline"
    return isinstance(model, OfflineModel)


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
        _refuse_missing_draft(thread)
        check_plan(plan, saved=saved)
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
    check_plan(plan, saved=saved)
    plan.critic.critic.check(merged.get("reference"))
    generates = not (merged.get("draft") or "").strip()  # else the input brings it
    check_models(plan, generates=generates, images=has_images(merged.get("task")))
    if generates:
        _check_room(plan, merged["task"])
    return Checked(settings, row, input, _checkpoint(thread), saved)


def check_plan(plan: RunPlan, *, saved: bool) -> None:
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
    continued, it would run on with an empty task.

    A thread's input checkpoint (its first, which holds the input its first step reads)
    has no task yet: continued from there (time travel), the run replays from its input,
    as LangGraph replays it.
    """
    if thread is None or _INPUT_STEP in thread.next:
        return
    thread_id = (thread.config.get("configurable") or {}).get("thread_id")
    updated = (thread.metadata or {}).get("source") == "update"
    if updated and thread.values and not thread.values.get("task"):
        raise ConfigError(
            f"thread {thread_id} has no task: its state was updated (update_state) at its "
            "input checkpoint, before the run read its input; update it at a checkpoint "
            "after its first step, or replay it from its input checkpoint as it is"
        )
    if damage := thread_damage(str(thread_id), thread.values):
        raise ConfigError(f"{damage}: it cannot be continued; start its task again on a new thread")


_INPUT_STEP = "__start__"
"""LangGraph's first step, which reads a run's input into the state."""


def _refuse_missing_draft(thread: StateSnapshot | None) -> None:
    """Raise ConfigError when the thread's next step needs a draft it does not have: an
    `update_state(..., as_node="critique"|"refine")` made before any attempt."""
    if thread is None:
        return
    values = thread.values
    thread_id = (thread.config.get("configurable") or {}).get("thread_id")
    fix = (
        "update it as the generate step instead, with the draft to start from "
        "(update_state(config, {'draft': ...}, as_node='generate')), or fork it from a "
        "checkpoint after its first critique"
    )
    if "refine" in thread.next and not values.get("attempts"):
        raise ConfigError(
            f"thread {thread_id} has no critiqued draft for its refine step to improve: "
            "its state was updated as the critique step before any draft was critiqued; " + fix
        )
    updated = (thread.metadata or {}).get("source") == "update"
    if "critique" in thread.next and updated and not values.get("draft"):
        raise ConfigError(
            f"thread {thread_id} has no draft for its critique step to judge: its state "
            "was updated as the refine step before any draft was written; " + fix
        )


def _checkpoint(thread: StateSnapshot | None) -> str | None:
    """The id of the thread's last checkpoint (None: no thread, or one with no run yet)."""
    if thread is None or not thread.values:
        return None
    checkpoint = (thread.config.get("configurable") or {}).get("checkpoint_id")
    return None if checkpoint is None else str(checkpoint)


def one_refinement(settings: RefineContext) -> RefineContext:
    """The settings of a run that refines a draft once with one candidate (a training
    rollout's), refused where `settings` ask for another strategy or several candidates."""
    if settings.strategy not in ("auto", "refine") or settings.candidates != 1:
        raise ConfigError(
            "a rollout refines each wrong sample once with one candidate, so settings must "
            f"keep strategy='refine' and candidates=1 (got strategy={settings.strategy!r}, "
            f"candidates={settings.candidates}): drop them from settings"
        )
    return dataclasses.replace(settings, max_iterations=1, strategy="refine")
