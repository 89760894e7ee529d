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
from self_refine.training.tasks import completion_text, task_of

__all__ = ["METRICS", "log_refine_metrics", "verifier_reward"]

METRICS = (
    "acc_t1",
    "acc_t2",
    "wrong_to_right",
    "right_to_wrong",
    "refined",
    "refine_tokens",
    "refine_seconds",
)
"""What each step logs, under `self_refine/`: accuracy before and after refinement and the
transitions (fractions of the step's samples), the fraction refined, the tokens the policy
wrote for turn 2 (the step's total) and the seconds turn 2 took."""

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
    critics = [resolve_verifier(v) for v in verifiers]

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
    values = {
        "acc_t1": sum(before) / size,
        "acc_t2": sum(after) / size,
        "wrong_to_right": sum(not b and a for b, a in zip(before, after, strict=True)) / size,
        "right_to_wrong": sum(b and not a for b, a in zip(before, after, strict=True)) / size,
        "refined": sum(not b for b in before) / size,
        "refine_tokens": float(sum(int(e["refine_tokens"]) for e in entries)),
        "refine_seconds": float(entries[0]["refine_seconds"]),
    }
    for name in METRICS:
        log_metric(f"self_refine/{name}", values[name])
