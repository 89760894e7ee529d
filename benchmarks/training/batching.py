"""A batch's wrong samples refined through the graph cost about one batched generate.

The policy is the local 0.5B model as transformers runs it (`trainable_model`), sampling
as GRPOTrainer does by default (temperature 1). N constrained-generation items get a
first draft each (one batched generate), and the N drafts are refined once through the
refine graph (`refine_batch`: the `concepts` verifier's findings as the critique, the
policy as refiner through `PolicyChatModel`). The graph's first round of refine
requests is then answered by one batched `generate` (the target's baseline), by one
`generate` per request, and every round the graph ran (a reply that is the draft
unchanged is asked again) by one batched `generate` each: the graph's time over those
is what it adds around the generation. Target (issue 31): the graph's refine step
within 1.5x of the one batched generate. All are timed in turn, R times; each ratio is
the median of the per-run ratios (the machine's load changes between runs).

On-policy honesty: each new refinement of the first run is scored by the policy where
it was written (the refine request: what the "exchange" form trains on) and after the
trainer's prompt alone (what the "refinement" form trains on). The gap is how much less
likely the policy finds the tokens the refinement form asks it to learn, per token.

    python -m benchmarks.training.batching --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.quality.sets import SETS_DIR

PROFILE = "constrained_generation"


def _items(count: int) -> list[dict[str, Any]]:
    lines = (SETS_DIR / "constrained.jsonl").read_text().splitlines()[:count]
    return [json.loads(line) for line in lines]


def _token_logprobs(model: Any, context: list[int], tokens: list[int]) -> list[float]:
    """log p(token | context, earlier tokens) for each token, as the trainer computes them."""
    import torch

    ids = torch.tensor([context + tokens])
    with torch.no_grad():
        logits = model(ids).logits[0, len(context) - 1 : -1].float()
    chosen = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(tokens)[:, None])
    return [float(x) for x in chosen[:, 0]]


def _refine(policy: Any, items: list[dict[str, Any]], drafts: list[str]) -> tuple[Any, list[Any]]:
    from self_refine import refine_batch

    with policy.recording() as calls, policy.expecting(len(items)):
        result = refine_batch(
            [item["task"] for item in items],
            model=policy,
            answers=drafts,
            correct=[False] * len(items),
            references=[item["reference"] for item in items],
            verifiers=["concepts"],
            critics=["concepts"],
            profile=PROFILE,
            max_iterations=1,
            concurrency=len(items),
        )
    if result.errors:
        raise RuntimeError(f"refining failed: {result.errors}")
    return result, list(calls)


def _rounds(calls: list[Any], sizes: list[int]) -> list[list[list[int]]]:
    """The refine requests of each generate the graph ran, in order (a round finishes whole)."""
    rounds, taken = [], 0
    for size in sizes:
        rounds.append([c.prompt_ids for c in calls[taken : taken + size]])
        taken += size
    return rounds


def _timed(generate: Any, batches: list[Any]) -> float:
    """Seconds to answer the batches one after another, each with one generate."""
    started = time.perf_counter()
    for batch in batches:
        generate(batch)
    return time.perf_counter() - started


def _gap(
    model: Any,
    tokenizer: Any,
    firsts: list[list[int]],
    drafts: list[str],
    result: Any,
    calls: list[Any],
) -> dict[str, Any]:
    """Log-probabilities of the new refinements where written and after the prompt alone."""
    where_written, after_prompt = [], []
    for first, draft, record in zip(firsts, drafts, result.records, strict=True):
        turn2 = next((a for a in record["attempts"] if a["iteration"] == 1), None)
        if turn2 is None or turn2["draft"] == draft:
            continue
        writer = [
            c
            for c in calls
            if c.metadata.get("thread_id") == record["thread_id"]
            and c.metadata.get("role") == "refiner"
        ][-1]
        where_written.append(
            statistics.mean(_token_logprobs(model, writer.prompt_ids, writer.completion_ids))
        )
        retold = tokenizer.encode(turn2["draft"], add_special_tokens=False)
        after_prompt.append(
            statistics.mean(_token_logprobs(model, first, [*retold, tokenizer.eos_token_id]))
        )
    if not where_written:
        return {"refinements_scored": 0}
    gap = statistics.mean(where_written) - statistics.mean(after_prompt)
    return {
        "refinements_scored": len(where_written),
        "logprob_where_written": statistics.mean(where_written),
        "logprob_after_prompt": statistics.mean(after_prompt),
        "gap_nats_per_token": gap,
        "likelier_per_token": math.exp(gap),
    }


def measure(samples: int, repeats: int, tokens: int, device: str, spec: str) -> dict[str, Any]:
    """Time the ways of answering the refine requests, and the on-policy gap."""
    import torch
    from langchain_core.messages import HumanMessage
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from self_refine.training import PolicyChatModel, trainable_model

    folder = trainable_model(spec)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    generates: list[int] = []
    generate = model.generate

    def counted(**kwargs: Any) -> Any:
        generates.append(int(kwargs["input_ids"].shape[0]))
        return generate(**kwargs)

    model.generate = counted
    # GRPOConfig's sampling defaults: what the trainer's rollouts sample with.
    sampling = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
    policy = PolicyChatModel(
        model=model, tokenizer=tokenizer, generation_config=sampling, max_new_tokens=tokens
    )
    items = _items(samples)
    firsts = [policy.prompt_ids([HumanMessage(item["task"])]) for item in items]
    torch.manual_seed(0)
    drafts = [tokenizer.decode(i, skip_special_tokens=True) for i in policy.generate_ids(firsts)]

    times: dict[str, list[float]] = {"graph": [], "batched": [], "rounds": [], "separate": []}
    sizes: list[list[int]] = []
    gap: dict[str, Any] = {}
    for repeat in range(repeats):
        torch.manual_seed(repeat)
        generates.clear()
        started = time.perf_counter()
        run, calls = _refine(policy, items, drafts)
        times["graph"].append(time.perf_counter() - started)
        sizes.append(list(generates))
        rounds = _rounds(calls, sizes[-1])
        if repeat == 0:
            gap = _gap(model, tokenizer, firsts, drafts, run, calls)
        times["batched"].append(_timed(policy.generate_ids, [rounds[0]]))
        times["rounds"].append(_timed(policy.generate_ids, rounds))
        times["separate"].append(_timed(policy.generate_ids, [[r] for r in rounds[0]]))

    def ratio(top: str, bottom: str) -> float:
        return statistics.median(a / b for a, b in zip(times[top], times[bottom], strict=True))

    return {
        "model": spec,
        "samples": samples,
        "repeats": repeats,
        "max_new_tokens": tokens,
        "device": device,
        "seconds": times,
        "generate_calls_per_graph_run": sizes,
        "graph_over_batched": ratio("graph", "batched"),
        "graph_over_rounds": ratio("graph", "rounds"),
        "separate_over_batched": ratio("separate", "batched"),
        **gap,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=32, help="most tokens of a refine reply")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine")
    parser.add_argument("--model", default="local", help="a local model string (default: local)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()
    figures = measure(args.samples, args.repeats, args.tokens, args.device, args.model)
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
