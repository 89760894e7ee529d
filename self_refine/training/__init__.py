"""Self-Refine inside a reinforcement-learning trainer (TRL's GRPOTrainer).

`refine_rollout` builds a `rollout_func` that refines each step's wrong samples
through the refine graph, the policy answering through `PolicyChatModel` (a
transformers model as a chat model, its concurrent calls batched into one
`generate`; a vision-language model reads a prompt's images through its
processor); `verifier_reward` makes reward functions of the same verifiers (and of
`STATED_ANSWER`, the "stated_answer" check: an answer counts only where the reply's
last line states it);
`trainable_model` turns the embedded GGUF model into a transformers model directory
the trainer can train; `evaluate_policy` measures a policy's acc@t1, acc@t2 and
transitions on held-out items (`python -m self_refine.training.evaluate`). torch,
transformers and TRL are imported only when used (`pip install
"langgraph-self-refine[training]"`).
"""

from self_refine.training.checks import STATED_ANSWER
from self_refine.training.convert import trainable_model
from self_refine.training.evaluate import Evaluation, evaluate_policy, evaluation_callback
from self_refine.training.policy import PolicyCall, PolicyChatModel
from self_refine.training.rewards import METRICS, log_refine_metrics, verifier_reward
from self_refine.training.rollout import RefineRollout, RefineStepError, refine_rollout
from self_refine.training.samples import TRAIN_ON, TrainOn

__all__ = [
    "Evaluation",
    "METRICS",
    "STATED_ANSWER",
    "TRAIN_ON",
    "PolicyCall",
    "PolicyChatModel",
    "RefineRollout",
    "RefineStepError",
    "TrainOn",
    "evaluate_policy",
    "evaluation_callback",
    "log_refine_metrics",
    "refine_rollout",
    "trainable_model",
    "verifier_reward",
]
