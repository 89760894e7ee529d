"""Does refinement help? `python -m benchmarks.quality.run` (or `make bench-quality`).

The same items (the reported part of each set; `--part tune` for the tuning part) and
model under six conditions, all through the project's batch path (`arefine_batch`) and
judged by the exact checker of each set on the final answer text against the item's
grading data (`grade`), an answer that echoes the task or the prompt's scaffolding
counting as wrong. A run checks drafts only with what the task gives (`feedback.py`,
the main setting): the listed words, a code task's example asserts, for arithmetic no key
(its verifier conditions then have the LLM critic alone):

- first: the first draft only (generated once, then given to every other condition,
  so all of them start from the very same drafts);
- intrinsic: the model critiques itself (critic "llm", no verifier in the loop);
- verifier: the task's checks first, their findings explained by the LLM critic;
- trainer: as verifier, but only items whose first draft fails the task's checks are
  refined (every item, where the task gives none);
- candidates: as verifier, each refine step sampling `--candidates` replies at once
  (parallel branches), the task's checks then the critic's score picking one;
- bestofn: best-of-N first drafts, no refinement: N replies to the task at once, the
  task's checks (else the critic) picking one; N (`--best-of`, else worked out) makes
  its mean tokens per item at least those of the candidates condition (else of
  verifier-guided), so the two compare at equal budgets.

Every refining condition's records are judged again for feedback wording (on the
constrained set, a draft that took over six words in a row of the feedback it was given
counts wrong, `honesty.rejudge`; on the others it is marked, the key or tests judging),
and every final answer is named by the forms that count it wrong (a word list, ...:
`honesty.answer_forms`).

Accuracy after k = 0..K refine steps comes from each item's attempts (one run with K
steps). The cost of a refining condition (tokens, time, calls per item) includes the
first draft it started from, so every row says what its answers cost in total. Writes
`quality-<model>-<date>-<hhmm>.{json,md,png}` and every item's record (drafts, critiques,
rejected replies) in `.records.jsonl` under `--out` (`--name` chooses the stem), again
after each set; it never writes over existing files unless `--overwrite`, and writes
`quality-latest.md` only with `--latest`. Without matplotlib it says so instead of the
plot. How to spend a token budget (strategies against budgets) is `spend.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from benchmarks.quality.document import add_model_options, document, examples_of
from benchmarks.quality.feedback import Grader, run_checks
from benchmarks.quality.figures import condition_figures, correct_at
from benchmarks.quality.honesty import answer_forms, rejudge
from benchmarks.quality.intervals import mcnemar, paired_counts
from benchmarks.quality.outputs import dated_stem, refuse_existing
from benchmarks.quality.sets import PARTS, PROFILE, SETS_DIR
from self_refine.prompts.render import DEFAULT_REFINE_FORM, REFINE_FORMS

RESULTS = Path(__file__).resolve().parents[1] / "results"
CONDITIONS = ("first", "intrinsic", "verifier", "trainer", "candidates", "bestofn")


class _Calls(BaseCallbackHandler):
    """Counts model calls."""

    def __init__(self) -> None:
        self.calls = 0

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.calls += 1


def load_items(name: str, n: int | None, part: str = "report") -> list[dict[str, Any]]:
    """The first `n` items (None: all of them) of one part of a set (`report` or `tune`)."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; choose from {', '.join(PARTS)}")
    if name == "humaneval":
        from benchmarks.quality.humaneval import items as humaneval_items

        return humaneval_items(part, n)
    lines = (SETS_DIR / f"{name}.jsonl").read_text().splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    items = [item for item in items if item["split"] == part][:n]
    if n is not None and len(items) < n:
        print(
            f"[{name}] its {part} part has {len(items)} items: using all of them", file=sys.stderr
        )
    return items


async def first_drafts(model: Any, name: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each item's first draft, the graph's generate step alone (it sees the task and
    nothing else), judged by the grader on the item's grading reference."""
    from langgraph.checkpoint.memory import InMemorySaver

    from self_refine import RefineContext, create_self_refine_graph
    from self_refine.batch.judge import is_echo

    grader = Grader(name)
    graph = create_self_refine_graph(
        model, critics=["llm"], settings=RefineContext(profile=PROFILE[name], max_iterations=1)
    ).compile(checkpointer=InMemorySaver(), interrupt_before=["critique"])
    records = []
    for item in items:
        config: Any = {"configurable": {"thread_id": item["id"]}}
        await graph.ainvoke({"task": item["task"]}, config)
        values = (await graph.aget_state(config)).values
        attempt: dict[str, Any] = {
            "iteration": 0,
            "draft": values["draft"],
            "critique": {},
            "usage": values["draft_usage"],
        }
        for key, field in (("problems", "draft_problems"), ("rejected", "draft_rejected")):
            if values.get(field):
                attempt[key] = list(values[field])
        right = grader(item, attempt["draft"])
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
                "forms": answer_forms(item["task"], attempt["draft"], item["grade"]),
            }
        )
    return records


def _graded(record: dict[str, Any], item: dict[str, Any], grader: Grader) -> dict[str, Any]:
    """The record with every attempt, its first draft and its answer judged by the grader
    (the run judged them, if at all, by its own checks only)."""
    attempts = [
        {**a, "correct": grader(item, str(a.get("draft", "")))}
        for a in record.get("attempts") or []
    ]
    graded = {**record, "attempts": attempts}
    if attempts:
        graded["correct_first"] = attempts[0]["correct"]
    if "answer" in record:
        graded["correct_final"] = grader(item, str(record["answer"]))
    return graded


async def _condition(
    model: Any,
    name: str,
    condition: str,
    items: list[dict[str, Any]],
    firsts: list[str],
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """The condition's records, in item order: one batch per verifier the items' checks
    name (most sets name one for all; a HumanEval problem whose docstring shows no
    executable example runs with the critic alone), every answer judged by the grader."""
    from self_refine.batch.judge import is_echo

    checks = [run_checks(name, item, "task") for item in items]
    grader = Grader(name)
    done: list[tuple[dict[str, Any] | None, str, str | None]] = [(None, "", None)] * len(items)
    for verifier in dict.fromkeys(c.verifier for c in checks):
        group = [i for i, c in enumerate(checks) if c.verifier == verifier]
        result = await _batch(
            model,
            name,
            condition,
            [items[i] for i in group],
            [firsts[i] for i in group],
            [checks[i].reference for i in group],
            verifier,
            args,
        )
        errors = _errors(result.errors, len(group))
        for index, record, answer, error in zip(
            group, result.records, result.answers, errors, strict=True
        ):
            done[index] = (record, answer, error)
    records = []
    for item, (record, answer, error) in zip(items, done, strict=True):
        record = rejudge(
            _graded(
                dict(record or {"id": item["id"], "answer": answer, "correct_first": False}),
                item,
                grader,
            ),
            count_wording=grader.counts_feedback_wording,
        )
        if error:
            record["error"] = error
        final = str(record.get("answer", ""))
        record["echo_final"] = is_echo(item["task"], final)
        worded = bool(record.get("feedback_wording_final"))
        record["forms"] = answer_forms(item["task"], final, item["grade"], worded)
        records.append(record)
    return records


async def _batch(
    model: Any,
    name: str,
    condition: str,
    items: list[dict[str, Any]],
    firsts: list[str],
    references: list[dict[str, Any] | None],
    verifier: str | None,
    args: argparse.Namespace,
) -> Any:
    """One batch of the condition: items whose run checks drafts with `verifier`."""
    from self_refine import arefine_batch

    best_of = condition == "bestofn"
    guided = [verifier, "llm"] if verifier else ["llm"]
    options: dict[str, Any] = {
        "critics": ["llm"] if condition == "intrinsic" else guided,
        "max_iterations": args.k,
    }
    if condition == "candidates":
        options["candidates"] = args.candidates
    if best_of:
        options.update(critics=guided[:1], candidates=args.best_of, max_iterations=0)
    if args.refine_form:
        options["refine_form"] = args.refine_form
    return await arefine_batch(
        [item["task"] for item in items],
        model=model,
        answers=None if best_of else firsts,
        references=references,
        ids=[item["id"] for item in items],
        verifiers=[verifier] if verifier else [],
        refine_only_incorrect=condition == "trainer",
        concurrency=1,
        profile=PROFILE[name],
        **options,
    )


def best_of_n(first: dict[str, Any], matched: dict[str, Any] | None) -> int:
    """The N whose best-of-N spends at least the mean tokens per item of `matched`.

    One first draft costs `first`'s tokens per item; N is the smallest whole number of
    those at or above `matched`'s (at least 2, at most the library's limit).
    """
    from self_refine.settings.fields import CANDIDATES_LIMIT

    def tokens(figures: dict[str, Any]) -> float:
        return float(figures["input_tokens_per_item"] + figures["output_tokens_per_item"])

    if matched is None or tokens(first) <= 0:
        return 4
    return max(2, min(CANDIDATES_LIMIT, math.ceil(tokens(matched) / tokens(first))))


def _paired(
    mine: list[dict[str, Any]], k: int, other: list[dict[str, Any]], other_k: int
) -> dict[str, Any]:
    """Two conditions' final answers on the same items: gained, lost, exact McNemar p."""
    gained, lost = paired_counts(
        [correct_at(r, k)[-1] for r in mine], [correct_at(r, other_k)[-1] for r in other]
    )
    return {"items": len(mine), "gained": gained, "lost": lost, "mcnemar_p": mcnemar(gained, lost)}


def _errors(errors: dict[int, str], size: int) -> list[str | None]:
    return [errors.get(index) for index in range(size)]


def _with_first_cost(records: list[dict[str, Any]], first: list[dict[str, Any]]) -> None:
    """Add each item's first-draft tokens to its refining record: the total cost of its answer."""
    from self_refine.state import add_usage

    for record, start in zip(records, first, strict=True):
        record["usage"] = add_usage(start.get("usage"), record.get("usage"))


def _model(
    spec: str, base_url: str | None, api_key: str | None, max_tokens: int, counter: _Calls
) -> Any:
    from self_refine.models.resolve import resolve_model

    resolved = resolve_model(spec, base_url=base_url, api_key=api_key, max_tokens=max_tokens)
    return resolved.model_copy(update={"callbacks": [counter]})


async def run(
    args: argparse.Namespace, chat_model: Any = None
) -> tuple[dict[str, Any], dict[str, dict[str, list[dict[str, Any]]]]]:
    """Every set under every condition; returns the results document and every record.

    The files are written after each set, so a run stopped half-way keeps the sets it
    finished (the document says which were left out), their paths at the end left in
    `args.paths`; before the first model call, files already there stop the run unless
    `args.overwrite`. `chat_model`, when
    given, is used instead of resolving `args.model` (a scripted model, in tests).
    """
    from benchmarks.quality.document import model_meta
    from benchmarks.quality.report import write_results

    counter = _Calls()
    if chat_model is None:
        model = _model(args.model, args.base_url, args.api_key, args.max_tokens, counter)
    else:
        model = chat_model.model_copy(update={"callbacks": [counter]})
    name = str(model_meta(model, args.model)["name"])
    args.stem = args.name or dated_stem("quality", name, datetime.datetime.now())
    kinds = (".json", ".md", ".png", ".records.jsonl")
    wanted = [args.out / f"{args.stem}{kind}" for kind in kinds]
    refuse_existing(wanted, args.overwrite)
    results: dict[str, Any] = {}
    examples: dict[str, list[dict[str, Any]]] = {}
    records: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for number, name in enumerate(args.sets):
        if number:
            partial = document(args, model, results, examples)
            partial["unfinished_sets"] = args.sets[number:]
            write_results(partial, args.out, records, stem=args.stem)
        items = load_items(name, args.n, args.part)
        results[name] = {}
        print(f"[{name}] first drafts of {len(items)} items ...", file=sys.stderr, flush=True)
        start, calls = time.perf_counter(), counter.calls
        first = await first_drafts(model, name, items)
        first_seconds, first_calls = time.perf_counter() - start, counter.calls - calls
        results[name]["first"] = condition_figures(first, 0, first_seconds, first_calls)
        firsts = [record["answer"] for record in first]
        runs = {"first": first}
        # Best-of-N last: its N is worked out from the tokens the refining conditions spent.
        order = [c for c in args.conditions if c not in ("first", "bestofn")]
        order += ["bestofn"] if "bestofn" in args.conditions else []
        for condition in order:
            if condition == "bestofn" and not args.best_of_given:
                matched = results[name].get("candidates") or results[name].get("verifier")
                args.best_of = best_of_n(results[name]["first"], matched)
            print(f"[{name}] {condition} ...", file=sys.stderr, flush=True)
            start, calls = time.perf_counter(), counter.calls
            done = await _condition(model, name, condition, items, firsts, args)
            seconds = time.perf_counter() - start
            calls_made = counter.calls - calls
            if condition == "bestofn":
                figures = condition_figures(done, 0, seconds, calls_made)
                figures["n"] = args.best_of
            else:
                _with_first_cost(done, first)
                seconds, calls_made = seconds + first_seconds, calls_made + first_calls
                figures = condition_figures(done, args.k, seconds, calls_made, written_from=1)
            if condition == "candidates":
                figures["n"] = args.candidates
            results[name][condition] = figures
            runs[condition] = done
        if "candidates" in runs and "bestofn" in runs:
            results[name]["candidates"]["against_bestofn"] = _paired(
                runs["candidates"], args.k, runs["bestofn"], 0
            )
        examples[name] = examples_of(runs)
        records[name] = runs
    finished = document(args, model, results, examples)
    args.paths = write_results(
        finished, args.out, records, stem=args.stem, latest=args.latest, final=True
    )
    return finished, records


def main() -> None:
    """Command line: run (it writes the JSON, Markdown and plot), then say where they are."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_options(parser)
    parser.add_argument("--n", type=int, default=10, help="items per set (default 10)")
    parser.add_argument(
        "--part",
        choices=PARTS,
        default="report",
        help="the reported items (default) or the tuning part",
    )
    parser.add_argument("--k", type=int, default=3, help="refine steps (default 3)")
    parser.add_argument("--max-tokens", type=int, default=512, help="per reply (default 512)")
    parser.add_argument(
        "--refine-form",
        choices=REFINE_FORMS,
        help=f"layout of the refine request (default: the library's, {DEFAULT_REFINE_FORM})",
    )
    parser.add_argument(
        "--candidates", type=int, default=3, help="replies per refine step (default 3)"
    )
    parser.add_argument(
        "--best-of",
        type=int,
        help="N of best-of-N first drafts (default: the smallest N whose tokens per item "
        "are at least those of the candidates condition, else of verifier-guided)",
    )
    parser.add_argument(
        "--sets", default="constrained,arithmetic,code", help="default: %(default)s"
    )
    parser.add_argument(
        "--conditions", default=",".join(CONDITIONS), help="default: all six, %(default)s"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder (default: %(default)s)")
    parser.add_argument("--name", help="file name stem (default: quality-<model>-<date>-<hhmm>)")
    parser.add_argument("--overwrite", action="store_true", help="replace files of that name")
    parser.add_argument(
        "--latest",
        action="store_true",
        help="also write quality-latest.md, replacing it (the page the docs link)",
    )
    args = parser.parse_args()
    args.sets = [s for s in args.sets.split(",") if s]
    args.conditions = [c for c in args.conditions.split(",") if c]
    args.best_of_given = args.best_of is not None
    asyncio.run(run(args))
    for path in args.paths:
        print(path)


if __name__ == "__main__":
    main()
