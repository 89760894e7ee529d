"""`run` and `resume`: one thread from the command line (`show` is in `cli/show.py`).

A run's steps are streamed and printed as they end; a human critic is asked at the
terminal; a model or database failure names the command that continues the thread.
"""

from __future__ import annotations

import argparse
import signal
import sys
import uuid
from typing import TYPE_CHECKING, Any

from self_refine.cli.failures import run_failure
from self_refine.cli.interrupt import stoppable
from self_refine.cli.options import EXIT_FAILURE
from self_refine.cli.paths import read_reference, read_response_format, refuse_overlaps
from self_refine.cli.settings import (
    build_graph,
    check_reachable,
    check_settings,
    flagged,
    given_settings,
    say_auto,
    warn_key_on_command_line,
    warn_offline_sampling,
    warn_unchecked,
)
from self_refine.cli.show import require_db
from self_refine.errors import ConfigError
from self_refine.redact import redact_url, shell_command
from self_refine.settings.fields import RefineContext

if TYPE_CHECKING:
    from self_refine.settings.call import Checked

__all__ = ["cmd_resume", "cmd_run"]


def _stream(
    args: argparse.Namespace,
    graph: Any,
    thread_id: str,
    payload: Any,
    checked: Checked,
    thread: Any = None,
) -> int:
    """Run a new thread (payload: its input) or continue one (None), printing each step.

    `checked`: the door's check of this call, which the door then runs as it is (it is
    not checked twice). `thread`: the state of the thread to continue, as the caller has
    just read it (a read walks the thread's checkpoints back to its run's start, so it
    is not read twice).

    The caller holds the thread's writer lock from its first read to the last write,
    so that a second `run` or `resume` of it is refused (ThreadBusyError) before it
    reads or writes. With --json, stdout holds only the JSON result; the notes go to
    stderr.
    """
    from self_refine.cli.progress import token_meter
    from self_refine.cli.settings import offline_writes
    from self_refine.models.cancel import StopNewCalls
    from self_refine.redact import redact_url
    from self_refine.settings.call import run_finished

    settings = checked.settings
    db = redact_url(args.db)
    notes = sys.stderr if args.json else sys.stdout
    resume = shell_command("self-refine", "resume", thread_id, "--db", db)
    config: Any = {
        "configurable": {"thread_id": thread_id},
        "tags": ["self-refine", "cli"],
        "metadata": _trace_metadata(settings),
    }
    print(f"thread: {thread_id}  (db: {db})", file=notes, flush=True)
    state: Any = None  # read as the run begins (a continued one) and after each stream
    if payload is None:
        state = thread if thread is not None else graph.get_state(config)
    if state is not None and run_finished(state):
        print(f"thread {thread_id} is already finished: nothing to resume", file=notes)
        payload = _STOP
    meter = token_meter(settings, sys.stderr, shown=not args.json)
    # No model call starts once the run is stopped (Ctrl-C, SIGTERM).
    callbacks: list[Any] = [StopNewCalls()]
    if meter:  # told when each model call starts, so prompt reading shows too
        callbacks.append(meter.handler())
    config = {**config, "callbacks": callbacks}
    try:
        with stoppable(f"continue with: {resume}") as stop:
            try:
                modes = ["updates", "messages"] if meter else ["updates"]
                while payload is not _STOP:
                    chunks = graph.stream(
                        payload, config, context=checked, stream_mode=modes, durability="sync"
                    )
                    for mode, chunk in chunks:
                        if mode == "messages":
                            if meter:
                                meter.streamed(*chunk)
                            continue
                        if meter:
                            meter.clear()
                        for node, update in chunk.items():
                            if not args.json:
                                _print_step(node, update, thread_id)
                    state = graph.get_state(config)
                    payload = _answer_human_critic(state, args)
            except BaseException as error:
                if not stop.signum or isinstance(error, SystemExit):
                    raise
                # `Interrupted`, or what the stop left on its way out: a model's cleanup
                # that ends its call with `CallCancelled` (the local model's does)
                if meter:
                    meter.close()
                stop.say(stop.signum)
                return 128 + stop.signum
    except KeyboardInterrupt as interrupted:  # before the block, or raised with no signal
        signum = getattr(interrupted, "signum", signal.SIGINT)
        name = "interrupted" if signum == signal.SIGINT else "stopped (SIGTERM)"
        print(f"\nself-refine: {name}; continue with: {resume}", file=sys.stderr)
        return 128 + signum
    except Exception as error:
        run_failure(error, settings, resume if _saved(graph, config) else None, args.db)
    finally:
        if meter:
            meter.close()
    # the state read last, after the run's last step: nothing has written the thread since
    _report(args, thread_id, state, db, offline=offline_writes(settings))
    if state.interrupts:
        print(
            "self-refine: standard input ended while the human critic waited for a critique; "
            f"the thread is saved: answer it with: {resume}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return 0


def _trace_metadata(settings: RefineContext) -> dict[str, Any]:
    """What a trace of this run is labelled with: its profile and model names."""
    model = settings.model
    return {
        "profile": settings.profile,
        "generator_model": settings.generator_model or model,
        "critic_model": settings.critic_model or model,
        "refiner_model": settings.refiner_model or model,
    }


def _print_step(node: str, update: Any, thread_id: str) -> None:
    """Print one step; when the reader closed stdout, say so once and let the run finish."""
    from self_refine.cli.closed_stdout import drop_closed_stdout
    from self_refine.cli.console import print_update

    try:
        print_update(node, update, sys.stdout)
    except BrokenPipeError:
        drop_closed_stdout()
        print(
            f"note: stdout was closed; the run goes on to finish (see it with "
            f"`{shell_command('self-refine', 'show', thread_id)}`)",
            file=sys.stderr,
        )


def _report(
    args: argparse.Namespace, thread_id: str, state: Any, db: str, *, offline: bool
) -> None:
    """Print how the thread stands: its result, or what it waits for and how to go on;
    `offline`: the offline stand-in wrote the drafts, which the result says."""
    from self_refine.cli.console import print_result

    notes = sys.stderr if args.json else sys.stdout
    resume = shell_command("self-refine", "resume", thread_id, "--db", db)
    if state.interrupts:
        print(f"waiting for a critique; answer it with: {resume}", file=notes)
    elif state.next:
        print(f"paused before {', '.join(state.next)}; continue with: {resume}", file=notes)
    if args.json:
        _print_json(thread_id, state)
    elif not state.next:
        print_result(state.values, sys.stdout, offline=offline)


def _print_json(thread_id: str, state: Any) -> None:
    """Print the thread's result as one JSON object; `next` names the steps still to run."""
    import json

    values = state.values
    result = {k: values.get(k) for k in ("answer", "stop_reason", "iterations", "score")}
    for typed in ("structured_response", "structured_error"):
        if typed in values:
            result[typed] = values[typed]
    attempts = values.get("attempts")
    print(
        json.dumps({"thread_id": thread_id, **result, "attempts": attempts, "next": [*state.next]})
    )


_STOP = object()


def _answer_human_critic(state: Any, args: argparse.Namespace) -> Any:
    """Ask at the terminal for the critique the run waits for; the Command to resume, or _STOP."""
    from langgraph.types import Command

    from self_refine.cli.closed_stdout import PromptOutput, stdout_closed
    from self_refine.cli.terminal import ask_critique
    from self_refine.critics.human import HUMAN_CRITIQUE_KIND

    pending = [i for i in state.interrupts if isinstance(i.value, dict)]
    if not pending or pending[0].value.get("kind") != HUMAN_CRITIQUE_KIND:
        return _STOP
    out: Any = sys.stderr
    if not args.json and not stdout_closed():
        note = "note: stdout was closed; the human critic asks here, on stderr, from now on"
        out = PromptOutput(sys.stdout, sys.stderr, note)
    answer = ask_critique(pending[0].value, sys.stdin, out)
    return _STOP if answer is None else Command(resume=answer)


def _saved(graph: Any, config: Any) -> bool:
    """Whether the thread has a checkpoint to continue from (the failed step may be its first)."""
    try:
        return bool(graph.get_state(config).values)
    except Exception:  # noqa: BLE001 - the storage itself may be what failed
        return False


def cmd_run(args: argparse.Namespace) -> int:
    """Start a thread and stream its steps."""
    from self_refine.graphs import GRAPH_NAME
    from self_refine.persistence.locks import thread_lock
    from self_refine.persistence.storage import check_database, open_checkpointer

    if not args.task.strip():
        raise ConfigError("the task is empty: give the text of the task in quotes")
    if args.thread_id is not None and not args.thread_id.strip():
        raise ConfigError("--thread-id is empty: give the thread a name, or leave --thread-id out")
    if args.draft is not None and not args.draft.strip():
        raise ConfigError("--draft is empty: give the response to refine, or leave --draft out")
    reference_file = args.reference[1:] if (args.reference or "").startswith("@") else None
    refuse_overlaps([], [("--reference", reference_file), *_key_file(args)], db=args.db)
    reference = read_reference(args.reference)
    response_format = read_response_format(args.response_format)
    given = given_settings(args)
    builder = build_graph(response_format)
    payload: dict[str, Any] = {"task": args.task}
    if args.draft is not None:
        payload["draft"] = args.draft
    if reference is not None:
        payload["reference"] = reference
    # Bad input, models, profiles, critics for this reference, missing keys fail here,
    # before the database is opened: the door's check, which the door then does not repeat.
    try:
        checked = builder.check_call(payload, check_settings(given), saved=True)
    except ConfigError as error:
        raise flagged(error, given) from None
    settings = checked.settings
    check_reachable(settings)
    warn_key_on_command_line(args)
    warn_unchecked(builder.parts.critic_specs(settings), settings.judge or (), reference)
    warn_offline_sampling(settings)
    check_database(args.db)
    thread_id = args.thread_id or str(uuid.uuid4())
    with open_checkpointer(args.db) as saver, thread_lock(saver, thread_id):
        graph = builder.compile(checkpointer=saver, name=GRAPH_NAME)
        if graph.get_state({"configurable": {"thread_id": thread_id}}).values:
            raise ConfigError(
                f"thread {thread_id!r} already exists in {redact_url(args.db)}: continue it "
                f"with `{shell_command('self-refine', 'resume', thread_id)}` or choose "
                "another --thread-id"
            )
        if checked.row is not None:
            say_auto([checked.row])
        return _stream(args, graph, thread_id, payload, checked)


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a thread from its last checkpoint, with the settings it started with.

    The flags given change those settings: connection options mean what they mean
    for `run` (the flag, else the environment).
    """
    from self_refine.graphs import GRAPH_NAME
    from self_refine.persistence.failures import thread_damage
    from self_refine.persistence.locks import thread_lock
    from self_refine.persistence.storage import check_database, open_checkpointer
    from self_refine.state import ANSWER_SCHEMA

    refuse_overlaps([], _key_file(args), db=args.db)
    require_db(args.db, args.thread_id)
    check_database(args.db)
    given = given_settings(args)
    config: Any = {"configurable": {"thread_id": args.thread_id}}
    with open_checkpointer(args.db) as saver, thread_lock(saver, args.thread_id):
        graph = build_graph().compile(checkpointer=saver, name=GRAPH_NAME)
        thread = graph.get_state(config)
        values = thread.values
        if not values:
            where = redact_url(args.db)
            raise ConfigError(f"no thread {args.thread_id!r} in {where}: check the id and --db")
        if damage := thread_damage(args.thread_id, values):
            raise ConfigError(
                f"{damage}: it cannot be resumed; run its task again with `self-refine run`"
            )
        if values.get(ANSWER_SCHEMA) is not None:  # the answer is typed: so is the graph
            graph = build_graph(values[ANSWER_SCHEMA]).compile(checkpointer=saver, name=GRAPH_NAME)
        # The settings the door will run with, refused here (a change the run cannot take
        # midway, say) as the door would refuse them.
        checked = graph.builder.check_call(None, given, thread=thread, saved=True)
        check_reachable(checked.settings)
        warn_key_on_command_line(args)
        return _stream(args, graph, args.thread_id, None, checked, thread)


def _key_file(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    return [("--api-key-file", getattr(args, "api_key_file", None))]
