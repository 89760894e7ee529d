"""verifier_reward(): a GRPOTrainer reward function made of the project's verifiers.

The same exact checks that tell a rollout's right samples from its wrong ones give
the reward. The function reads each sample's reference from the dataset column of
that name (TRL passes every column to reward functions) and, after
`refine_rollout`, the answer it names for each sample (`self_refine[i]["answer"]`:
in the "exchange" form the completion holds the whole turn-2 exchange, whose
refinement is what counts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from self_refine.critics import NotApplicable, Verifier, resolve_verifier
from self_refine.errors import ConfigError
from self_refine.training.tasks import completion_text, task_of

__all__ = ["verifier_reward"]

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
        return [
            _score(task_of(p), a, r) for p, a, r in zip(prompts, answers, references, strict=True)
        ]

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
