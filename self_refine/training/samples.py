"""What the trainer trains on for each sample of a step: its turn-1 draft, or its refinement.

A refined completion was written after a critique, not from the prompt alone, so it
cannot simply stand in for a sample of the prompt. Two ways, both from the literature:

- "exchange" (SCoRe style; the default): the sample is the turn-2 exchange as the
  policy took part in it. Its prompt is the refine request's opening (system and task
  turns, as the chat template rendered them); its completion is the draft turn, the
  critique turn and the refinement, with `env_mask` 0 on the draft and the critique and
  1 on the refinement. Every token the loss sees is scored in the context the policy
  sampled it in. The draft is masked too: the policy wrote it after the trainer's
  prompt, not after this opening.
- "refinement" (Critique-GRPO style): the sample is the trainer's prompt followed by the
  refinement's text. The policy learns to answer the prompt as the refinement does, but
  those tokens were sampled in another context, which the loss does not see: off-policy
  tokens treated as on-policy (the training guide gives the measured gap). The
  refinement ends with the end-of-sequence token its reply wrote; a reply cut at its
  length cap gets none, so the policy is not taught to stop where it was stopped.

Right drafts, and wrong ones whose refinement brought no new text, stay as sampled.
So, by default (`failed="draft"`), does a wrong draft whose refinement is wrong too:
it trains as the plain sample it is, with its reward of 0, and only a refinement that
passes becomes the sample. With `failed="refinement"` every refinement becomes the
sample, a failed one with its own reward of 0 (the wrong draft then gets no gradient).
The training guide gives the learning runs that chose the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage

from self_refine.training.policy import PolicyCall, PolicyChatModel

__all__ = [
    "FAILED",
    "TRAIN_ON",
    "Failed",
    "Outcome",
    "TrainOn",
    "TrainerSample",
    "trainer_sample",
]

TrainOn = Literal["exchange", "refinement"]
TRAIN_ON: tuple[TrainOn, ...] = ("exchange", "refinement")
Failed = Literal["draft", "refinement"]
FAILED: tuple[Failed, ...] = ("draft", "refinement")


@dataclass
class Outcome:
    """One sample of a step: its draft, and what refining it gave."""

    prompt: Any
    task: str
    prompt_ids: list[int]
    draft_ids: list[int]
    draft: str
    right_before: bool
    right_after: bool
    refinement: str | None = None
    """The new text of turn 2; None when the sample was not refined or nothing new came."""
    call: PolicyCall | None = None
    """The policy's call that wrote the refinement."""
    critique: list[str] = field(default_factory=list)
    thread_id: str | None = None
    refine_tokens: int = 0
    """Tokens the policy wrote for this sample's turn 2 (every call of its thread)."""
    trains_refinement: bool = False
    """Whether the trainer trains on the refinement (else on the draft as sampled)."""

    @property
    def answer(self) -> str:
        """The text this sample's reward judges: what the trainer trains on."""
        return self.refinement if self.trains_refinement and self.refinement else self.draft


@dataclass(frozen=True)
class TrainerSample:
    """The token ids GRPOTrainer trains on for one sample; `env_mask` 0 where no loss goes."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]


def trainer_sample(outcome: Outcome, train_on: TrainOn, policy: PolicyChatModel) -> TrainerSample:
    """The sample the trainer gets for this outcome (see the module docstring)."""
    if outcome.refinement is None or not outcome.trains_refinement:
        ids = outcome.draft_ids
        return TrainerSample(outcome.prompt_ids, ids, [1] * len(ids))
    if train_on == "refinement":
        tokenizer = policy.tokenizer
        ids = list(tokenizer.encode(outcome.refinement, add_special_tokens=False))
        call = outcome.call
        if call is not None and policy.finished(call.completion_ids):
            ids.append(call.completion_ids[-1])  # the end it wrote; none after a cut reply
        return TrainerSample(outcome.prompt_ids, ids, [1] * len(ids))
    call = outcome.call
    if call is None:
        raise ValueError("an exchange sample needs the policy call that wrote the refinement")
    first_ai = next(
        (i for i, m in enumerate(call.messages) if isinstance(m, AIMessage)), len(call.messages)
    )
    opening = policy.prompt_ids(call.messages[:first_ai])
    if call.prompt_ids[: len(opening)] != opening:
        opening = call.prompt_ids  # a chat template that renders a turn differently later
    between = call.prompt_ids[len(opening) :]
    return TrainerSample(
        opening,
        between + call.completion_ids,
        [0] * len(between) + [1] * len(call.completion_ids),
    )
