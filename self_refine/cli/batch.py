"""The `self-refine batch` and `self-refine report` commands."""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from self_refine.batch.files import FileBatch
from self_refine.batch.items import BatchItem
from self_refine.batch.job import BatchJob
from self_refine.batch.judge import DEFAULT_VERIFIERS
from self_refine.batch.metrics import format_summary, summarize
from self_refine.batch.output import STDOUT
from self_refine.cli.interrupt import stoppable
from self_refine.cli.paths import (
    check_writable,
    read_response_format,
    refuse_foreign,
    refuse_overlaps,
)
from self_refine.cli.progress import Progress
from self_refine.cli.settings import build_graph, say_auto
from self_refine.errors import ConfigError, install_hint
from self_refine.pages.render import is_page
from self_refine.redact import redact, terminal_safe
from self_refine.settings.call import resolve
from self_refine.settings.fields import RefineContext

if TYPE_CHECKING:
    pass

__all__ = ["batch_command", "report_command"]


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


def _job(
    args: argparse.Namespace, context: RefineContext, response_format: dict[str, Any] | None
) -> BatchJob:
    """What the flags say about judging and refining the items, checked before any model call."""
    if args.concurrency < 1:
        raise ConfigError(f"--concurrency must be >= 1, got {args.concurrency}")
    verifiers = _verifier_names(args.verifiers)
    if args.refine_only_incorrect and not verifiers:
        raise ConfigError(
            "--refine-only-incorrect needs verifiers to tell correct drafts apart: "
            "leave --verifiers out, or name some (e.g. --verifiers answer)"
        )
    return BatchJob(
        context,
        verifiers=verifiers,
        refine_only_incorrect=args.refine_only_incorrect,
        concurrency=args.concurrency,
        response_format=response_format,
    )


def _ray_engine(args: argparse.Namespace) -> Any:
    """The Ray engine `--ray` asks for (None without it), checked before any model call:
    Ray installed, a database every node reaches."""
    if args.ray_actors is not None and args.ray is None:
        raise ConfigError("--ray-actors says how many Ray actors run items: add --ray")
    if args.ray is None:
        return None
    if args.server:
        raise ConfigError("--ray and --server are two places to run the items: choose one of them")
    from self_refine.batch.ray_engine import RayEngine

    try:
        engine = RayEngine(args.ray, db=args.db, actors=args.ray_actors)
    except ConfigError as error:
        if args.ray_actors is not None and args.ray_actors < 1:
            raise ConfigError(f"--ray-actors must be >= 1, got {args.ray_actors}") from None
        raise ConfigError(f"--ray: {error}") from None
    engine.check()
    return engine


def _warn(message: str) -> None:
    print(f"self-refine: {message}", file=sys.stderr, flush=True)


class _Shown:
    """A file batch's events, shown on standard error: warnings, notes and a progress bar.

    Text from the input or an error is shown with control characters as escapes, and
    with the API key (and any other known secret) masked.
    """

    def __init__(self, secrets: Sequence[str | None] = ()) -> None:
        self.progress: Progress | None = None
        self.secrets = list(secrets)

    def _safe(self, text: str) -> str:
        return terminal_safe(redact(" ".join(text.split()), self.secrets))

    def warn(self, message: str) -> None:
        if self.progress is not None:  # a note while the batch runs (an item handed again)
            self.progress.note(self._safe(message))
        else:
            _warn(self._safe(message))

    def start(self, total: int, done_before: Iterable[dict[str, Any]]) -> None:
        self.progress = Progress(total, sys.stderr, done_before=done_before)
        if before := self.progress.before:
            _warn(
                f"{before} of {total} items were done by an earlier run (read back from the "
                f"output, not run again); {total - before} left to run"
            )

    def finished(self, record: dict[str, Any]) -> None:
        assert self.progress is not None
        self.progress.add(record)

    def failed(self, item: BatchItem, error: Exception) -> None:
        assert self.progress is not None
        where = f" (line {item.line})" if item.line else ""
        detail = self._safe(str(error))[:300]
        self.progress.note(
            f"item {self._safe(item.id)}{where} failed: {type(error).__name__}: {detail}"
        )
        self.progress.fail()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()


def batch_command(args: argparse.Namespace, context: RefineContext) -> int:
    """Refine every item of a JSONL file into an output file; resumable.

    `context` is every item's settings, from the flags (`cli.settings.settings_from_flags`).
    """
    stream = args.output == STDOUT
    refuse_overlaps(
        [("--output", args.output), ("--summary", args.summary), ("--html", args.html)],
        [("the input file", args.input), ("--api-key-file", getattr(args, "api_key_file", None))],
        db=None if args.server else args.db,
    )
    if stream and args.html:
        raise ConfigError(
            "--html reads the results back from the -o file, and -o - keeps none: give -o a "
            "file path, or leave --html out"
        )
    summary_out = args.summary == STDOUT
    if stream and summary_out:
        raise ConfigError(
            "-o - and --summary - would both be on standard output: give --summary a file path"
        )
    if (stream or summary_out) and sys.stdout is None:
        flag = "-o -" if stream else "--summary -"
        raise ConfigError(
            f"{flag} writes to standard output, which is closed: give {flag.split()[0]} a "
            "file path, or run with standard output open"
        )
    if not stream:
        check_writable(args.output, "-o", fix="choose another -o path, or -o - for standard output")
    if not summary_out:
        check_writable(args.summary, "--summary")
    check_writable(args.html, "the page --html")
    refuse_foreign(args.summary, "--summary", ours=_is_summary, what="batch summary")
    refuse_foreign(args.html, "the page --html", ours=is_page, what="page")
    shown = _Shown([args.api_key])
    response_format = read_response_format(args.response_format)
    if response_format is not None and args.server:
        raise ConfigError(
            "--response-format needs a local batch: a LangGraph server runs the graph it serves; "
            "leave out --server, or serve a graph built with response_format="
        )
    job = _job(args, context, response_format)
    ray = _ray_engine(args)
    batch = FileBatch(
        job, args.input, args.output, args.shard, db=args.db, server=args.server, ray=ray
    )
    items = batch.read(shown)
    # Bad models and missing keys fail here, before the output is opened (or made).
    builder = recipe = None
    if ray is not None:
        from self_refine.graphs import create_self_refine_graph

        recipe = functools.partial(create_self_refine_graph, None, response_format=response_format)
    if not args.server:
        builder = build_graph(response_format)
        job.check_models(builder.parts, items)
    batch.prepare(items)  # a server that is down, an -o file that is not results: no work
    if builder is not None:  # what each item's door takes for "auto" (`resolve`)
        say_auto(
            resolve(builder.parts, job.context, None, {"reference": item.reference}).row
            for item in items
        )
    try:
        with stoppable("finished items are saved: run the same command to continue") as stop:
            try:
                result = stop.run(batch.run(items, shown, builder=builder, recipe=recipe))
            except BaseException as error:
                if not stop.signum or isinstance(error, SystemExit):
                    raise
                shown.close()  # `Interrupted`, or what the stop left on its way out
                stop.say(stop.signum)
                return 128 + stop.signum
    except KeyboardInterrupt as interrupted:  # raised with no signal
        shown.close()
        _warn("interrupted; finished items are saved: run the same command to continue")
        return 128 + getattr(interrupted, "signum", 2)
    except BaseException:
        shown.close()  # the error's line starts on a line of its own
        raise
    shown.close()
    summary = result.summary
    summary.update(failed=result.failed, input_problems=[p.line for p in batch.problems])
    # With -o -, standard output holds the results only; with --summary -, the summary's JSON.
    print(format_summary(summary), file=sys.stderr if stream or summary_out else sys.stdout)
    if summary_out:
        print(json.dumps(summary, indent=2), flush=True)
    elif args.summary:
        _write_json(args.summary, summary)
        _warn(f"summary written to {args.summary}")
    if stream:
        _warn("results written to standard output, one JSON line per item")
    else:
        where = shlex.quote(args.output)
        _warn(f"results in {args.output}; summary and plot: self-refine report {where}")
    if args.html:
        from self_refine.batch.report import load_records

        _write_page(args.html, load_records([args.output]), args.output)
    if result.failed:
        _warn(f"{result.failed} item(s) failed; run the same command again to retry them")
        return 1
    return 0


def _is_summary(path: Path) -> bool:
    """Whether the file at `path` is a summary `--summary` wrote (so it may be written again)."""
    if path.stat().st_size > _SUMMARY_MAX_BYTES:
        return False
    try:
        value = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and {"items", "judged", "stop_reasons"} <= value.keys()


_SUMMARY_MAX_BYTES = 10_000_000


def _write_json(path: str, value: Any) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write {path!r} ({error.strerror}): fix the path") from None


def report_command(args: argparse.Namespace) -> int:
    """Summarize finished output files, and draw the summary when asked."""
    from self_refine.batch.report import is_plot, load_records, plot_summary

    plot = args.plot or (None if args.no_plot else _default_plot(args.outputs[0]))
    refuse_overlaps(
        [("--plot" if args.plot else "the plot", plot), ("--html", args.html)],
        [(f"output file {path!r}", path) for path in args.outputs],
    )
    check_writable(plot, "the plot", fix="give --plot a path in a writable folder, or --no-plot")
    check_writable(args.html, "the page --html")
    refuse_foreign(plot, "the plot" if not args.plot else "--plot", ours=is_plot, what="plot")
    refuse_foreign(args.html, "the page --html", ours=is_page, what="page")
    records = load_records(args.outputs)
    if not records:
        raise ConfigError(f"no results in {', '.join(args.outputs)}: run `self-refine batch` first")
    summary = summarize(records)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(format_summary(summary))
    if plot:
        plot_summary(summary, plot)
        print(f"plot written to {plot}", file=sys.stderr)
    elif not args.no_plot:
        print(f"no plot drawn: it needs matplotlib ({install_hint('plot')})", file=sys.stderr)
    _write_page(args.html, records, ", ".join(args.outputs))
    return 0


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
