"""Does refinement help? `python -m benchmarks.quality.run` (or `make bench-quality`).

The same items and model under four conditions, all through the project's batch path
(`arefine_batch`) and judged by the exact checker of each set on the final answer text,
an answer that echoes the task or the prompt's scaffolding counting as wrong:

- first: the first draft only (generated once, then given to every other condition,
  so all of them start from the very same drafts);
- intrinsic: the model critiques itself (critic "llm", no verifier in the loop);
- verifier: the set's verifier first, its findings explained by the LLM critic;
- trainer: as verifier, but only items whose first draft is wrong are refined.

Accuracy after k = 0..K refine steps comes from each item's attempts (one run with K
steps). Writes `quality-<model>-<date>.{json,md,png}` and `quality-latest.md` under
`benchmarks/results/`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from benchmarks.quality.figures import condition_figures
from benchmarks.quality.sets import PROFILE, SETS_DIR, VERIFIER

RESULTS = Path(__file__).resolve().parents[1] / "results"
CONDITIONS = ("first", "intrinsic", "verifier", "trainer")


class _Calls(BaseCallbackHandler):
    """Counts model calls."""

    def __init__(self) -> None:
        self.calls = 0

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.calls += 1


def _items(name: str, n: int) -> list[dict[str, Any]]:
    lines = (SETS_DIR / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()][:n]


async def _first_drafts(model: Any, name: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each item's first draft, through the graph's generate step, judged by the checker."""
    from langgraph.checkpoint.memory import InMemorySaver

    from self_refine import RefineContext, create_self_refine_graph
    from self_refine.batch.judge import VerifierJudge, is_echo

    judge = VerifierJudge([VERIFIER[name]])
    graph = create_self_refine_graph(
        model,
        critics=[VERIFIER[name]],
        settings=RefineContext(profile=PROFILE[name], max_iterations=1),
    ).compile(checkpointer=InMemorySaver(), interrupt_before=["refine"])
    records = []
    for item in items:
        config: Any = {"configurable": {"thread_id": item["id"]}}
        await graph.ainvoke({"task": item["task"], "reference": item["reference"]}, config)
        attempt = (await graph.aget_state(config)).values["attempts"][0]
        right = judge(item["task"], attempt["draft"], item["reference"])
        records.append(
            {
                "id": item["id"],
                "task": item["task"],
                "answer": attempt["draft"],
                "first": attempt["draft"],
                "correct_first": right,
                "correct_at": [right],
                "usage": attempt["usage"],
                "attempts": [attempt],
                "stop_reason": "first_draft",
                "echo_final": is_echo(item["task"], attempt["draft"]),
            }
        )
    return records


async def _condition(
    model: Any, name: str, condition: str, items: list[dict[str, Any]], firsts: list[str], k: int
) -> list[dict[str, Any]]:
    from self_refine import arefine_batch
    from self_refine.batch.judge import is_echo

    verifier = VERIFIER[name]
    result = await arefine_batch(
        [item["task"] for item in items],
        model=model,
        answers=firsts,
        references=[item["reference"] for item in items],
        ids=[item["id"] for item in items],
        verifiers=[verifier],
        refine_only_incorrect=condition == "trainer",
        concurrency=1,
        critics=["llm"] if condition == "intrinsic" else [verifier, "llm"],
        profile=PROFILE[name],
        max_iterations=k,
    )
    records = []
    for item, record, answer in zip(items, result.records, result.answers, strict=True):
        record = dict(record or {"id": item["id"], "answer": answer, "correct_first": False})
        record["echo_final"] = is_echo(item["task"], str(record.get("answer", "")))
        records.append(record)
    return records


def _model(spec: str, base_url: str | None, max_tokens: int, counter: _Calls) -> Any:
    from self_refine.models.resolve import resolve_model

    resolved = resolve_model(spec, base_url=base_url, max_tokens=max_tokens)
    return resolved.model_copy(update={"callbacks": [counter]})


def _model_meta(model: Any, spec: str) -> dict[str, Any]:
    from self_refine.models.fetch import KNOWN_MODELS

    path = getattr(model, "model_path", None)
    meta: dict[str, Any] = {"model": spec, "name": getattr(model, "model_name", spec)}
    if path:
        name = Path(path).name
        known = [m for m in KNOWN_MODELS.values() if m.filename == name]
        meta["file"] = name
        meta["sha256"] = known[0].sha256 if known else _sha256(Path(path))
    return meta


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while block := data.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every set under every condition; returns the results document.

    The files are written again after each set, so a run stopped half-way keeps the
    sets it finished (the document says which were left out).
    """
    from benchmarks.quality.report import write_results

    counter = _Calls()
    model = _model(args.model, args.base_url, args.max_tokens, counter)
    results: dict[str, Any] = {}
    examples: dict[str, list[dict[str, Any]]] = {}
    for number, name in enumerate(args.sets):
        if number:
            partial = _document(args, model, results, examples)
            partial["unfinished_sets"] = args.sets[number:]
            write_results(partial, args.out)
        items = _items(name, args.n)
        results[name] = {}
        start, calls = time.perf_counter(), counter.calls
        first = await _first_drafts(model, name, items)
        seconds = time.perf_counter() - start
        results[name]["first"] = condition_figures(first, 0, seconds, counter.calls - calls)
        firsts = [record["answer"] for record in first]
        runs = {"first": first}
        for condition in args.conditions:
            if condition == "first":
                continue
            print(f"[{name}] {condition} ...", file=sys.stderr, flush=True)
            start, calls = time.perf_counter(), counter.calls
            records = await _condition(model, name, condition, items, firsts, args.k)
            seconds = time.perf_counter() - start
            figures = condition_figures(records, args.k, seconds, counter.calls - calls)
            results[name][condition] = figures
            runs[condition] = records
        examples[name] = _examples(runs)
    return _document(args, model, results, examples)


def _document(
    args: argparse.Namespace,
    model: Any,
    results: dict[str, Any],
    examples: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    return {
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["python -m benchmarks.quality.run", *sys.argv[1:]]),
        "machine": {"cores": os.cpu_count(), "python": sys.version.split()[0]},
        "model": _model_meta(model, args.model),
        "items_per_set": args.n,
        "k": args.k,
        "max_tokens": args.max_tokens,
        "results": results,
        "examples": examples,
    }


def _examples(runs: dict[str, list[dict[str, Any]]], limit: int = 2) -> list[dict[str, Any]]:
    """A few items whose answer changed under verifier-guided refinement, before and after."""
    chosen = runs.get("verifier") or runs.get("intrinsic") or []
    changed = [r for r in chosen if r.get("answer") != r.get("first")]
    return [
        {
            "id": r["id"],
            "task": r.get("task", ""),
            "first": r.get("first", ""),
            "final": r.get("answer", ""),
            "correct_first": r.get("correct_first"),
            "correct_final": r.get("correct_final"),
        }
        for r in changed[:limit]
    ]


def main() -> None:
    """Command line: run, then write the JSON, Markdown and plots."""
    from benchmarks.quality.report import write_results

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="local", help="model string (default: local)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server's base URL")
    parser.add_argument("--n", type=int, default=8, help="items per set (default 8)")
    parser.add_argument("--k", type=int, default=3, help="refine steps (default 3)")
    parser.add_argument("--max-tokens", type=int, default=256, help="per reply (default 256)")
    parser.add_argument("--sets", default="constrained,arithmetic,code")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.sets = [s for s in args.sets.split(",") if s]
    args.conditions = [c for c in args.conditions.split(",") if c]
    document = asyncio.run(run(args))
    for path in write_results(document, args.out):
        print(path)


if __name__ == "__main__":
    main()
