"""verifier_reward(): a GRPOTrainer reward function made of the project's verifiers.

The same exact checks that tell a rollout's right samples from its wrong ones give
the reward. The function reads each sample's reference from the dataset column of
that name (TRL passes every column to reward functions) and, after
`refine_rollout`, the answer it names for each sample (`self_refine[i]["answer"]`:
in the "exchange" form the completion holds the whole turn-2 exchange, whose
refinement is what counts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from self_refine.critics import NotApplicable, Verifier, resolve_verifier
from self_refine.errors import ConfigError
from self_refine.training.checks import training_verifiers
from self_refine.training.tasks import completion_text, task_of

__all__ = [
    "METRICS",
    "edit_distance",
    "edit_metrics",
    "log_refine_metrics",
    "normalised_edit_distance",
    "verifier_reward",
]

METRICS = (
    "acc_t1",
    "acc_t2",
    "wrong_to_right",
    "right_to_wrong",
    "refined",
    "edited",
    "edit_distance",
    "draft_tokens",
    "refine_tokens",
    "sampled_tokens",
    "refine_seconds",
)
"""What each step logs, under `self_refine/`: accuracy before and after refinement and the
transitions (fractions of the step's samples); the fraction refined (the wrong drafts sent
to turn 2); of those, the share whose refinement changed the draft (`edited`) and the mean
normalised edit distance between draft and refinement (`edit_distance`: character
Levenshtein distance over the longer text's length, 0 for a refinement that changed
nothing; both left out of a step with no wrong draft); the tokens the policy sampled in
the step for turn 1 (`draft_tokens`), for turn 2 (`refine_tokens`, every call: critiques
and refinements) and both (`sampled_tokens`); the seconds turn 2 took."""

RewardFunction = Callable[..., list[float | None]]


def verifier_reward(
    *verifiers: str | Verifier, partial: bool = False, reference: str = "reference"
) -> RewardFunction:
    """A reward function: 1.0 when every verifier that can judge the answer passes it, else 0.0.

    `partial` gives a failed answer the verifiers' mean score instead (a concept
    check's share of words used, say). An answer no verifier can judge (its
    reference lacks their data) gets None, which TRL leaves out of the group's
    baseline. The function's name, which TRL's metrics show
    (`rewards/<name>/mean`), is `verifier_` and the verifiers' names.
    """
    if not verifiers:
        raise ConfigError("verifier_reward needs at least one verifier: a name or a callable")
    critics = [resolve_verifier(v) for v in training_verifiers(verifiers)]

    def reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        references = kwargs.get(reference)
        if references is None:
            raise ConfigError(
                f"the dataset has no {reference!r} column: a verifier reward reads each "
                "sample's reference from it (set reference= to the column's name)"
            )
        rollout = kwargs.get("self_refine")
        answers = (
            [entry["answer"] for entry in rollout]
            if rollout is not None
            else [completion_text(c) for c in completions]
        )
        tasks = [task_of(p) for p in prompts]  # a verifier reads the text
        scores = [_score(t, a, r) for t, a, r in zip(tasks, answers, references, strict=True)]
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            drafts = (
                [
                    _score(t, e["draft"], r)
                    for t, e, r in zip(tasks, rollout, references, strict=True)
                ]
                if rollout is not None
                else scores
            )
            known = [s for s in drafts if s is not None]
            if known:
                log_metric(f"self_refine/reward_t1/{reward.__name__}", sum(known) / len(known))
            if rollout is not None:
                log_refine_metrics(rollout, log_metric)
            elif kwargs.get("completion_ids") is not None:  # a plain step: its drafts only
                sampled = float(sum(len(ids) for ids in kwargs["completion_ids"]))
                log_metric("self_refine/sampled_tokens", sampled)
        return scores

    def _score(task: str, answer: str, ref: Any) -> float | None:
        verdicts = []
        for critic in critics:
            try:
                verdicts.append(critic.verify(task, answer, ref))
            except NotApplicable:
                continue
        if not verdicts:
            return None
        if all(v.done for v in verdicts):
            return 1.0
        if not partial:
            return 0.0
        scores = [v.score if v.score is not None else float(v.done) for v in verdicts]
        return sum(scores) / len(scores)

    reward.__name__ = "verifier_" + "_".join(c.name for c in critics)
    return reward


def log_refine_metrics(
    entries: Sequence[Mapping[str, Any]], log_metric: Callable[[str, float], None]
) -> None:
    """Log a step's refine metrics (`METRICS`) from the rollout's `self_refine` entries.

    A reward function passes the `self_refine` and `log_metric` arguments TRL gives it.
    Several reward functions may each call it: the trainer averages what a step logged
    twice, and the values are the same.
    """
    if not entries:
        return
    size = len(entries)
    before = [bool(e["correct_before"]) for e in entries]
    after = [bool(e["correct_after"]) for e in entries]
    draft_tokens = float(sum(int(e.get("draft_tokens", 0)) for e in entries))
    refine_tokens = float(sum(int(e["refine_tokens"]) for e in entries))
    values = {
        "acc_t1": sum(before) / size,
        "acc_t2": sum(after) / size,
        "wrong_to_right": sum(not b and a for b, a in zip(before, after, strict=True)) / size,
        "right_to_wrong": sum(b and not a for b, a in zip(before, after, strict=True)) / size,
        "refined": sum(not b for b in before) / size,
        "draft_tokens": draft_tokens,
        "refine_tokens": refine_tokens,
        "sampled_tokens": draft_tokens + refine_tokens,
        "refine_seconds": float(entries[0]["refine_seconds"]),
        **edit_metrics(
            [
                (str(e["draft"]), e.get("refinement"))
                for e, right in zip(entries, before, strict=True)
                if not right
            ]
        ),
    }
    for name in METRICS:
        if name in values:
            log_metric(f"self_refine/{name}", values[name])


def edit_metrics(refinements: Sequence[tuple[str, str | None]]) -> dict[str, float]:
    """`edited` and `edit_distance` of (draft, refinement) pairs; none for no pairs.

    A refinement of None (nothing new came) or equal to its draft but for blanks at the
    ends changed nothing: edit distance 0.
    """
    if not refinements:
        return {}
    distances = [
        0.0 if new is None else normalised_edit_distance(old.strip(), new.strip())
        for old, new in refinements
    ]
    return {
        "edited": sum(d > 0 for d in distances) / len(distances),
        "edit_distance": sum(distances) / len(distances),
    }


def normalised_edit_distance(a: str, b: str) -> float:
    """The Levenshtein distance of `a` and `b` in characters over the longer one's length."""
    longest = max(len(a), len(b))
    return edit_distance(a, b) / longest if longest else 0.0


def edit_distance(a: str, b: str) -> int:
    """The Levenshtein distance of two texts in characters (insert, delete, substitute: 1 each).

    Bit-parallel (Myers 1999, Hyyro 2003): one pass over `a` with the columns of `b` as the
    bits of an integer, so two replies of a thousand characters take milliseconds.
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    masks: dict[str, int] = {}
    for index, char in enumerate(b):
        masks[char] = masks.get(char, 0) | (1 << index)
    full, top = (1 << len(b)) - 1, 1 << (len(b) - 1)
    plus, minus, distance = full, 0, len(b)
    for char in a:
        equal = masks.get(char, 0)
        vertical = equal | minus
        horizontal = (((equal & plus) + plus) ^ plus) | equal
        up = (minus | ~(horizontal | plus)) & full
        down = plus & horizontal
        if up & top:
            distance += 1
        elif down & top:
            distance -= 1
        up = ((up << 1) | 1) & full
        down = (down << 1) & full
        plus = (down | ~(vertical | up)) & full
        minus = up & vertical
    return distance
