"""PolicyChatModel: a transformers model as a chat model whose concurrent calls share a generate."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from self_refine.errors import ConfigError
from self_refine.training import PolicyChatModel
from tests.training.tiny import tiny_policy


def _counting(model: Any) -> list[int]:
    """Count the model's generate calls, and the batch size of each."""
    sizes: list[int] = []
    generate: Callable[..., Any] = model.generate

    def counted(**kwargs: Any) -> Any:
        sizes.append(int(kwargs["input_ids"].shape[0]))
        return generate(**kwargs)

    model.generate = counted
    return sizes


def _greedy(max_new_tokens: int = 6) -> PolicyChatModel:
    from transformers import GenerationConfig

    model, tokenizer = tiny_policy()
    return PolicyChatModel(
        model=model,
        tokenizer=tokenizer,
        generation_config=GenerationConfig(do_sample=False),
        max_new_tokens=max_new_tokens,
    )


async def test_calls_that_arrive_together_share_one_generate_and_answer_as_alone() -> None:
    policy = _greedy()
    sizes = _counting(policy.model)
    requests = [
        [SystemMessage("Be brief."), HumanMessage("Say something " + "long " * i)] for i in range(5)
    ]

    together = await asyncio.gather(*(policy.ainvoke(r) for r in requests))
    assert sizes == [5]
    sizes.clear()

    alone = [policy.invoke(r) for r in requests]
    assert sizes == [1, 1, 1, 1, 1]
    assert [m.content for m in together] == [m.content for m in alone]
    for message in together:
        assert isinstance(message, AIMessage)
        usage = message.usage_metadata
        assert usage is not None and 1 <= usage["output_tokens"] <= 6


async def test_a_generate_starts_as_soon_as_the_expected_callers_wait() -> None:
    policy = _greedy()
    policy.gather_seconds = 60.0  # without the hint, a lone request would wait a minute
    sizes = _counting(policy.model)

    async def one_after_another(index: int) -> Any:
        await asyncio.sleep(0.2 * index)
        return await policy.ainvoke([HumanMessage(f"task {index}")])

    with policy.expecting(3):
        await asyncio.wait_for(asyncio.gather(*(one_after_another(i) for i in range(3))), 30)
    assert sizes == [3]


async def test_every_call_is_recorded_with_its_ids_and_a_failure_reaches_every_caller() -> None:
    policy = _greedy()
    with policy.recording() as calls:
        reply = await policy.ainvoke([HumanMessage("Hello")])
    assert len(calls) == 1
    assert calls[0].text == reply.content
    assert calls[0].prompt_ids == policy.prompt_ids([HumanMessage("Hello")])
    written = policy.tokenizer.decode(calls[0].completion_ids, skip_special_tokens=True)
    assert written == reply.content

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("the device is gone")

    policy.model.generate = broken
    results = await asyncio.gather(
        *(policy.ainvoke([HumanMessage(f"task {i}")]) for i in range(3)), return_exceptions=True
    )
    assert [str(r) for r in results] == ["the device is gone"] * 3


def test_a_task_with_images_is_refused_before_generating() -> None:
    policy = _greedy()
    image = {"type": "image", "url": "https://example.com/cat.png"}
    with pytest.raises(ConfigError, match="reads text only"):
        policy.invoke([HumanMessage([{"type": "text", "text": "What is it?"}, image])])


def test_a_text_policy_renders_with_its_tokenizer_and_generates_from_the_ids_alone() -> None:
    policy = _greedy()
    given: list[dict[str, Any]] = []
    generate = policy.model.generate
    policy.model.generate = lambda **kw: given.append(kw) or generate(**kw)
    messages = [SystemMessage("Be brief."), HumanMessage("Say hi.")]
    policy.invoke(messages)
    expected = policy.tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )["input_ids"]
    assert policy.prompt_ids(messages) == list(expected)
    assert set(given[0]) == {"input_ids", "attention_mask", "generation_config"}
    assert given[0]["input_ids"][0].tolist() == list(expected)
    assert policy.accepts_images is False
