"""refine_rollout(): a TRL GRPOTrainer rollout function that refines a step's wrong samples.

Each step: the policy samples one completion per prompt (the prompts arrive repeated
`num_generations` times, as the trainer's own generation would see them) with the
trainer's sampling settings, in one batched `generate`; the verifiers judge each
completion; the wrong ones go through the refine graph (`arefine_batch`, one turn:
critique, refine, check), the policy as refiner through `PolicyChatModel`, whose
concurrent calls share one `generate`. The trainer gets each sample's token ids
(`samples.py`: the draft, or the refinement in the chosen form) and, for the reward
functions, a `self_refine` entry per sample (the answer to judge, whether it was
refined, right before and after). Turn 2 samples from a fork of torch's random state,
so the next step's drafts are those TRL's own generation would sample: a refine run
and a plain run of one seed train on the same samples until a refinement passes.

Image prompts (a dataset's `image` or `images` column, which TRL puts into each
prompt's first user message) need a vision-language policy, whose processor is the
trainer's `processing_class`: its drafts are sampled from the prompt as TRL renders it,
and the refine graph gets the task as text and image blocks, so that the critique (when
the policy critiques) and the refinement requests carry the image too. The trainer
scores every sample with the image inputs it makes itself from the dataset's images
and its own rendering of the prompt; the sample's ids carry that image once, in the
prompt (the draft's prompt, or the refine request's opening), so they line up.

Every refined sample goes to the JSONL `log`. The step's metrics (`METRICS`) reach the
trainer's log through TRL's public API: the rollout returns them per sample in its
`self_refine` entries, which TRL forwards to the reward functions, and `verifier_reward`
logs them with the `log_metric` argument TRL hands reward functions
(`rewards.log_refine_metrics`; a reward function of one's own calls it). A refine call
that fails fails the step.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from self_refine.batch.api import BatchResult, refine_batch
from self_refine.batch.output import append_jsonl
from self_refine.critics import Verifier, judge_draft, resolve_critics
from self_refine.critics.verifiers import EXPLAINER_NAMES
from self_refine.errors import ConfigError, SelfRefineError
from self_refine.graphs import Roles
from self_refine.models.resolve import check_model, resolve_model
from self_refine.prompts import get_profile
from self_refine.settings.call import one_refinement
from self_refine.settings.fields import RefineContext
from self_refine.training.checks import training_verifiers
from self_refine.training.policy import TOKEN_ALIGNED_INPUTS, PolicyCall, PolicyChatModel
from self_refine.training.samples import (
    FAILED,
    TRAIN_ON,
    Failed,
    Outcome,
    TrainOn,
    trainer_sample,
)
from self_refine.training.tasks import (
    References,
    graph_task,
    loggable_prompt,
    prompt_images,
    task_of,
)

__all__ = ["RefineRollout", "RefineStepError", "refine_rollout"]


class RefineStepError(SelfRefineError):
    """Refining a step's wrong samples failed; the step is not trained on."""


@dataclass
class RefineRollout:
    """The rollout function `refine_rollout` builds: `rollout(prompts, trainer) -> dict`.

    `last` holds the latest step's outcomes, one per sample.
    """

    references: References
    verifiers: list[str | Verifier]
    critics: list[Any]
    critic_model: BaseChatModel | str | None
    train_on: TrainOn
    failed: Failed
    max_new_tokens: int | None
    log: Path | None
    settings: RefineContext
    gather_seconds: float
    last: list[Outcome] | None = None

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """Sample, judge, refine the wrong samples and return what GRPOTrainer trains on."""
        for prompt in prompts:  # every prompt's reference found before any generation
            self.references.of(prompt)
        _check_trainer(trainer)
        processor = _processor_of(trainer.processing_class)
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        with _generating(trainer) as model:
            policy = PolicyChatModel(
                model=model,
                tokenizer=tokenizer,
                processor=processor,
                generation_config=trainer.generation_config,
                max_new_tokens=self.max_new_tokens or trainer.max_completion_length,
                gather_seconds=self.gather_seconds,
                chat_template_kwargs=_template_options(trainer),
            )
            outcomes, seconds = self.turns(prompts, policy, trainer.max_completion_length)
            samples = [trainer_sample(o, self.train_on, policy) for o in outcomes]
        self._report(outcomes, int(trainer.state.global_step))
        self.last = outcomes
        result: dict[str, Any] = {
            "prompt_ids": [s.prompt_ids for s in samples],
            "completion_ids": [s.completion_ids for s in samples],
            "logprobs": None,
            "self_refine": [
                {
                    "answer": o.answer,
                    "draft": o.draft,
                    "refined": o.refinement is not None,
                    "refinement": o.refinement,
                    "correct_before": o.right_before,
                    "correct_after": o.right_after,
                    "draft_tokens": len(o.draft_ids),
                    "refine_tokens": o.refine_tokens,
                    "refine_seconds": seconds,
                }
                for o in outcomes
            ],
        }
        if self.train_on == "exchange":
            result["env_mask"] = [s.env_mask for s in samples]
        return result

    def turns(
        self, prompts: list[Any], policy: PolicyChatModel, draft_tokens: int
    ) -> tuple[list[Outcome], float]:
        """Turn 1 and turn 2 of the prompts: sample, judge, refine the wrong ones once.

        Drafts are sampled as `policy` samples, at most `draft_tokens` tokens each.
        Returns one outcome per prompt and the seconds turn 2 took.
        """
        tasks = [task_of(p) for p in prompts]
        references = [self.references.of(p) for p in prompts]
        if policy.processor is None and any(prompt_images(p) for p in prompts):
            raise ConfigError(
                "a prompt carries images and the policy reads text: give a vision-language "
                "model with its processor (in a trainer: its processing_class)"
            )
        prompt_ids, inputs = _rendered_prompts(prompts, policy)
        marked = sorted({k for i in inputs for k in i} & set(TOKEN_ALIGNED_INPUTS))
        if self.train_on == "exchange" and marked:
            raise ConfigError(
                f"this policy's processor marks the prompt's tokens ({', '.join(marked)}), "
                "which GRPOTrainer makes from its own rendering of the trainer's prompt, not from "
                "the refine request's opening that an exchange sample starts with: "
                "pass train_on='refinement'"
            )
        drafts_ids = policy.generate_ids(prompt_ids, draft_tokens, inputs)
        outcomes = []
        for prompt, task, ids, ref, reference in zip(
            prompts, tasks, drafts_ids, prompt_ids, references, strict=True
        ):
            draft = policy.tokenizer.decode(ids, skip_special_tokens=True)
            right = bool(judge_draft(task, draft, reference, self.verifiers))
            outcomes.append(Outcome(prompt, task, ref, ids, draft, right, right))
        started = time.perf_counter()
        with _own_random_state(policy):
            self._refine(policy, [o for o in outcomes if not o.right_before])
        return outcomes, time.perf_counter() - started

    def _refine(self, policy: PolicyChatModel, wrong: list[Outcome]) -> None:
        """Refine the wrong outcomes through the graph, one turn, and fill in what came of it."""
        if not wrong:
            return
        with policy.recording() as calls, policy.expecting(len(wrong)):
            result = refine_batch(
                [graph_task(o.prompt, o.task) for o in wrong],
                model=policy,
                answers=[o.draft for o in wrong],
                correct=[False] * len(wrong),
                references=[self.references.of(o.prompt) for o in wrong],
                verifiers=self.verifiers,
                critics=self.critics,
                roles=Roles(critic=self.critic_model),
                settings=self.settings,
                concurrency=len(wrong),
            )
        _fail_on_errors(result, wrong)
        by_thread: dict[str, list[PolicyCall]] = {}
        for call in calls:
            by_thread.setdefault(str(call.metadata.get("thread_id")), []).append(call)
        for outcome, record in zip(wrong, result.records, strict=True):
            assert record is not None  # _fail_on_errors refused missing records
            thread = by_thread.get(str(record.get("thread_id")), [])
            outcome.thread_id = record.get("thread_id")
            outcome.refine_tokens = sum(len(c.completion_ids) for c in thread)
            attempts = record.get("attempts") or []
            outcome.critique = list((attempts[0].get("critique") or {}).get("feedback") or [])
            turn2 = next((a for a in attempts if a.get("iteration") == 1), None)
            if turn2 is None or turn2["draft"] == outcome.draft:
                continue
            outcome.refinement = str(turn2["draft"])
            outcome.right_after = bool(turn2.get("correct"))
            outcome.trains_refinement = outcome.right_after or self.failed == "refinement"
            outcome.call = _writer_of(thread, outcome.refinement)

    def _report(self, outcomes: list[Outcome], step: int) -> None:
        """Append the step's refined samples to the JSONL log."""
        refined = [o for o in outcomes if not o.right_before]
        if self.log is not None and refined:
            append_jsonl(
                self.log,
                [
                    {
                        "step": step,
                        "prompt": loggable_prompt(o.prompt),
                        "draft": o.draft,
                        "critique": o.critique,
                        "refinement": o.refinement,
                        "correct_before": o.right_before,
                        "correct_after": o.right_after,
                        "refine_tokens": o.refine_tokens,
                        "thread_id": o.thread_id,
                    }
                    for o in refined
                ],
            )


def _writer_of(calls: list[PolicyCall], refinement: str) -> PolicyCall | None:
    """The refiner call whose reply became the refinement (the latest, when asked again)."""
    refiner = [c for c in calls if c.metadata.get("role") == "refiner"]
    exact = [c for c in refiner if c.text.strip() == refinement.strip()]
    if exact:
        return exact[-1]
    containing = [c for c in refiner if refinement.strip() in c.text]
    found = containing or refiner
    return found[-1] if found else None


def _fail_on_errors(result: BatchResult, wrong: list[Outcome]) -> None:
    if not result.errors:
        return
    index, reason = sorted(result.errors.items())[0]
    raise RefineStepError(
        f"refining {len(result.errors)} of the step's {len(wrong)} wrong samples failed; "
        f"the first, {wrong[index].task[:60]!r}: {reason}"
    )


def _check_trainer(trainer: Any) -> None:
    """Refuse a trainer whose generation the rollout cannot stand in for."""
    if getattr(trainer, "use_vllm", False):
        raise ConfigError(
            "refine_rollout samples with transformers' generate: turn use_vllm off in GRPOConfig"
        )


def _template_options(trainer: Any) -> dict[str, Any]:
    """The chat template options the trainer renders prompts with (its training template)."""
    options = dict(getattr(trainer, "chat_template_kwargs", None) or {})
    if getattr(trainer, "chat_template", None) is not None:
        options["chat_template"] = trainer.chat_template
    return options


def _processor_of(processing_class: Any) -> Any:
    """The trainer's processor when it has one (a vision-language model's), else None."""
    try:
        from transformers import ProcessorMixin
    except ImportError:
        return None
    return processing_class if isinstance(processing_class, ProcessorMixin) else None


def _rendered_prompts(
    prompts: list[Any], policy: PolicyChatModel
) -> tuple[list[list[int]], list[dict[str, Any]]]:
    """The prompts' token ids and image inputs, as the trainer's own generation would have them.

    A string (TRL's standard format) is tokenized as it is; chat messages are rendered
    with the chat template, ready for the answer (the processor's, with its images,
    when the policy has one).
    """
    tokenizer, template = policy.tokenizer, policy.chat_template_kwargs
    ids: list[list[int]] = []
    inputs: list[dict[str, Any]] = []
    for prompt in prompts:
        if isinstance(prompt, str):
            ids.append(list(tokenizer(text=prompt)["input_ids"]))
            inputs.append({})
            continue
        if policy.processor is not None:
            prompt_ids, prompt_inputs = policy.render_conversation(prompt)
            ids.append(prompt_ids)
            inputs.append(prompt_inputs)
            continue
        rendered = tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, tokenize=True, return_dict=True, **template
        )
        ids.append(list(rendered["input_ids"]))
        inputs.append({})
    return ids, inputs


def _own_random_state(policy: PolicyChatModel) -> AbstractContextManager[Any]:
    """Turn 2 samples from a fork of torch's random state, which is left as turn 1 left it.

    So the next step's drafts are the ones TRL's own generation would sample: a refine
    run and a plain run of the same seed train on the same drafts until a refinement
    that passes changes a gradient, and a difference between their curves is refinement's.
    """
    import torch

    device = getattr(policy.model, "device", None)
    cuda = [device] if device is not None and device.type == "cuda" else []
    return torch.random.fork_rng(devices=cuda)


def _generating(trainer: Any) -> AbstractContextManager[Any]:
    """The trainer's model, unwrapped for generation as its own rollouts do."""
    try:
        from trl.models import unwrap_model_for_generation
    except ImportError:
        return nullcontext(trainer.model)
    return unwrap_model_for_generation(
        trainer.model_wrapped,
        trainer.accelerator,
        gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
        generation_kwargs=getattr(trainer, "generation_kwargs", None),
    )


def refine_rollout(
    dataset: Iterable[Mapping[str, Any]],
    *,
    verifiers: Sequence[str | Verifier] | None = None,
    reference: str = "reference",
    profile: str = "general",
    critics: Sequence[Any] | None = None,
    critic_model: BaseChatModel | str | None = None,
    train_on: TrainOn = "exchange",
    failed: Failed = "draft",
    max_new_tokens: int | None = None,
    log: str | Path | None = None,
    settings: RefineContext | None = None,
    gather_seconds: float = 0.05,
) -> RefineRollout:
    """Build a GRPOTrainer `rollout_func` that refines each step's wrong samples once.

    `dataset` is the trainer's training rows: the rollout looks up each prompt's
    reference (column `reference`) there, and checks them all now. `verifiers`
    (names or `(task, draft, reference)` callables; default: the `profile`'s)
    tell right from wrong. `critics` say what the refiner is told (default: the
    verifiers' findings; add "llm" for the LLM critic, which is the policy unless
    `critic_model` names another). `train_on` is "exchange" or "refinement" (see
    `self_refine.training.samples`); `failed` what a wrong draft whose refinement is
    wrong too trains on: "draft" (the default: the draft as sampled, reward 0) or
    "refinement" (the failed refinement, reward 0; the draft then gets no gradient).
    `max_new_tokens` caps a refine reply (default:
    the trainer's `max_completion_length`). Each refined sample is appended to the
    JSONL file `log`. `settings` are the refine graph's other settings (its
    `max_iterations` is 1: one refine turn with one candidate,
    `settings.call.one_refinement`). A critic model
    string is made a chat model here. Every argument is checked here, before any
    generation; what a rollout would ignore or fail on later raises ConfigError.
    """
    if train_on not in TRAIN_ON:
        raise ConfigError(f"train_on must be one of {', '.join(TRAIN_ON)}, got {train_on!r}")
    if failed not in FAILED:
        raise ConfigError(f"failed must be one of {', '.join(FAILED)}, got {failed!r}")
    rows = _check_dataset(dataset)
    run_settings = _check_settings(settings)
    _check_options(max_new_tokens, gather_seconds)
    if isinstance(verifiers, str) or isinstance(critics, str):
        which, given = (
            ("verifiers", verifiers) if isinstance(verifiers, str) else ("critics", critics)
        )
        raise ConfigError(
            f"{which} must be a list of names or callables, got the string {given!r}: "
            f"write {which}=[{given!r}]"
        )
    checks = training_verifiers(
        verifiers
        if verifiers is not None
        else [c for c in get_profile(profile).critics if c not in EXPLAINER_NAMES]
    )
    if not checks:
        raise ConfigError(
            f"the {profile!r} profile has no verifier: pass verifiers=[...] (names such as "
            "'answer' or 'concepts', or (task, draft, reference) callables), the exact checks "
            "that tell a right sample from a wrong one"
        )
    told = training_verifiers(critics) if critics is not None else list(checks)
    if "human" in told:
        raise ConfigError(
            "the human critic cannot critique inside a trainer: use verifiers or 'llm'"
        )
    resolve_critics(told)
    log_path = _check_log(log)
    return RefineRollout(
        references=References(rows, reference, checks),
        verifiers=checks,
        critics=told,
        critic_model=_check_critic_model(critic_model, run_settings),
        train_on=train_on,
        failed=failed,
        max_new_tokens=max_new_tokens,
        log=log_path,
        settings=dataclasses.replace(run_settings, profile=profile),
        gather_seconds=float(gather_seconds),
    )


def _check_dataset(dataset: Any) -> Iterable[Mapping[str, Any]]:
    """The training rows, refused unless they are rows (a list of dicts, a datasets.Dataset)."""
    if (
        dataset is None
        or isinstance(dataset, str | bytes | Mapping)
        or not isinstance(dataset, Iterable)
    ):
        raise ConfigError(
            f"dataset must be the rows the trainer trains on (a list of dicts or a "
            f"datasets.Dataset, each with 'prompt' and its reference), got "
            f"{type(dataset).__name__}: pass refine_rollout(train_dataset, ...)"
        )
    return dataset


def _check_settings(settings: Any) -> RefineContext:
    """The graph's settings, refused where a rollout would not follow them."""
    if settings is None:
        return one_refinement(RefineContext())
    if not isinstance(settings, RefineContext):
        hint = "RefineContext(**{...})" if isinstance(settings, Mapping) else "RefineContext(...)"
        raise ConfigError(
            f"settings must be a RefineContext, got {type(settings).__name__}: pass settings={hint}"
        )
    return one_refinement(settings)


def _check_options(max_new_tokens: Any, gather_seconds: Any) -> None:
    if max_new_tokens is not None and (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, int)
        or max_new_tokens < 1
    ):
        raise ConfigError(
            f"max_new_tokens must be a whole number of tokens >= 1 (or None: the trainer's "
            f"max_completion_length), got {max_new_tokens!r}"
        )
    if (
        isinstance(gather_seconds, bool)
        or not isinstance(gather_seconds, int | float)
        or not math.isfinite(gather_seconds)
        or gather_seconds < 0
    ):
        raise ConfigError(
            "gather_seconds must be a finite number of seconds >= 0 (how long the policy waits "
            f"for concurrent calls to share a generate; default 0.05), got {gather_seconds!r}"
        )


def _check_log(log: str | Path | None) -> Path | None:
    if log is None:
        return None
    path = Path(log)
    if path.is_dir():
        raise ConfigError(
            f"log must name a JSONL file, got the directory {str(path)!r}: "
            f"name a file inside it, such as {str(path / 'refined.jsonl')!r}"
        )
    return path


def _check_critic_model(
    critic_model: BaseChatModel | str | None, settings: RefineContext
) -> BaseChatModel | str | None:
    """The critic's model; a model string is made a chat model now, so a missing key shows here.

    "local" strings stay strings: loading the GGUF model waits for the first step.
    """
    check_model(critic_model)
    if not isinstance(critic_model, str) or critic_model.strip().split(":")[0] == "local":
        return critic_model
    return resolve_model(
        critic_model,
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )
