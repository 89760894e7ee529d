"""A transformers causal LM as a LangChain chat model, whose concurrent calls share a generate.

The refine graph calls its models one request at a time, each thread on its own. A
batch of wrong samples refined concurrently (`arefine_batch`) therefore sends many
requests at about the same moment; `PolicyChatModel` gathers the async requests
that arrive together and answers them with one left-padded `model.generate`, so a
batch's refine step costs about one batched generation, not one per sample. A
generation starts when as many requests wait as the caller said to expect
(`expecting(n)`), or `max_batch`, or when none has come for `gather_seconds`. While a
generation runs, the requests that arrive meanwhile wait for the next one.

Every call can be recorded (`recording()`): the prompt's token ids as the chat
template rendered them, the generated ids and the call's run metadata (the graph's
thread id, role, iteration), which is what a trainer needs to score the refinement
in the context it was written in. Sampling follows `generation_config` (a GRPO
trainer's own, for the policy's turns).

A vision-language policy comes with its `processor`: every request is rendered by the
processor's chat template, each image of a message (given inline, as a base64 or
data: URL block) an `{"type": "image"}` part there, and the processor's image inputs
(`pixel_values` and the like) go to `generate` with the ids, concatenated over the
batch in the order of its prompts as the ids' image tokens are.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import io
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from self_refine.errors import ConfigError

__all__ = ["TOKEN_ALIGNED_INPUTS", "PolicyCall", "PolicyChatModel"]

TOKEN_ALIGNED_INPUTS = ("token_type_ids", "mm_token_type_ids")
"""A processor's inputs with one value per prompt token (the others are per image)."""


@dataclass(frozen=True)
class PolicyCall:
    """One chat call the policy answered: what it read, what it wrote, who asked."""

    messages: list[BaseMessage]
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Request:
    prompt_ids: list[int]
    inputs: dict[str, Any]
    max_new_tokens: int
    future: asyncio.Future[list[int]]


class _Gatherer:
    """The requests of one event loop waiting for a generate, and the task that runs them."""

    def __init__(self, policy: PolicyChatModel) -> None:
        self.policy = policy
        self.waiting: list[_Request] = []
        self.arrived = asyncio.Event()
        self.worker: asyncio.Task[None] | None = None

    async def ask(
        self, prompt_ids: list[int], inputs: dict[str, Any], max_new_tokens: int
    ) -> list[int]:
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        self.waiting.append(_Request(prompt_ids, inputs, max_new_tokens, future))
        self.arrived.set()
        if self.worker is None or self.worker.done():
            self.worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        batch: list[_Request] = []
        try:
            while self.waiting:
                while len(self.waiting) < self.policy.batch_target():
                    self.arrived.clear()
                    try:
                        await asyncio.wait_for(self.arrived.wait(), self.policy.gather_seconds)
                    except TimeoutError:
                        break
                batch = self.waiting[: self.policy.max_batch]
                del self.waiting[: len(batch)]
                try:
                    replies = await asyncio.to_thread(
                        self.policy.generate_ids,
                        [r.prompt_ids for r in batch],
                        [r.max_new_tokens for r in batch],
                        [r.inputs for r in batch],
                    )
                except Exception as error:  # every caller of the batch gets it
                    for request in batch:
                        if not request.future.done():
                            request.future.set_exception(error)
                    continue
                for request, reply in zip(batch, replies, strict=True):
                    if not request.future.done():
                        request.future.set_result(reply)
        finally:
            for request in [*batch, *self.waiting]:
                if not request.future.done():
                    request.future.cancel()


def _conversation(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The messages as the chat template reads them: a role and text content each."""
    conversation = convert_to_openai_messages(list(messages), text_format="string")
    for turn in conversation:
        if not isinstance(turn.get("content"), str):
            raise ConfigError(
                "the policy model reads text only: a task with images needs a "
                "vision-language policy and its processor (PolicyChatModel(processor=...))"
            )
    return [{"role": turn["role"], "content": turn["content"]} for turn in conversation]


def _vision_conversation(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The messages as a processor's chat template reads them: text and image parts."""
    turns = []
    for turn in convert_to_openai_messages(list(messages)):
        content = turn.get("content")
        parts = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else [_vision_part(part) for part in content or []]
        )
        turns.append({"role": turn["role"], "content": parts})
    return turns


def _vision_part(part: Any) -> dict[str, Any]:
    if part.get("type") == "text":
        return {"type": "text", "text": str(part.get("text", ""))}
    inner = part.get("image_url") if part.get("type") == "image_url" else None
    url = str(inner.get("url", "")) if isinstance(inner, Mapping) else ""
    head, _, data = url.partition(",")
    if not (head.startswith("data:image/") and head.endswith(";base64")):
        raise ConfigError(
            "the policy reads images given inline (base64 or a data:image/ URL), not "
            f"{url[:40] or part.get('type')!r}: give the task's images as data"
        )
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
        image.load()
    except (binascii.Error, OSError) as error:
        raise ConfigError(f"an image of the task cannot be read ({error})") from None
    return {"type": "image", "image": image}


def _batched_inputs(
    inputs: Sequence[Mapping[str, Any]], lengths: Sequence[int], width: int
) -> dict[str, Any]:
    """The prompts' image inputs as one batch's: per-image tensors concatenated in prompt
    order, per-token ones (`TOKEN_ALIGNED_INPUTS`) left-padded with zeros like the ids."""
    import torch

    batched: dict[str, Any] = {}
    for key in sorted({k for each in inputs for k in each}):
        if key in TOKEN_ALIGNED_INPUTS:
            rows = torch.zeros((len(lengths), width), dtype=torch.long)
            for row, (each, length) in enumerate(zip(inputs, lengths, strict=True)):
                if key in each and length:
                    rows[row, width - length :] = torch.as_tensor(each[key]).reshape(-1)[-length:]
            batched[key] = rows
        else:
            batched[key] = torch.cat([torch.as_tensor(each[key]) for each in inputs if key in each])
    return batched


class PolicyChatModel(BaseChatModel):
    """A transformers causal LM (a GRPO trainer's policy) as a chat model; calls batch up.

    `model` and `tokenizer` are a `PreTrainedModel` and its tokenizer, which must
    have a chat template. A vision-language model comes with its `processor`, whose
    chat template renders every request and which reads the requests' images.
    `generation_config` is how to sample (None: the model's own); `max_new_tokens`
    caps each reply.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: Any = Field(description="The transformers causal LM that answers.")
    tokenizer: Any = Field(description="Its tokenizer, with a chat template.")
    processor: Any = Field(
        default=None,
        description="A vision-language model's processor (None: the model reads text).",
    )
    generation_config: Any = Field(default=None, description="How to sample (None: the model's).")
    max_new_tokens: int = Field(default=256, ge=1, description="Most tokens one reply may have.")
    max_batch: int = Field(default=64, ge=1, description="Most requests answered by one generate.")
    gather_seconds: float = Field(
        default=0.05,
        ge=0,
        description="How long a generate waits for more requests after the latest one came.",
    )
    model_name: str = Field(default="policy", description="Name shown in traces and errors.")
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Options of `apply_chat_template` (`chat_template` among them).",
    )

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _gatherers: dict[int, tuple[asyncio.AbstractEventLoop, _Gatherer]] = PrivateAttr(
        default_factory=dict
    )
    _records: list[list[PolicyCall]] = PrivateAttr(default_factory=list)
    _records_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _expected: int | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "self-refine-policy"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "max_new_tokens": self.max_new_tokens}

    @property
    def accepts_images(self) -> bool:
        """True with a processor; a text policy's task with images is refused before any call."""
        return self.processor is not None

    def prompt_ids(self, messages: Sequence[BaseMessage]) -> list[int]:
        """The token ids of the messages as the chat template renders them, ready to answer."""
        return self.render(messages)[0]

    def render(self, messages: Sequence[BaseMessage]) -> tuple[list[int], dict[str, Any]]:
        """The messages' token ids, ready to answer, and the processor's image inputs for them."""
        if self.processor is not None:
            return self.render_conversation(_vision_conversation(messages))
        if getattr(self.tokenizer, "chat_template", None) is None:
            raise ConfigError("the policy's tokenizer has no chat template: set one first")
        rendered = self.tokenizer.apply_chat_template(
            _conversation(messages),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            **self.chat_template_kwargs,
        )
        return list(rendered["input_ids"]), {}

    def render_conversation(
        self, conversation: Sequence[Mapping[str, Any]]
    ) -> tuple[list[int], dict[str, Any]]:
        """Render chat turns with the processor's chat template: the ids and the image inputs.

        The turns are as transformers reads them: an image is a `{"type": "image",
        "image": <PIL image>}` part, as GRPOTrainer puts a dataset's image in a prompt.
        """
        if self.processor is None:
            raise ConfigError("rendering images needs the policy's processor: pass processor=")
        turns = [
            {**turn, "content": [{"type": "text", "text": turn["content"]}]}
            if isinstance(turn.get("content"), str)
            else dict(turn)
            for turn in conversation
        ]
        rendered = self.processor.apply_chat_template(
            turns,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            **self.chat_template_kwargs,
        )
        ids = [int(t) for t in rendered["input_ids"][0]]
        inputs = {k: v for k, v in rendered.items() if k not in ("input_ids", "attention_mask")}
        return ids, inputs

    def generate_ids(
        self,
        prompts: Sequence[Sequence[int]],
        max_new_tokens: Sequence[int] | int | None = None,
        inputs: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[list[int]]:
        """Generate after each prompt with one left-padded `generate`; each reply ends at EOS.

        A reply keeps its end-of-sequence token when it wrote one (as a GRPO
        trainer's own rollouts do) and is cut at its own `max_new_tokens`.
        `inputs` are each prompt's image inputs (`render`), given to `generate`
        with the batch.
        """
        import torch

        if not prompts:
            return []
        caps = (
            [max_new_tokens or self.max_new_tokens] * len(prompts)
            if max_new_tokens is None or isinstance(max_new_tokens, int)
            else list(max_new_tokens)
        )
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            if prompt:
                ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
                mask[row, width - len(prompt) :] = 1
        device = getattr(self.model, "device", None) or torch.device("cpu")
        extra = _batched_inputs(inputs or [], [len(p) for p in prompts], width)
        config = copy.deepcopy(self.generation_config or self.model.generation_config)
        config.max_new_tokens = max(caps)
        config.pad_token_id = pad
        ends = self._end_ids(config)
        with self._lock, torch.no_grad():
            output = self.model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                generation_config=config,
                **{k: v.to(device) for k, v in extra.items()},
            )
        replies = []
        for row, cap in zip(output[:, width:].tolist(), caps, strict=True):
            reply = []
            for token in row[:cap]:
                reply.append(token)
                if token in ends:
                    break
            replies.append(reply)
        return replies

    def finished(self, reply: Sequence[int]) -> bool:
        """True when a reply ends with an end-of-sequence token, False when cut at its cap."""
        config = self.generation_config or self.model.generation_config
        return bool(reply) and reply[-1] in self._end_ids(config)

    def _end_ids(self, config: Any) -> set[int]:
        found = getattr(config, "eos_token_id", None)
        ends = set(found if isinstance(found, list) else [found] if found is not None else [])
        if self.tokenizer.eos_token_id is not None:
            ends.add(self.tokenizer.eos_token_id)
        return ends

    @contextmanager
    def expecting(self, callers: int) -> Iterator[None]:
        """Within the block, start a generate as soon as `callers` requests wait."""
        self._expected = callers
        try:
            yield
        finally:
            self._expected = None

    def batch_target(self) -> int:
        """How many waiting requests start a generate at once."""
        return min(self.max_batch, self._expected or self.max_batch)

    @contextmanager
    def recording(self) -> Iterator[list[PolicyCall]]:
        """Record every chat call answered inside the block, in the order they finished."""
        calls: list[PolicyCall] = []
        with self._records_lock:
            self._records.append(calls)
        try:
            yield calls
        finally:
            with self._records_lock:
                self._records.remove(calls)

    def _result(
        self,
        messages: list[BaseMessage],
        prompt: list[int],
        reply: list[int],
        stop: list[str] | None,
        run_manager: Any,
    ) -> ChatResult:
        text = self.tokenizer.decode(reply, skip_special_tokens=True)
        for word in stop or ():
            text = text.split(word, 1)[0]
        metadata = dict(getattr(run_manager, "metadata", None) or {})
        call = PolicyCall(list(messages), prompt, reply, text, metadata)
        with self._records_lock:
            for calls in self._records:
                calls.append(call)
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": len(prompt),
                "output_tokens": len(reply),
                "total_tokens": len(prompt) + len(reply),
            },
            response_metadata={"model_name": self.model_name},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _gatherer(self) -> _Gatherer:
        """The running event loop's gatherer (asyncio objects belong to one loop)."""
        loop = asyncio.get_running_loop()
        with self._records_lock:
            found = self._gatherers.get(id(loop))
            if found is None or found[0] is not loop:
                for key in [k for k, (each, _) in self._gatherers.items() if each.is_closed()]:
                    del self._gatherers[key]
                found = self._gatherers[id(loop)] = (loop, _Gatherer(self))
        return found[1]

    def _cap(self, kwargs: dict[str, Any]) -> int:
        return int(kwargs.get("max_tokens") or self.max_new_tokens)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt, inputs = self.render(messages)
        reply = self.generate_ids([prompt], self._cap(kwargs), [inputs])[0]
        return self._result(messages, prompt, reply, stop, run_manager)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt, inputs = self.render(messages)
        reply = await self._gatherer().ask(prompt, inputs, self._cap(kwargs))
        return self._result(messages, prompt, reply, stop, run_manager)
