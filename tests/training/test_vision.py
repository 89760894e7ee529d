"""A vision-language policy in GRPOTrainer: a tiny LLaVA from a config, its processor built here.

TRL puts a row's `image` into its prompt's first user message. With TRL's own rollouts
the verifier reward reads the prompt's text; with refine rollouts the draft, the
policy's critique and the refinement are each generated with the image (its tokens in
the ids, its pixel values beside them), and the trainer scores each sample with the
image it holds once, in its prompt.

The prompts ask for a colour's name in some characters: completions are cut at 4
tokens (characters), so the prompt asking for 8 is wrong at turn 1 every time.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from self_refine.errors import ConfigError
from self_refine.training import METRICS, PolicyChatModel, refine_rollout, verifier_reward
from tests.training.test_grpo import long_enough
from tests.training.tiny import tiny_vision_policy

COLOURS = {1: (255, 0, 0), 8: (0, 0, 255)}
IMAGE_TOKENS = 5
"""What the processor expands one 28x28 image into: 4 patches and the class token."""


def _rows() -> list[dict[str, Any]]:
    from PIL import Image

    return [
        {
            "prompt": [{"role": "user", "content": f"Name the colour in {n} characters."}],
            "image": Image.new("RGB", (28, 28), colour),
            "reference": {"min_chars": n},
        }
        for n, colour in COLOURS.items()
    ]


def _vision_trainer(tmp_path: Path, rows: list[dict[str, Any]], rollout: Any) -> Any:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, processor = tiny_vision_policy()
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
        rollout_func=rollout,
    )


def test_a_vision_language_policy_trains_a_step_on_image_prompts_with_the_verifier_reward(
    tmp_path: Path,
) -> None:
    trainer = _vision_trainer(tmp_path, _rows(), None)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    assert logged["rewards/verifier_long_enough/mean"] == pytest.approx(
        logged["self_refine/reward_t1/verifier_long_enough"]
    )


def _pixels(processor: Any, wanted: int) -> Any:
    """The pixel values of the image of the prompt asking for `wanted` characters."""
    from PIL import Image

    image = Image.new("RGB", (28, 28), COLOURS[wanted])
    return processor.image_processor(images=[image], return_tensors="pt")["pixel_values"][0]


def _wanted(text: str) -> int:
    """Which prompt a rendered request is about: the characters its task asks for."""
    return next(n for n in COLOURS if f"in {n} characters" in text)


def _check_images(processor: Any, image_token: int, ids: Any, mask: Any, pixels: Any) -> list[str]:
    """Assert each row of a batch holds one image, its own; return the rows' texts."""
    import torch

    assert pixels is not None and pixels.shape[0] == ids.shape[0]
    texts = []
    for row, kept, image in zip(ids, mask, pixels, strict=True):
        row = row[kept.bool()]
        assert int((row == image_token).sum()) == IMAGE_TOKENS
        text = processor.tokenizer.decode(row, skip_special_tokens=True)
        assert torch.equal(image, _pixels(processor, _wanted(text)))
        texts.append(text)
    return texts


def test_refine_rollouts_show_the_image_to_the_draft_the_critique_and_the_refinement(
    tmp_path: Path,
) -> None:
    rows = _rows()
    log = tmp_path / "refined.jsonl"
    rollout = refine_rollout(
        rows, verifiers=[long_enough], critics=[long_enough, "llm"], max_new_tokens=8, log=log
    )
    given: dict[str, Any] = {}

    def recorded(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        given.update(rollout(prompts, trainer))
        return given

    trainer = _vision_trainer(tmp_path, rows, recorded)
    processor, model = trainer.processing_class, trainer.model
    image_token = model.config.image_token_id
    generated: list[dict[str, Any]] = []
    scored: list[dict[str, Any]] = []
    generate, forward = model.generate, model.forward
    model.generate = lambda **kw: generated.append(kw) or generate(**kw)

    @functools.wraps(forward)  # generate reads the forward's signature
    def scoring(**kw: Any) -> Any:
        if "labels" in kw:
            scored.append(kw)
        return forward(**kw)

    model.forward = scoring
    trainer.train()

    outcomes = rollout.last
    assert outcomes is not None and len(outcomes) == 4
    wrong = [o for o in outcomes if not o.right_before]
    assert len(wrong) >= 2  # the 8-character prompt's two samples, at least
    texts = [
        _check_images(
            processor, image_token, c["input_ids"], c["attention_mask"], c["pixel_values"]
        )
        for c in generated
    ]
    drafts, requests = texts[0], [t for batch in texts[1:] for t in batch]
    assert sorted(_wanted(t) for t in drafts) == [1, 1, 8, 8]
    assert not any("Role:" in t for t in drafts)  # the trainer's prompts, as TRL renders them
    critiques = [t for t in requests if "Role: critic" in t]
    refinements = [t for t in requests if "Role: refiner" in t]
    assert len(critiques) >= len(wrong) and len(refinements) >= len(wrong)
    assert all("Write at least 8 characters." in t for t in refinements if _wanted(t) == 8)

    for prompt_ids, completion_ids in zip(
        given["prompt_ids"], given["completion_ids"], strict=True
    ):
        assert (prompt_ids + completion_ids).count(image_token) == IMAGE_TOKENS
        assert image_token in prompt_ids  # the image stands in the prompt the trainer scores
    for outcome, prompt_ids in zip(outcomes, given["prompt_ids"], strict=True):
        opening = processor.tokenizer.decode(prompt_ids)
        assert ("Role: refiner" in opening) == (outcome.refinement is not None)
    assert scored, "the trainer scored no sample"
    for call in scored:
        _check_images(
            processor, image_token, call["input_ids"], call["attention_mask"], call["pixel_values"]
        )

    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    assert {f"self_refine/{name}" for name in METRICS} <= set(logged)
    assert logged["self_refine/refined"] == pytest.approx(len(wrong) / len(outcomes))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == len(wrong)
    assert all(line["prompt"][0]["content"][0] == {"type": "image"} for line in lines)


class _MarkingProcessor:
    """A processor that also marks each prompt token's kind, as Qwen2-VL's and Gemma 3's do."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        rendered = dict(self.processor.apply_chat_template(*args, **kwargs))
        rendered["mm_token_type_ids"] = torch.zeros_like(torch.as_tensor(rendered["input_ids"]))
        return rendered


def test_an_exchange_is_refused_for_a_processor_that_marks_prompt_tokens_before_generating() -> (
    None
):
    rows = _rows()
    rollout = refine_rollout(rows, verifiers=[long_enough], max_new_tokens=8)
    model, processor = tiny_vision_policy()
    generated: list[int] = []
    model.generate = lambda **kw: generated.append(1)
    policy = PolicyChatModel(
        model=model, tokenizer=processor.tokenizer, processor=_MarkingProcessor(processor)
    )
    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": rows[0]["image"]},
                {"type": "text", "text": rows[0]["prompt"][0]["content"]},
            ],
        }
    ]
    with pytest.raises(ConfigError, match="mm_token_type_ids.*pass train_on='refinement'"):
        rollout.turns([prompt], policy, 4)
    assert generated == []


def test_image_prompts_are_refused_before_generating_when_the_policy_reads_text() -> None:
    from tests.training.tiny import tiny_policy

    rows = _rows()
    rollout = refine_rollout(rows, verifiers=[long_enough], max_new_tokens=8)
    model, tokenizer = tiny_policy()
    generated: list[int] = []
    model.generate = lambda **kw: generated.append(1)
    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": rows[0]["image"]},
                {"type": "text", "text": rows[0]["prompt"][0]["content"]},
            ],
        }
    ]
    with pytest.raises(ConfigError, match="policy reads text: give a vision-language model"):
        rollout.turns([prompt], PolicyChatModel(model=model, tokenizer=tokenizer), 4)
    assert generated == []


def test_a_vision_policy_answers_a_message_with_an_inline_image_and_refuses_a_url() -> None:
    import base64
    import io

    from langchain_core.messages import HumanMessage

    model, processor = tiny_vision_policy()
    policy = PolicyChatModel(
        model=model, tokenizer=processor.tokenizer, processor=processor, max_new_tokens=2
    )
    given: list[dict[str, Any]] = []
    generate = model.generate
    model.generate = lambda **kw: given.append(kw) or generate(**kw)
    png = io.BytesIO()
    _rows()[1]["image"].save(png, format="PNG")
    image = {
        "type": "image",
        "base64": base64.b64encode(png.getvalue()).decode(),
        "mime_type": "image/png",
    }
    text = {"type": "text", "text": "Name the colour in 8 characters."}
    policy.invoke([HumanMessage([image, text])])
    assert policy.accepts_images is True
    _check_images(
        processor,
        model.config.image_token_id,
        given[0]["input_ids"],
        given[0]["attention_mask"],
        given[0]["pixel_values"],
    )
    url = {"type": "image", "url": "https://example.com/blue.png"}
    with pytest.raises(ConfigError, match="reads images given inline"):
        policy.invoke([HumanMessage([url, text])])
    assert len(given) == 1


def test_one_question_asked_of_two_images_finds_each_images_reference() -> None:
    from PIL import Image

    red, blue = (Image.new("RGB", (28, 28), c) for c in ((255, 0, 0), (0, 0, 255)))
    question = [{"role": "user", "content": "Name the colour."}]
    rows = [
        {"prompt": question, "image": red, "reference": {"min_chars": 3}},
        {"prompt": question, "image": blue, "reference": {"min_chars": 4}},
    ]
    rollout = refine_rollout(rows, verifiers=[long_enough])

    def asked(image: Any) -> list[dict[str, Any]]:  # the prompt as GRPOTrainer sends it
        content = [{"type": "image", "image": image}, {"type": "text", "text": "Name the colour."}]
        return [{"role": "user", "content": content}]

    assert rollout.references.of(asked(red.copy())) == {"min_chars": 3}
    assert rollout.references.of(asked(blue.copy())) == {"min_chars": 4}
    green = Image.new("RGB", (28, 28), (0, 255, 0))
    with pytest.raises(ConfigError, match="not in the rollout's dataset .* with its images"):
        rollout.references.of(asked(green))


def test_held_out_evaluation_refuses_items_with_images_before_loading_a_model(
    tmp_path: Path,
) -> None:
    from self_refine.training import evaluate_policy

    with pytest.raises(ConfigError, match="item 0 carries images: evaluate_policy evaluates text"):
        evaluate_policy(tmp_path / "no-model", _rows(), verifiers=[long_enough])
