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
prompts plus writing every reply costs. Exits 1 when N candidates evaluate more than
1.3x the prompt tokens of one.

    python -m benchmarks.t6_candidates [--model local] [--n 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from benchmarks.t6_local import reply_tokens

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    from self_refine.models.local import LocalChatModel
    from self_refine.models.resolve import resolve_model

    resolved = resolve_model(args.model)
    assert isinstance(resolved, LocalChatModel), "a local model string: local, local:NAME"
    model = LocalChatModel(model_path=resolved.model_path, max_tokens=args.max_tokens)
    model.invoke("Say hello.")  # the model loaded before anything is timed
    met = True
    for label, steps in (("first draft only (best-of-N)", 0), ("first draft + 1 refine step", 1)):
        seconds_one, one = _run(model, 1, steps)
        before = _perf(model)
        seconds_n, many = _run(model, args.n, steps)
        after = _perf(model)
        read = (after[0] - before[0]) / ((after[1] - before[1]) / 1000)
        written = (after[2] - before[2]) / ((after[3] - before[3]) / 1000)
        evaluated_one = sum(r[1] for r in one.replies)
        evaluated_n = sum(r[1] for r in many.replies)
        written_n = sum(r[2] for r in many.replies)
        bound = evaluated_one / read + written_n / written
        ratio = evaluated_n / max(evaluated_one, 1)
        read_fully = sum(1 for sent, evaluated, _ in many.replies if evaluated > sent / 4)
        print(
            f"{label}: {args.n} candidates per step ({len(many.replies)} replies, "
            f"{read_fully} of them reading their prompt) evaluated {evaluated_n} prompt tokens, "
            f"1 candidate ({len(one.replies)} replies) "
            f"{evaluated_one}: {ratio:.2f}x (target <= 1.3x); wall {seconds_n:.1f} s (1 candidate: "
            f"{seconds_one:.1f} s); the prompt read once plus every reply written at the raw "
            f"rates ({read:.0f} prompt tok/s read, {written:.1f} tok/s written, in that run) "
            f"= {bound:.1f} s: x{seconds_n / bound:.2f} (target <= 1.2)",
            flush=True,
        )
        met = met and ratio <= 1.3
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
