"""Target 6, candidates: N replies of one draft step read their prompt once.

`candidates=N` sends N branches with the request of one draft step. With the embedded
model the branches' calls run one after another on one llama.cpp context, and its
prefix reuse (the KV cache kept between calls, a saved state per prompt) means the
second and later branches start from the state the first one left: they read no
prompt again. Measured from a cold cache (nothing read before), one item:

- best-of-N: the first draft with 1 and with N candidates (the same request for all);
- the first draft and one refine step, each 1 or N candidates wide: a refine step's
  candidate 0 asks in the run's form (the conversation), the others in the fresh form
  (the task and the feedback, no draft), so that step has two prompts to read.

Figures: prompt tokens evaluated (llama.cpp's counter, `prompt_tokens_evaluated`)
with N candidates against 1, and the N-candidate run's wall time against what the
model's raw rates in that run (llama.cpp's timers) say reading the one-candidate run's
prompts plus writing every reply costs. A suite of `make bench` (target 6 rows).

    python -m benchmarks.t6_candidates [--model local] [--n 4] [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from benchmarks.report import Row, markdown_table
from benchmarks.t6_local import reply_tokens

TARGET = 6

TASK = (
    "Write one or two natural sentences that use all of these words: train, pencil, compass, river."
)
REFERENCE = {"concepts": ["train", "pencil", "compass", "river"]}


class _Replies(BaseCallbackHandler):
    """Each local reply's prompt tokens sent and evaluated, and tokens written."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, int, int]] = []

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.replies.extend(reply_tokens(response))


def _cold(model: Any) -> None:
    from self_refine.models.local import _state_cache, shared_llama

    llama = shared_llama(model.model_path, model.n_ctx)[0]
    llama.set_cache(_state_cache())
    llama.reset()


def _perf(model: Any) -> tuple[int, float, int, float]:
    """llama.cpp's counters: prompt tokens read and ms, tokens written and ms."""
    import llama_cpp

    from self_refine.models.local import shared_llama

    llama = shared_llama(model.model_path, model.n_ctx)[0]
    data = llama_cpp.llama_perf_context(llama.ctx)
    return data.n_p_eval, data.t_p_eval_ms, data.n_eval, data.t_eval_ms


class _SameFeedback:
    """A critic that makes no model call and never passes a draft: every step refines."""

    name = "same feedback"

    def critique(self, request: Any) -> Any:
        from self_refine.critics import CritiqueResult
        from self_refine.state import Critique, Usage

        feedback = ['Write it again so that "compass" is the subject of a sentence.']
        usage = Usage(input_tokens=0, output_tokens=0, total_tokens=0)
        return CritiqueResult(Critique(feedback=feedback, score=0.5, source="same"), usage)

    async def acritique(self, request: Any) -> Any:
        return self.critique(request)


def _run(model: Any, candidates: int, steps: int) -> tuple[float, _Replies]:
    """One item from a cold cache, `steps` refine steps, every draft step `candidates` wide.

    The critic makes no model call, so every model call is a draft reply.
    """
    from self_refine import RefineContext, create_self_refine_graph

    settings = RefineContext(
        max_iterations=steps, profile="constrained_generation", candidates=candidates
    )
    graph = create_self_refine_graph(model, critics=[_SameFeedback()], stop=[], settings=settings)
    compiled = graph.compile()
    _cold(model)
    counter = _Replies()
    start = time.perf_counter()
    compiled.invoke({"task": TASK, "reference": REFERENCE}, {"callbacks": [counter]})
    return time.perf_counter() - start, counter


def run(model_name: str, n: int = 4, max_tokens: int = 64) -> list[Row]:
    """Both scenarios, 1 and `n` candidates each: tokens evaluated and wall time, as rows."""
    from self_refine.models.local import LocalChatModel
    from self_refine.models.resolve import resolve_model

    resolved = resolve_model(model_name)
    assert isinstance(resolved, LocalChatModel), "a local model string: local, local:NAME"
    model = LocalChatModel(model_path=resolved.model_path, max_tokens=max_tokens)
    model.invoke("Say hello.")  # the model loaded before anything is timed
    rows = []
    for label, steps in (("first draft only (best-of-N)", 0), ("first draft + 1 refine step", 1)):
        seconds_one, one = _run(model, 1, steps)
        before = _perf(model)
        seconds_n, many = _run(model, n, steps)
        after = _perf(model)
        read = (after[0] - before[0]) / ((after[1] - before[1]) / 1000)
        written = (after[2] - before[2]) / ((after[3] - before[3]) / 1000)
        evaluated_one = sum(r[1] for r in one.replies)
        evaluated_n = sum(r[1] for r in many.replies)
        bound = evaluated_one / read + sum(r[2] for r in many.replies) / written
        reading = sum(1 for sent, evaluated, _ in many.replies if evaluated > sent / 4)
        rows += [
            Row(
                TARGET,
                f"prompt tokens evaluated, {n} candidates per step / 1 ({label})",
                "tokens",
                value=evaluated_n,
                baseline=evaluated_one,
                baseline_label="1 candidate",
                goal="<= 1.3x",
                met=evaluated_n <= 1.3 * evaluated_one,
                note=f"{reading} of {len(many.replies)} replies read their prompt",
            ),
            Row(
                TARGET,
                f"wall time, {n} candidates per step ({label})",
                "s",
                value=seconds_n,
                baseline=bound,
                baseline_label="one prompt read + every reply written at the raw rates",
                goal="<= 1.2x",
                met=seconds_n <= 1.2 * bound,
                note=(
                    f"{read:.0f} prompt tok/s read, {written:.1f} tok/s written (llama.cpp's "
                    f"timers, that run); 1 candidate took {seconds_one:.1f} s"
                ),
            ),
        ]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--quick", action="store_true", help="the small SmolLM2 model")
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    args = parser.parse_args()
    rows = run("local:smollm2" if args.quick else args.model, args.n, args.max_tokens)
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps([row.to_json() for row in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
