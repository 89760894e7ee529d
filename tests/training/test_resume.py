"""Refine rollouts, evaluation every step and a resumed run, on the CPU and (where CUDA is) in bf16.

The CUDA case is the GPU path a user takes (the model in bf16 on the GPU, `bf16=True`):
it runs only where `torch.cuda.is_available()`, self-contained (the tiny model is built
here, nothing is downloaded) and in well under two minutes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from self_refine.training import METRICS, evaluation_callback, refine_rollout
from tests.training.test_evaluate import ITEMS
from tests.training.test_grpo import ROWS, long_enough, tiny_trainer
from tests.training.tiny import tiny_policy

torch = pytest.importorskip("torch")

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda-bf16",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    ),
]


def _steps(out: Path) -> list[int]:
    return [e["step"] for e in json.loads((out / "evaluation.json").read_text())]


@pytest.mark.parametrize("device", DEVICES)
def test_refine_training_evaluates_every_step_and_resumes_from_its_checkpoint(
    device: str, tmp_path: Path
) -> None:
    evaluations = tmp_path / "eval"
    options: dict[str, Any] = {"verifiers": [long_enough], "max_new_tokens": 8, "draft_tokens": 4}
    config: dict[str, Any] = {"save_strategy": "steps", "save_steps": 1, "learning_rate": 1e-3}
    if device == "cuda":
        config.update(use_cpu=False, bf16=True)

    sampled_at: list[int] = []

    def run(steps: int, resume: bool) -> Any:
        model, _ = tiny_policy()
        if device == "cuda":
            model = model.to("cuda", dtype=torch.bfloat16)
        rollout = refine_rollout(ROWS, verifiers=[long_enough], max_new_tokens=16)

        def counted(prompts: list[Any], trainer: Any) -> dict[str, Any]:
            sampled_at.append(trainer.state.global_step)
            return rollout(prompts, trainer)

        callback = evaluation_callback(ITEMS, evaluations, every=1, **options)
        trainer = tiny_trainer(
            counted, tmp_path, model=model, callbacks=[callback], max_steps=steps, **config
        )
        trainer.train(resume_from_checkpoint=resume)
        return trainer, rollout

    trainer, rollout = run(2, resume=False)
    assert trainer.state.global_step == 2 and sampled_at == [0, 1]
    parameter = next(trainer.model.parameters())
    assert parameter.device.type == device
    if device == "cuda":
        assert parameter.dtype == torch.bfloat16
    logged = [e for e in trainer.state.log_history if "self_refine/acc_t1" in e]
    assert len(logged) == 2 and all(f"self_refine/{m}" in e for e in logged for m in METRICS)
    assert rollout.last and len(rollout.last) == 8
    assert _steps(evaluations) == [0, 1, 2]
    assert (tmp_path / "out" / "checkpoint-2").is_dir()

    first = json.loads((evaluations / "evaluation.json").read_text())
    trainer, _ = run(3, resume=True)
    assert trainer.state.global_step == 3
    assert sampled_at == [0, 1, 2]  # the resumed run trained step 3 only, from checkpoint-2
    assert _steps(evaluations) == [0, 1, 2, 3]  # the resumed run kept the earlier steps
    assert json.loads((evaluations / "evaluation.json").read_text())[:3] == first
    assert "| step 3 | 3 | 4 |" in (evaluations / "evaluation.md").read_text()
