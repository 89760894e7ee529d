"""Target 6: the local model re-reads little of what it has already read.

One constrained-generation item, three refine steps (critic: the model itself, no
early stop), run by the embedded default model (`local`) after one earlier item of
another task (as in a batch); then the same prompts replayed from a cold cache with
prefix reuse (the KV cache kept between calls, saved states per prompt) and without
(every prompt read from the start). Measured: prompt tokens sent, prompt tokens the model actually
evaluated (llama.cpp's counter), wall time per item, and the model's raw rates
(prompt tokens read and tokens written per second) in the same run, so the time per
item can be set beside what the hardware does.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from benchmarks.report import Row, suite_main

TARGET = 6
TASK = (
    "Write two sentences about a harbour at dawn using all of these words: "
    "gull, rope, tide, lantern, anchor, mist."
)
EARLIER = "Write one sentence about a kitchen using all of these words: kettle, spoon, steam."
ITERATIONS = 3


class _Evaluated(BaseCallbackHandler):
    """Adds up what each local reply says it evaluated and was sent."""

    def __init__(self) -> None:
        self.evaluated = 0
        self.sent = 0
        self.calls = 0
        self.prompts: list[list[Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.prompts.extend(messages)

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if message is None:
                    continue
                self.calls += 1
                self.evaluated += int(message.response_metadata.get("prompt_tokens_evaluated", 0))
                usage = getattr(message, "usage_metadata", None) or {}
                self.sent += int(usage.get("input_tokens", 0))


def _item(model: Any, task: str = TASK) -> tuple[float, _Evaluated]:
    from self_refine import RefineContext, create_self_refine_graph

    counter = _Evaluated()
    graph = create_self_refine_graph(
        model,
        critics=["llm"],
        stop=[],
        settings=RefineContext(max_iterations=ITERATIONS, profile="constrained_generation"),
    ).compile()
    start = time.perf_counter()
    graph.invoke({"task": task}, {"callbacks": [counter]})
    return time.perf_counter() - start, counter


def _replay(model: Any, prompts: list[list[Any]]) -> tuple[float, _Evaluated]:
    """The same prompts again, in order: the same reading work for both settings."""
    counter = _Evaluated()
    start = time.perf_counter()
    for messages in prompts:
        model.invoke(messages, {"callbacks": [counter]})
    return time.perf_counter() - start, counter


def _raw_rates(model: Any) -> tuple[float, float]:
    """Prompt tokens read and tokens written per second, from llama.cpp's own timers."""
    import llama_cpp

    from self_refine.models.local import shared_llama

    llama, _ = shared_llama(model.model_path, model.n_ctx)
    data = llama_cpp.llama_perf_context(llama.ctx)
    read = data.n_p_eval / (data.t_p_eval_ms / 1000) if data.t_p_eval_ms else 0.0
    written = data.n_eval / (data.t_eval_ms / 1000) if data.t_eval_ms else 0.0
    return read, written


def run(quick: bool) -> list[Row]:
    """Measure one item with and without prefix reuse."""
    from self_refine.models.local import LocalChatModel
    from self_refine.models.resolve import resolve_model

    spec = "local:smollm2" if quick else "local"
    default = resolve_model(spec)
    assert isinstance(default, LocalChatModel)
    with_reuse = LocalChatModel(model_path=default.model_path, max_tokens=160)
    without = LocalChatModel(model_path=default.model_path, max_tokens=160, reuse_prefix=False)
    # As in a batch: an earlier item of the same profile ran before (another task), so
    # the model is loaded and the profile's system prompts have been read once.
    _item(with_reuse, EARLIER)
    seconds_item, item = _item(with_reuse)
    from llama_cpp import LlamaRAMCache

    from self_refine.models.local import shared_llama

    llama = shared_llama(default.model_path, default.n_ctx)[0]
    llama.set_cache(LlamaRAMCache(capacity_bytes=1 << 30))  # the replay starts cold
    llama.reset()
    seconds_on, on = _replay(with_reuse, item.prompts)
    seconds_off, off = _replay(without, item.prompts)
    read, written = _raw_rates(default)
    label = f"{default.model_name}, {ITERATIONS} refine steps, {item.calls} calls"
    return [
        Row(
            TARGET,
            f"prompt tokens evaluated / sent, with prefix reuse ({label})",
            "tokens",
            value=item.evaluated,
            baseline=item.sent,
            baseline_label="tokens sent",
            goal="<= 1/3 of the tokens sent",
            met=item.evaluated <= item.sent / 3,
        ),
        Row(
            TARGET,
            "wall time of that item (the graph, 3 refine steps)",
            "s",
            value=seconds_item,
            goal="well under a minute",
            met=seconds_item < 60,
            note=f"the model reads {read:.0f} prompt tokens/s and writes {written:.1f} tokens/s "
            "here (llama.cpp's timers, same run)",
        ),
        Row(
            TARGET,
            "the same prompts replayed: tokens evaluated without reuse / with",
            "tokens",
            value=off.evaluated,
            baseline=on.evaluated,
            baseline_label="with reuse",
        ),
        Row(
            TARGET,
            "the same prompts replayed: wall time without reuse / with",
            "s",
            value=seconds_off,
            baseline=seconds_on,
            baseline_label="with reuse",
        ),
    ]


if __name__ == "__main__":
    suite_main(run)
