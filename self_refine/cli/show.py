"""`show`: a thread's attempts and answer, as text, JSON or an HTML page; reads, never writes."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from self_refine.cli.paths import check_writable, refuse_foreign, refuse_overlaps
from self_refine.content import describe_task
from self_refine.errors import ConfigError
from self_refine.pages.render import is_page
from self_refine.redact import shell_command, terminal_safe
from self_refine.tree import answer_draft, steps_taken

__all__ = ["cmd_show", "require_db"]


def require_db(db: str, thread_id: str) -> None:
    """Raise ConfigError when a SQLite checkpoint file does not exist (never create one to read)."""
    from self_refine.persistence.postgres import is_postgres_url
    from self_refine.redact import redact_url

    if not is_postgres_url(db) and not os.path.exists(db):
        raise ConfigError(
            f"no thread {thread_id!r} in {redact_url(db)}: no such database file; "
            "check the id and --db (or SELF_REFINE_DB)"
        )


def cmd_show(args: argparse.Namespace) -> int:
    """Print a thread's attempts."""
    import json

    from self_refine.cli.console import attempts_table
    from self_refine.graphs import GRAPH_NAME, create_self_refine_graph
    from self_refine.persistence.failures import thread_damage
    from self_refine.persistence.storage import open_checkpointer
    from self_refine.redact import redact_url

    refuse_overlaps([("--html", args.html)], db=args.db)
    check_writable(args.html, "the page --html")
    refuse_foreign(args.html, "the page --html", ours=is_page, what="page")
    require_db(args.db, args.thread_id)
    with open_checkpointer(args.db, read_only=True) as saver:
        # Reading a thread needs the graph's channels, not its models.
        graph = create_self_refine_graph(None).compile(checkpointer=saver, name=GRAPH_NAME)
        config: Any = {"configurable": {"thread_id": args.thread_id}}
        state = graph.get_state(config)
        history = list(graph.get_state_history(config)) if args.html and state.values else []
    if not state.values:
        raise ConfigError(
            f"no thread {args.thread_id!r} in {redact_url(args.db)}: check the id and --db"
        )
    values = state.values
    if args.html:
        from self_refine.pages.render import write_thread_page
        from self_refine.pages.thread import step_times, thread_view

        page = thread_view(values, title=f"thread {args.thread_id}", steps=step_times(history))
        print(f"page written to {write_thread_page(page, args.html)}", file=sys.stderr)
    if args.json:
        # "" is the channel's value before the first draft: say "no draft yet" as null.
        # The answer's message is for the messages stream: the answer is in "answer".
        shown = {k: v for k, v in values.items() if k != "answer_message"}
        print(json.dumps({**shown, "draft": values.get("draft") or None}, default=str))
        return 0
    task = terminal_safe(describe_task(values.get("task")))
    if damage := thread_damage(args.thread_id, values):
        print(f"self-refine: warning: {terminal_safe(damage)}", file=sys.stderr)
        task = "(missing)"
    print(f"thread {terminal_safe(args.thread_id)}\ntask: {task}\n")
    print(attempts_table(values.get("attempts") or []))
    if values.get("stop_reason"):
        answer = terminal_safe(values.get("answer") or "")
        found = answer_draft(values)
        which = f" ({found.words()})" if found else ""
        print(
            f"stop reason: {values['stop_reason']} after {steps_taken(values)}\n"
            f"answer{which}:\n    {answer}"
        )
        from self_refine.pages.thread import recorded_vote
        from self_refine.voting import vote_words

        if vote := recorded_vote(values):
            print(f"answer chosen by the vote: {terminal_safe(vote_words(vote))}")
        if values.get("structured_error"):
            print(f"response format: {terminal_safe(values['structured_error'])}")
    else:
        resume = shell_command("self-refine", "resume", args.thread_id, "--db", redact_url(args.db))
        print(f"not finished; continue with: {resume}")
    return 0
