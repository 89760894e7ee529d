"""What a call's settings are: the call's context over the run's or the graph's, with
"auto" made concrete. `resolve` is the one function that works it out; the door
(`graphs/checked.py`, through `check.check`) calls it once per call:

1. the call's context: a `RefineContext` is the call's settings, whole; a dict (what
   a server, Studio or a JSON client sends) or a parent graph's own dataclass names
   the fields it changes: over the settings its run began with when the call
   continues a run, over the graph's settings when it starts one;
2. for a call that brings none (a resume, a continuation with None), the settings
   its run began with, kept in the thread (`RefineContext.kept`, never a secret);
3. else the graph's settings (`create_self_refine_graph(settings=...)`).

A strategy of "auto" then becomes the run's own (`DEFAULT_STRATEGY`), and a run's
`select` and critics, when its settings name none, come from `default_select` and
`critic_specs`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple, Protocol

from self_refine.critics.resolve import resolve_critics
from self_refine.errors import ConfigError
from self_refine.models.offline import OfflineModel
from self_refine.prompts.profiles import PromptSet, get_profile
from self_refine.redact import redact_url, url_has_password
from self_refine.settings.fields import FIELD_NAMES, NO_CRITIC, RefineContext, Select, Strategy

__all__ = [
    "DEFAULT_STRATEGY",
    "KEPT_BEFORE",
    "Given",
    "Resolved",
    "StrategyRow",
    "critic_specs",
    "default_select",
    "from_kept",
    "resolve",
]

StrategyRow = Literal["vote", "offline", "answer", "verifier", "critic"]
"""A row of `DEFAULT_STRATEGY`: which of a run's checks decided what "auto" takes."""

DEFAULT_STRATEGY: dict[StrategyRow, tuple[Strategy, str]] = {
    "vote": ("sample", 'select "vote" counts the final answers of drafts sampled apart'),
    "offline": (
        "refine",
        "the offline stand-in writes the same draft every time, so fresh drafts add nothing",
    ),
    "answer": (
        "sample",
        "the default when drafts state a final answer and no verifier checks them: "
        "self-consistency",
    ),
    "verifier": (
        "sample",
        "the default when a verifier checks the drafts: fresh drafts until one passes",
    ),
    "critic": (
        "refine",
        "the default when no verifier checks the drafts: the paper's loop of critique and rewrite",
    ),
}
"""The strategy a run whose settings say "auto" takes, by the checks it has, first row first,
and why; the measurements behind the rows are in docs/guides/quality.md ("The default
strategy").

- "vote": `select="vote"` counts answers of drafts sampled apart; refine writes one chain.
- "offline": a writer (generator or refiner) is the offline stand-in, whose drafts never
  differ.
- "answer": the profile's drafts end with a final answer, no verifier of the run can judge
  them, and the user named none of `select`, `score_threshold`, `patience` and a critic
  other than "none": the run samples with select "vote" and critics "none".
- "verifier": a verifier in `critics` can judge the drafts (the reference holds what it
  needs).
- "critic": the LLM critic (or a person) alone judges: the paper's loop.
"""

KEPT_BEFORE: dict[str, Any] = {"strategy": "refine"}
"""What a run kept before a setting existed ran with, for each such setting whose default
is no longer that (threads kept before `strategy` refined)."""


class Given(Protocol):
    """What the graph was given that a run's settings fall back on (`plan.Parts`)."""

    @property
    def roles(self) -> Mapping[str, Any]: ...
    @property
    def settings(self) -> RefineContext: ...
    @property
    def critics(self) -> tuple[Any, ...]: ...
    @property
    def prompts(self) -> PromptSet | None: ...
    @property
    def response_format(self) -> Any: ...


class Resolved(NamedTuple):
    """A call's settings, and which row of `DEFAULT_STRATEGY` made "auto" concrete (None
    when the settings named a strategy or the run kept one)."""

    settings: RefineContext
    row: StrategyRow | None = None


def resolve(
    given: Given,
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
        concrete = {"strategy": strategy, "select": "vote", "critics": (NO_CRITIC,)}
        return Resolved(dataclasses.replace(settings, **concrete), row)
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


def _auto_row(given: Given, settings: RefineContext, reference: Any) -> StrategyRow:
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
