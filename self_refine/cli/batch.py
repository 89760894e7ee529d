"""The `self-refine batch` and `self-refine report` commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from self_refine.batch.io import (
    BatchItem,
    InputProblem,
    OutputFile,
    in_shard,
    parse_shard,
    read_items,
)
from self_refine.batch.judge import DEFAULT_VERIFIERS, ReferenceCheck, VerifierJudge
from self_refine.batch.metrics import format_summary, summarize
from self_refine.batch.runner import BatchRunner, Engine, run_key
from self_refine.cli.paths import refuse_same_files
from self_refine.cli.progress import Progress
from self_refine.cli.settings import SETTING_KEYS, build_graph
from self_refine.context import RefineContext
from self_refine.errors import ConfigError

__all__ = ["batch_command", "report_command"]

RESULT_SETTINGS = tuple(
    key for key in SETTING_KEYS if key not in ("base_url", "max_retries", "timeout", "max_tokens")
)
"""Settings that shape results: a rerun with others gets new threads (see thread_id_for)."""


def _context(args: argparse.Namespace) -> RefineContext:
    """The run's settings as a RefineContext (which checks their ranges)."""
    return RefineContext(
        **{name: getattr(args, name) for name in RESULT_SETTINGS},
        base_url=args.base_url,
    )


def _result_settings(args: argparse.Namespace, verifiers: list[str]) -> dict[str, Any]:
    settings = {name: getattr(args, name) for name in RESULT_SETTINGS}
    settings.update(refine_only_incorrect=args.refine_only_incorrect, verifiers=verifiers)
    return settings


def _verifier_names(text: str | None) -> list[str]:
    """The names given to --verifiers (default: every built-in verifier); "" for none."""
    if text is None:
        return list(DEFAULT_VERIFIERS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in DEFAULT_VERIFIERS]
    if unknown:
        raise ConfigError(
            f"--verifiers: unknown name(s) {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(DEFAULT_VERIFIERS)}, or give '' for none"
        )
    return names


def _critic_specs(context: RefineContext) -> list[str]:
    from self_refine.prompts import get_profile

    return list(context.critics or get_profile(context.profile or "general").critics)


def _refuse_human_critic(specs: list[str]) -> None:
    """Refuse the human critic, which would pause every item of an unattended batch."""
    if "human" in specs:
        raise ConfigError(
            "--critics human asks a person at the terminal, which a batch cannot do: "
            "use `self-refine run --critics human` per task, or another critic for the batch"
        )


def _check_server(url: str) -> None:
    """Fail fast when the LangGraph server does not answer."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/ok", timeout=10) as reply:
            reply.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise RuntimeError(
            f"cannot reach the LangGraph server at {url} ({reason}): "
            "start it (e.g. `langgraph dev --config studio.json`) or fix --server"
        ) from None


def _uses_local_model(args: argparse.Namespace) -> bool:
    models = [getattr(args, k, None) or "" for k in ("model", "critic_model", "refiner_model")]
    return any(m == "local" or m.startswith("local:") for m in models)


def _warn(message: str) -> None:
    print(f"self-refine: {message}", file=sys.stderr, flush=True)


def _selected(args: argparse.Namespace, check: ReferenceCheck) -> tuple[list[BatchItem], list[int]]:
    """The items this command runs (its shard of the input), and the unusable lines."""
    shard = parse_shard(args.shard) if args.shard else None
    if args.concurrency < 1:
        raise ConfigError(f"--concurrency must be >= 1, got {args.concurrency}")
    if args.concurrency > 1 and _uses_local_model(args):
        _warn(
            f"--concurrency {args.concurrency} with a local model: its one instance answers one "
            "call at a time, so items overlap but the batch is no faster"
        )
    items, problems = read_items(args.input)
    usable = []
    for item in items:
        try:
            check(item.reference)
        except ConfigError as error:
            problems.append(InputProblem(item.line or 0, f'"reference": {error}'))
        else:
            usable.append(item)
    items = usable
    for problem in sorted(problems, key=lambda p: p.line):
        _warn(f"warning: {args.input} {problem}; skipped")
    if not items:
        raise ConfigError(
            f'no usable items in {args.input}: give one JSON object with a "task" per line'
        )
    if shard:
        items = [item for item in items if in_shard(item.id, shard)]
    return items, sorted(problem.line for problem in problems)


async def _run(
    args: argparse.Namespace,
    context: RefineContext,
    builder: Any,
    options: dict[str, Any],
    todo: list[BatchItem],
    output: OutputFile,
    progress: Progress,
) -> int:
    """Run the items; return how many failed."""
    failed = 0

    async def write(item: BatchItem, record: dict[str, Any]) -> None:
        await asyncio.to_thread(output.write, record)
        progress.add(record)

    async def report(item: BatchItem, error: Exception) -> None:
        nonlocal failed
        failed += 1
        where = f" (line {item.line})" if item.line else ""
        detail = " ".join(str(error).split())[:300]
        progress.note(f"item {item.id}{where} failed: {type(error).__name__}: {detail}")
        progress.fail()

    async with _engine(args, context, builder) as engine:
        runner = BatchRunner(engine, **options)
        await runner.run_all(todo, concurrency=args.concurrency, on_record=write, on_error=report)
    return failed


@asynccontextmanager
async def _engine(
    args: argparse.Namespace, context: RefineContext, builder: Any
) -> AsyncIterator[Engine]:
    """The LangGraph server of --server, else the graph compiled with the --db checkpointer."""
    from self_refine.batch.engines import LocalEngine, ServerEngine, open_async_checkpointer

    if args.server:
        server = ServerEngine(args.server, context=context)
        await server.check()
        yield server
        return
    async with open_async_checkpointer(args.db, pool_size=args.concurrency) as saver:
        yield LocalEngine(builder.compile(checkpointer=saver))


def batch_command(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """Refine every item of a JSONL file into an output file; resumable.

    `settings` are the checked settings flags (`cli_settings.run_settings`).
    """
    refuse_same_files(
        [
            ("the input file", args.input),
            ("--output", args.output),
            ("--summary", args.summary),
            ("--html", args.html),
        ]
    )
    _check_page(args.html)
    if args.summary:
        _check_writable(args.summary, "--summary")
    context = _context(args)
    _refuse_human_critic(_critic_specs(context))
    verifiers = _verifier_names(args.verifiers)
    if args.refine_only_incorrect and not verifiers:
        raise ConfigError(
            "--refine-only-incorrect needs verifiers to tell correct drafts apart: "
            "leave --verifiers out, or name some (e.g. --verifiers answer)"
        )
    judge = VerifierJudge(verifiers) if verifiers else None
    items, bad_lines = _selected(args, ReferenceCheck(verifiers, _critic_specs(context)))
    builder = None
    if args.server:
        _check_server(args.server)
    else:
        builder = build_graph(settings, args.api_key)  # bad models, missing keys fail here
    key = run_key(_result_settings(args, verifiers))
    output = OutputFile.open(args.output, key)
    try:
        if output.repaired:
            _warn(f"note: {args.output} ended in a torn line (an interrupted write); removed it")
        done = output.done_ids()
        todo = [item for item in items if item.id not in done]
        wanted = {item.id for item in items}
        progress = Progress(
            len(items),
            sys.stderr,
            done_before=[r for r in output.records if str(r["id"]) in wanted],
        )
        options = {
            "judge": judge,
            "refine_only_incorrect": args.refine_only_incorrect,
            "select": context.select or "best",
            "key": key,
        }
        try:
            failed = asyncio.run(_run(args, context, builder, options, todo, output, progress))
        except KeyboardInterrupt:
            progress.close()
            _warn("interrupted; finished items are saved: run the same command to continue")
            return 130
        progress.close()
        records = list(output.records)
    finally:
        output.close()
    summary = summarize(records)
    summary.update(failed=failed, input_problems=bad_lines)
    print(format_summary(summary))
    if args.summary:
        _write_json(args.summary, summary)
        _warn(f"summary written to {args.summary}")
    _warn(f"results in {args.output}; summary and plot: self-refine report {args.output}")
    _write_page(args.html, records, args.output)
    if failed:
        _warn(f"{failed} item(s) failed; run the same command again to retry them")
        return 1
    return 0


def _check_writable(path: str, flag: str) -> None:
    """Raise ConfigError, naming `flag`, when a file could not be written at `path` later."""
    target = Path(path)
    if target.is_dir():
        raise ConfigError(
            f"{flag} {path!r} is a folder: give a file name, e.g. {path}/summary.json"
        )
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ConfigError(
            f"{flag} {path!r} cannot be written ({folder} is not a writable folder): "
            "choose another path"
        )
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"{flag} {path!r} is not writable: choose another path")


def _write_json(path: str, value: Any) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write {path!r} ({error.strerror}): fix the path") from None


def report_command(args: argparse.Namespace) -> int:
    """Summarize finished output files, and draw the summary when asked."""
    from self_refine.batch.report import load_records, plot_summary

    refuse_same_files(
        [(f"output file {path!r}", path) for path in args.outputs]
        + [("--plot", args.plot), ("--html", args.html)]
    )
    _check_page(args.html)
    records = load_records(args.outputs)
    if not records:
        raise ConfigError(f"no results in {', '.join(args.outputs)}: run `self-refine batch` first")
    summary = summarize(records)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(format_summary(summary))
    plot = args.plot or (None if args.no_plot else _default_plot(args.outputs[0]))
    if plot:
        plot_summary(summary, plot)
        print(f"plot written to {plot}", file=sys.stderr)
    _write_page(args.html, records, ", ".join(args.outputs))
    return 0


def _check_page(path: str | None) -> None:
    if path:
        from self_refine.pages.render import check_page_path

        check_page_path(path)


def _write_page(path: str | None, records: list[dict[str, Any]], source: str) -> None:
    """Write the batch's HTML page when asked, and say where."""
    if not path:
        return
    from self_refine.pages.batch import batch_view
    from self_refine.pages.render import write_batch_page

    page = batch_view(records, title=f"Self-Refine batch report: {source}")
    print(f"page written to {write_batch_page(page, path)}", file=sys.stderr)


def _default_plot(output: str) -> str | None:
    """`OUTPUT.png` beside the first output file when matplotlib is installed, else None."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return None
    return str(Path(output).with_suffix(".png"))
