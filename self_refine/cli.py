"""The `self-refine` program.

Heavy imports (LangGraph, LangChain) happen inside the commands, so that
`self-refine --help` answers at once.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import uuid
from typing import Any
from urllib.parse import urlparse

from self_refine.cli_options import (
    add_connection_options,
    check_connection,
    print_error,
    trace_metadata,
)

__all__ = ["main"]

EXIT_FAILURE = 1
EXIT_USAGE = 2

SETTING_KEYS = (
    "model",
    "critic_model",
    "refiner_model",
    "base_url",
    "max_iterations",
    "score_threshold",
    "patience",
    "history_window",
    "select",
    "profile",
    "critics",
    "max_retries",
    "timeout",
    "max_tokens_total",
)


class UsageError(Exception):
    """A command-line mistake; exit code 2."""


def _add_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=os.environ.get("SELF_REFINE_MODEL", "offline"),
        help="model for every role: 'offline' (deterministic stand-in, the default), "
        "'gpt-4o-mini', 'openai:gpt-4o-mini', ... (env SELF_REFINE_MODEL)",
    )
    parser.add_argument("--critic-model", help="model for the critic (default: --model)")
    parser.add_argument("--refiner-model", help="model for the refiner (default: --model)")
    parser.add_argument(
        "--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1"
    )
    parser.add_argument("--max-iterations", type=int, default=3, help="most refine steps (3)")
    parser.add_argument("--score-threshold", type=float, help="stop at this score (0..1)")
    parser.add_argument("--patience", type=int, help="stop after N rounds without a better score")
    parser.add_argument(
        "--history-window", type=int, help="earlier attempts the refine prompt carries (all)"
    )
    parser.add_argument("--select", choices=("best", "last"), default="best", help="answer pick")
    parser.add_argument(
        "--profile",
        default="general",
        help="prompt set and default critics for the kind of task (general); "
        "see `self-refine profiles`",
    )
    parser.add_argument(
        "--critics",
        "--critic",
        dest="critics",
        metavar="NAME[,NAME]",
        help="who critiques: verifiers (answer, python_tests, concepts, json_schema) run "
        "first, then llm (the critic model) explains their findings when one fails; "
        "'human' asks you at the terminal instead (default: the profile's critics)",
    )
    parser.add_argument(
        "--max-tokens-total", type=int, help="token budget of the run (stop reason token_budget)"
    )
    add_connection_options(parser)


def _add_db(parser: argparse.ArgumentParser) -> None:
    from_env = os.environ.get("SELF_REFINE_DB")
    parser.add_argument(
        "--db",
        default=from_env or ".self-refine/checkpoints.sqlite",
        help="SQLite checkpoint file or postgresql:// URL "
        "(default .self-refine/checkpoints.sqlite; env SELF_REFINE_DB)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="self-refine",
        description="Generate a draft, critique it, refine it from the critique, repeat.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="refine a response to a task, step by step")
    run.add_argument("task", help="the task text")
    run.add_argument("--draft", help="start from this response instead of generating one")
    run.add_argument(
        "--reference",
        metavar="JSON",
        help='what verifiers check against, a JSON object or @file, e.g. \'{"answer": "42"}\'',
    )
    run.add_argument("--thread-id", help="name the thread (default: a new UUID)")
    run.add_argument("--json", action="store_true", help="print the final result as JSON")
    _add_settings(run)
    _add_db(run)

    resume = commands.add_parser("resume", help="continue a thread that did not finish")
    resume.add_argument("thread_id")
    resume.add_argument("--json", action="store_true", help="print the final result as JSON")
    add_connection_options(resume)
    _add_db(resume)

    show = commands.add_parser("show", help="print a thread's attempts as a table")
    show.add_argument("thread_id")
    show.add_argument("--json", action="store_true", help="print the thread's state as JSON")
    _add_db(show)

    studio = commands.add_parser(
        "studio", help="serve the graphs to LangGraph Studio (langgraph dev) and print its URL"
    )
    studio.add_argument("--port", type=int, help="port on 127.0.0.1 (default: 2024 if free)")
    studio.add_argument(
        "--model", help="model of the served graphs (default: env SELF_REFINE_MODEL, else offline)"
    )
    studio.add_argument(
        "--config", help="langgraph.json-style config (default: ./studio.json, else built in)"
    )
    studio.add_argument(
        "--no-reload", action="store_true", help="do not restart the server when code changes"
    )
    commands.add_parser("profiles", help="list the prompt profiles, one line each")
    _add_batch_commands(commands)
    return parser


def _add_batch_commands(commands: Any) -> None:
    batch = commands.add_parser(
        "batch", help="refine every item of a JSONL file (resumable: rerun to continue)"
    )
    batch.add_argument(
        "input", help='JSONL file: one {"task": ..., "id"?, "reference"?, "draft"?} per line'
    )
    batch.add_argument("-o", "--output", required=True, help="JSONL results, one line per item")
    batch.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="model calls at once (8): what the model server serves at once; "
        "with --server, items at once",
    )
    batch.add_argument(
        "--refine-only-incorrect",
        action="store_true",
        help="leave first drafts that pass the verifiers as they are (no critique, no refine)",
    )
    batch.add_argument("--summary", help="also write the summary to this JSON file")
    batch.add_argument("--shard", help="run only shard I of N (I/N, 1 <= I <= N) of the items")
    batch.add_argument(
        "--server", help="run items on a LangGraph server (e.g. http://127.0.0.1:2024)"
    )
    batch.add_argument(
        "--verifiers",
        metavar="NAME[,NAME]",
        help="verifiers that judge correctness for the accuracy figures (default: every "
        "built-in one whose data the item's reference holds; '' for none)",
    )
    _add_settings(batch)
    _add_db(batch)

    report = commands.add_parser("report", help="summarize batch output files")
    report.add_argument("outputs", nargs="+", help="output files of `self-refine batch`")
    report.add_argument("--plot", help="draw the summary into this image (.png, .svg, .pdf)")
    report.add_argument("--json", action="store_true", help="print the summary as JSON")


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    from self_refine.state import validate_input

    settings = {key: getattr(args, key) for key in SETTING_KEYS}
    if not args.task.strip():
        raise UsageError("the task is empty: give the text of the task in quotes")
    validate_input({"task": args.task})
    check_connection(args)
    if not 1 <= settings["max_iterations"] <= 50:
        raise UsageError(f"--max-iterations must be between 1 and 50, got {args.max_iterations}")
    threshold = settings["score_threshold"]
    if threshold is not None and not 0 <= threshold <= 1:
        raise UsageError(f"--score-threshold must be between 0 and 1, got {threshold}")
    if settings["patience"] is not None and settings["patience"] < 1:
        raise UsageError(f"--patience must be >= 1, got {settings['patience']}")
    if settings["history_window"] is not None and settings["history_window"] < 0:
        raise UsageError(f"--history-window must be >= 0, got {settings['history_window']}")
    if settings["critics"] is not None:
        settings["critics"] = _critic_names(settings["critics"])
    return settings


def _critic_names(text: str) -> list[str]:
    """The names given to --critics, checked against the known critics."""
    from self_refine.critics import VERIFIERS
    from self_refine.critics.verifiers import EXPLAINER_NAMES

    names = [name.strip() for name in text.split(",") if name.strip()]
    known = [*EXPLAINER_NAMES, *VERIFIERS]
    unknown = [n for n in names if n not in known and n not in EXPLAINER_NAMES]
    if not names or unknown:
        given = ", ".join(map(repr, unknown)) or "(none given)"
        raise UsageError(
            f"--critics {text!r}: unknown name(s) {given}; choose from {', '.join(known)}"
        )
    return names


def _reference(text: str | None) -> dict[str, Any] | None:
    """Read --reference: a JSON object, or @path to a file holding one."""
    import json

    if text is None:
        return None
    source = "--reference"
    if text.startswith("@"):
        source = f"--reference file {text[1:]!r}"
        try:
            text = open(text[1:], encoding="utf-8").read()
        except OSError as error:
            raise UsageError(f"{source}: {error.strerror or error}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"{source} is not valid JSON: {error.msg} (column {error.colno})"
        ) from None
    if not isinstance(value, dict):
        raise UsageError(f'{source} must be a JSON object such as \'{{"answer": "42"}}\'')
    return value


def _check_critics(settings: dict[str, Any], reference: Any) -> None:
    """Fail before any model call when the critics cannot judge drafts for this reference."""
    from self_refine.critics import resolve_verifier
    from self_refine.critics.combined import check_judgeable
    from self_refine.critics.verifiers import EXPLAINER_NAMES
    from self_refine.prompts import get_profile

    names = settings.get("critics") or list(get_profile(settings["profile"]).critics)
    verifiers = [resolve_verifier(n) for n in names if n not in EXPLAINER_NAMES]
    check_judgeable(verifiers, any(n in EXPLAINER_NAMES for n in names), reference)


def _check_reachable(base_url: str | None) -> None:
    """Fail fast, before any model call, when the server at base_url cannot be reached."""
    if not base_url:
        return
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UsageError(f"--base-url must look like http://HOST:PORT/v1, got {base_url!r}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=5).close()
    except OSError as error:
        raise RuntimeError(
            f"cannot reach {base_url} ({error.strerror or error}): "
            "start the server or fix --base-url"
        ) from None


def _graph(settings: dict[str, Any], api_key: str | None = None) -> Any:
    from self_refine.graphs import create_self_refine_graph
    from self_refine.models import resolve_model

    def model(name: str | None) -> Any:
        if not name:
            return None
        return resolve_model(
            name,
            base_url=settings["base_url"],
            timeout=settings.get("timeout"),
            max_retries=settings.get("max_retries"),
            api_key=api_key,
        )

    return create_self_refine_graph(
        model(settings["model"]),
        critic_model=model(settings["critic_model"]),
        refiner_model=model(settings["refiner_model"]),
        max_iterations=settings["max_iterations"],
        score_threshold=settings["score_threshold"],
        patience=settings["patience"],
        history_window=settings["history_window"],
        select=settings["select"],
        profile=settings["profile"],
        critics=settings.get("critics") or (),
        max_tokens_total=settings.get("max_tokens_total"),
    )


def _stream(
    args: argparse.Namespace, settings: dict[str, Any], thread_id: str, payload: Any
) -> int:
    import json

    from self_refine.console import print_result, print_update
    from self_refine.graphs import GRAPH_NAME, recursion_limit
    from self_refine.redact import redact_url
    from self_refine.storage import open_checkpointer

    out = sys.stdout
    config: Any = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": recursion_limit(settings["max_iterations"]),
        "tags": ["self-refine", "cli"],
        "metadata": trace_metadata(settings),
    }
    with open_checkpointer(args.db) as saver:
        graph = _graph(settings, args.api_key).compile(checkpointer=saver, name=GRAPH_NAME)
        if payload is not None and graph.get_state(config).values:
            raise UsageError(
                f"thread {thread_id!r} already exists in {args.db}: continue it with "
                f"`self-refine resume {thread_id}` or choose another --thread-id"
            )
        print(f"thread: {thread_id}  (db: {redact_url(args.db)})", file=out, flush=True)
        try:
            while payload is not _STOP:
                chunks = graph.stream(payload, config, stream_mode="updates", durability="sync")
                for chunk in chunks:
                    for node, update in chunk.items():
                        if not args.json:
                            print_update(node, update, out)
                payload = _answer_human_critic(graph.get_state(config), args)
        except KeyboardInterrupt:
            print(
                f"\ninterrupted; continue with: self-refine resume {thread_id} --db {args.db}",
                file=sys.stderr,
            )
            return 130
        except Exception as error:
            _model_failure(error, settings, thread_id, args.db)
        state = graph.get_state(config)
    if state.interrupts:
        print(
            f"waiting for a critique; answer it with: self-refine resume {thread_id} --db {args.db}"
        )
        return 0
    if state.next:
        print(
            f"paused before {', '.join(state.next)}; continue with: self-refine resume {thread_id}"
        )
        return 0
    if args.json:
        result = {k: state.values.get(k) for k in ("answer", "stop_reason", "iterations", "score")}
        print(
            json.dumps({"thread_id": thread_id, **result, "attempts": state.values.get("attempts")})
        )
    else:
        print_result(state.values, out)
    return 0


_STOP = object()


def _answer_human_critic(state: Any, args: argparse.Namespace) -> Any:
    """Ask at the terminal for the critique the run waits for; the Command to resume, or _STOP."""
    from langgraph.types import Command

    from self_refine.critics.human import HUMAN_CRITIQUE_KIND
    from self_refine.terminal import ask_critique

    pending = [i for i in state.interrupts if isinstance(i.value, dict)]
    if not pending or pending[0].value.get("kind") != HUMAN_CRITIQUE_KIND:
        return _STOP
    answer = ask_critique(pending[0].value, sys.stdin, sys.stderr if args.json else sys.stdout)
    return _STOP if answer is None else Command(resume=answer)


def _model_failure(error: Exception, settings: dict[str, Any], thread_id: str, db: str) -> None:
    """Turn an error from a model call into one line naming the model, endpoint and fix."""
    from self_refine.errors import ConfigError, ModelCallError
    from self_refine.redact import redact_url

    if isinstance(error, ConfigError):
        raise error
    if isinstance(error, ModelCallError):
        raise RuntimeError(
            f"{error}. Progress is saved; once the endpoint is back, continue with: "
            f"self-refine resume {thread_id} --db {redact_url(db)}"
        ) from None
    endpoint = (
        settings.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "the default endpoint"
    )
    detail = " ".join(str(error).split())[:300] or type(error).__name__
    raise RuntimeError(
        f"model {settings.get('model')!r} at {endpoint} failed: {type(error).__name__}: {detail}. "
        f"Progress is saved; continue with: self-refine resume {thread_id} --db {db}"
    ) from error


def cmd_run(args: argparse.Namespace) -> int:
    """Start a thread and stream its steps."""
    from self_refine.storage import ThreadSettings

    settings = _settings(args)
    if args.draft is not None and not args.draft.strip():
        raise UsageError("--draft is empty: give the response to refine, or leave --draft out")
    _graph(settings, args.api_key)  # bad models, profiles, missing keys fail here, before any call
    reference = _reference(args.reference)
    _check_critics(settings, reference)
    _check_reachable(settings["base_url"])
    thread_id = args.thread_id or str(uuid.uuid4())
    records = ThreadSettings(args.db)
    payload: dict[str, Any] = {"task": args.task}
    if args.draft is not None:
        payload["draft"] = args.draft
    if reference is not None:
        payload["reference"] = reference
    if records.load(thread_id) is None:
        records.save(thread_id, settings)
    return _stream(args, settings, thread_id, payload)


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a thread from its last checkpoint, with the settings it started with."""
    from self_refine.storage import ThreadSettings

    check_connection(args)
    settings = ThreadSettings(args.db).load(args.thread_id)
    if settings is None:
        raise UsageError(f"no thread {args.thread_id!r} in {args.db}: check the id and --db")
    for key in ("max_retries", "timeout"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    _check_reachable(settings.get("base_url"))
    return _stream(args, settings, args.thread_id, None)


def cmd_show(args: argparse.Namespace) -> int:
    """Print a thread's attempts."""
    import json

    from self_refine.console import attempts_table
    from self_refine.graphs import create_self_refine_graph
    from self_refine.storage import open_checkpointer

    with open_checkpointer(args.db) as saver:
        # Reading a thread needs the graph's channels, not its models: offline will do.
        graph = create_self_refine_graph("offline").compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": args.thread_id}})
    if not state.values:
        raise UsageError(f"no thread {args.thread_id!r} in {args.db}: check the id and --db")
    values = state.values
    if args.json:
        print(json.dumps(values, default=str))
        return 0
    print(f"thread {args.thread_id}\ntask: {values.get('task')}\n")
    print(attempts_table(values.get("attempts") or []))
    if values.get("stop_reason"):
        print(f"stop reason: {values['stop_reason']}; answer:\n    {values.get('answer', '')}")
    else:
        print(f"not finished; continue with: self-refine resume {args.thread_id}")
    return 0


def cmd_studio(args: argparse.Namespace) -> int:
    """Serve the graphs with `langgraph dev` on a free port and print the Studio URL."""
    from self_refine.devserver import run_studio

    return run_studio(
        args.config, port=args.port, model=args.model, reload=not args.no_reload, out=sys.stdout
    )


def cmd_profiles(args: argparse.Namespace) -> int:
    """List the prompt profiles with their default critics, one line each."""
    from self_refine.prompts import PROFILES

    for profile in PROFILES.values():
        critics = ",".join(profile.critics)
        print(f"{profile.name:<24} {critics:<16} {profile.summary}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    """Refine a JSONL file of items."""
    from self_refine.batch_cli import batch_command

    if args.critics is not None:
        args.critics = _critic_names(args.critics)
    if not args.server:
        _check_reachable(args.base_url)
    return batch_command(args)


def cmd_report(args: argparse.Namespace) -> int:
    """Summarize batch outputs."""
    from self_refine.batch_cli import report_command

    return report_command(args)


COMMANDS = {
    "run": cmd_run,
    "resume": cmd_resume,
    "show": cmd_show,
    "studio": cmd_studio,
    "profiles": cmd_profiles,
    "batch": cmd_batch,
    "report": cmd_report,
}


def main(argv: list[str] | None = None) -> int:
    """Run the program; return its exit code."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except UsageError as error:
        print_error(error, args)
        return EXIT_USAGE
    except Exception as error:
        from self_refine.errors import ConfigError

        print_error(error, args)
        return EXIT_USAGE if isinstance(error, ConfigError) else EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
