"""A vision-language policy in GRPOTrainer: a tiny LLaVA from a config, its processor built here.

TRL puts a row's `image` into its prompt's user message; the verifier reward reads the
prompt's text. Refine rollouts are for text policies: with image prompts they stop the
step before any generation, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from self_refine.errors import ConfigError
from self_refine.training import refine_rollout, verifier_reward
from tests.training.test_grpo import long_enough
from tests.training.tiny import tiny_vision_policy


def _vision_trainer(tmp_path: Path, rollout: Any) -> Any:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from datasets import Dataset
    from PIL import Image
    from trl import GRPOConfig, GRPOTrainer

    model, processor = tiny_vision_policy()
    rows = [
        {
            "prompt": [{"role": "user", "content": f"Name the colour in {n} characters."}],
            "image": Image.new("RGB", (28, 28), colour),
            "reference": {"min_chars": n},
        }
        for n, colour in ((1, (255, 0, 0)), (8, (0, 0, 255)))
    ]
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=4,
        max_steps=1,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        disable_tqdm=True,
        seed=7,
    )
    return GRPOTrainer(
        model=model,
        processing_class=processor,
        reward_funcs=[verifier_reward(long_enough)],
        args=args,
        train_dataset=Dataset.from_list(rows),
        rollout_func=rollout(rows) if rollout else None,
    )


def test_a_vision_language_policy_trains_a_step_on_image_prompts_with_the_verifier_reward(
    tmp_path: Path,
) -> None:
    trainer = _vision_trainer(tmp_path, None)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    assert logged["rewards/verifier_long_enough/mean"] == pytest.approx(
        logged["self_refine/reward_t1/verifier_long_enough"]
    )


def test_refine_rollouts_refuse_image_prompts_before_any_generation(tmp_path: Path) -> None:
    trainer = _vision_trainer(
        tmp_path, lambda rows: refine_rollout(rows, verifiers=[long_enough], max_new_tokens=8)
    )
    generated: list[int] = []
    generate = trainer.model.generate
    trainer.model.generate = lambda **kw: generated.append(1) or generate(**kw)
    with pytest.raises(ConfigError, match="refine_rollout's policy reads text .*rollout_func=None"):
        trainer.train()
    assert generated == []
