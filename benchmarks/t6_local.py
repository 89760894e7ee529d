"""Target 6: the local model re-reads little of what it has already read.

One constrained-generation item, three refine steps (critic: the model itself, no
early stop), run by the embedded default model (`local`) after one earlier item of
another task (warm, as in a batch); then the same prompts replayed from a cold cache
(nothing read before: a first item) with prefix reuse (the KV cache kept between
calls, saved states per prompt) and without (every prompt read from the start). Both
layouts of the refine request are measured ("conversation" and "single"). Measured:
prompt tokens sent, prompt tokens the model actually evaluated (llama.cpp's counter),
wall time per item, and the model's raw rates (prompt tokens read and tokens written
per second) in the same run, so the time per item can be set beside what the
hardware does. `--write` records the table with its date, model hash and command in
`benchmarks/results/t6-local.md`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from benchmarks.report import Row, markdown_table

RESULTS = Path(__file__).resolve().parent / "results"

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
        for sent, evaluated, _ in reply_tokens(response):
            self.calls += 1
            self.evaluated += evaluated
            self.sent += sent


def reply_tokens(response: Any) -> Iterator[tuple[int, int, int]]:
    """(prompt tokens sent, prompt tokens evaluated, tokens written) of each local reply."""
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            if message is None:
                continue
            usage = getattr(message, "usage_metadata", None) or {}
            evaluated = int(message.response_metadata.get("prompt_tokens_evaluated", 0))
            yield int(usage.get("input_tokens", 0)), evaluated, int(usage.get("output_tokens", 0))


def _item(model: Any, form: Any, task: str = TASK) -> tuple[float, _Evaluated]:
    from self_refine import RefineContext, create_self_refine_graph

    counter = _Evaluated()
    graph = create_self_refine_graph(
        model,
        critics=["llm"],
        stop=[],
        settings=RefineContext(
            max_iterations=ITERATIONS, profile="constrained_generation", refine_form=form
        ),
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


def _cold(model: Any) -> None:
    """Forget everything the model has read: an empty context and no saved states."""
    from self_refine.models.local import _state_cache, shared_llama

    llama = shared_llama(model.model_path, model.n_ctx)[0]
    llama.set_cache(_state_cache())
    llama.reset()


def _raw_rates(model: Any) -> tuple[float, float]:
    """Prompt tokens read and tokens written per second, from llama.cpp's own timers."""
    import llama_cpp

    from self_refine.models.local import shared_llama

    llama, _ = shared_llama(model.model_path, model.n_ctx)
    data = llama_cpp.llama_perf_context(llama.ctx)
    read = data.n_p_eval / (data.t_p_eval_ms / 1000) if data.t_p_eval_ms else 0.0
    written = data.n_eval / (data.t_eval_ms / 1000) if data.t_eval_ms else 0.0
    return read, written


def _form_rows(form: str, with_reuse: Any, without: Any) -> list[Row]:
    """One item in this refine form: warm, then its prompts from a cold cache, with and without."""
    _cold(with_reuse)
    # As in a batch: an earlier item of the same profile ran before (another task), so
    # the model is loaded and the profile's system prompts have been read once.
    _item(with_reuse, form, EARLIER)
    seconds_item, item = _item(with_reuse, form)
    _cold(with_reuse)  # the replay starts cold: what a first item costs
    seconds_on, on = _replay(with_reuse, item.prompts)
    seconds_off, off = _replay(without, item.prompts)
    label = f"{form} form, {ITERATIONS} refine steps, {item.calls} calls"
    return [
        Row(
            TARGET,
            f"prompt tokens evaluated / sent, warm: after one earlier item ({label})",
            "tokens",
            value=item.evaluated,
            baseline=item.sent,
            baseline_label="tokens sent",
            goal="<= 1/3 of the tokens sent",
            met=item.evaluated <= item.sent / 3,
        ),
        Row(
            TARGET,
            f"prompt tokens evaluated / sent, cold: the same prompts, nothing read before ({form})",
            "tokens",
            value=on.evaluated,
            baseline=on.sent,
            baseline_label="tokens sent",
            goal="<= 1/3 of the tokens sent",
            met=on.evaluated <= on.sent / 3,
        ),
        Row(
            TARGET,
            f"wall time of the warm item (the graph, {ITERATIONS} refine steps; {form})",
            "s",
            value=seconds_item,
            goal="well under a minute",
            met=seconds_item < 60,
        ),
        Row(
            TARGET,
            f"cold replay: tokens evaluated without reuse / with ({form})",
            "tokens",
            value=off.evaluated,
            baseline=on.evaluated,
            baseline_label="with reuse",
        ),
        Row(
            TARGET,
            f"cold replay: wall time without reuse / with ({form})",
            "s",
            value=seconds_off,
            baseline=seconds_on,
            baseline_label="with reuse",
        ),
    ]


def run(quick: bool) -> list[Row]:
    """Measure one item per refine form, warm and cold, with and without prefix reuse."""
    from self_refine.models.local import LocalChatModel
    from self_refine.models.resolve import resolve_model
    from self_refine.prompts.render import DEFAULT_REFINE_FORM, REFINE_FORMS

    spec = "local:smollm2" if quick else "local"
    default = resolve_model(spec)
    assert isinstance(default, LocalChatModel)
    with_reuse = LocalChatModel(model_path=default.model_path, max_tokens=160)
    without = LocalChatModel(model_path=default.model_path, max_tokens=160, reuse_prefix=False)
    forms = [DEFAULT_REFINE_FORM, *[f for f in REFINE_FORMS if f != DEFAULT_REFINE_FORM]]
    rows = [row for form in forms for row in _form_rows(form, with_reuse, without)]
    read, written = _raw_rates(default)
    rows[2].note = (
        f"the model reads {read:.0f} prompt tokens/s and writes {written:.1f} tokens/s "
        "here (llama.cpp's timers, same run)"
    )
    return rows


def _write(rows: list[Row], seconds: float, quick: bool) -> Path:
    """benchmarks/results/t6-local.md: the table with its date, model, command and machine."""
    from benchmarks.report import machine, markdown_table
    from benchmarks.run import _git_commit
    from self_refine.models.fetch import DEFAULT_LOCAL, KNOWN_MODELS

    known = KNOWN_MODELS["smollm2" if quick else DEFAULT_LOCAL]
    info = machine()
    command = "python -m benchmarks.t6_local --write" + (" --quick" if quick else "")
    text = (
        "# Target 6: the local model re-reads little of what it has already read\n\n"
        f"{markdown_table(rows)}\n\n"
        f"Command: `{command}` ({seconds:.0f} s), "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, commit {_git_commit()}.\n\n"
        f"Model: {known.description}, file `{known.filename}`, sha256 `{known.sha256}`.\n\n"
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['system']}, "
        f"Python {info['python']}.\n\n"
        "Warm: the item runs after one earlier item of the same profile, as in a batch. "
        "Cold: the same prompts with nothing read before (a first item, a new process).\n"
    )
    path = RESULTS / "t6-local.md"
    path.write_text(text)
    return path


def main() -> int:
    """Run the suite; `--write` also writes benchmarks/results/t6-local.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the small SmolLM2 model")
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    parser.add_argument("--write", action="store_true", help="write results/t6-local.md")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = run(args.quick)
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps([row.to_json() for row in rows], indent=2))
    if args.write:
        print(_write(rows, time.perf_counter() - start, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
