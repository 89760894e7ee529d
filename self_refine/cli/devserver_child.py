"""The `langgraph dev` process that `self-refine studio` starts, watching only the sources.

`langgraph dev` reloads on code changes by watching its whole working
directory, which also holds what the server itself writes (its
`.langgraph_api` store, flushed every 10 s), checkpoint databases and caches:
each write is logged as "N changes detected". This process runs `langgraph
dev` unchanged except that the reload watcher is given the folders that hold
the graphs' code (uvicorn's `reload_dirs`, which `langgraph dev` has no flag
for). It also stops when the `self-refine studio` that started it dies.

    python -m self_refine.cli.devserver_child --parent PID [--watch DIR]... -- dev ARGS
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Any

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Get SIGTERM when the parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        sys.exit(0)


def _split(argv: list[str]) -> tuple[int, list[str], list[str]]:
    """(parent pid, folders to watch, the langgraph CLI's arguments)."""
    parent, watch = 0, []
    index = 0
    while index < len(argv) and argv[index] != "--":
        flag, value = argv[index], argv[index + 1]
        if flag == "--parent":
            parent = int(value)
        elif flag == "--watch":
            watch.append(value)
        else:
            raise SystemExit(f"devserver_child: unknown option {flag}")
        index += 2
    return parent, watch, argv[index + 1 :]


def main(argv: list[str]) -> None:
    """Run `langgraph` with `argv` after `--`, its reload watcher limited to the --watch folders."""
    parent, watch, rest = _split(argv)
    if parent:
        _die_with_parent(parent)
    import langgraph_api.cli as server_cli
    from langgraph_cli.cli import cli

    run_server = server_cli.run_server

    def run_server_watching_sources(*args: Any, **kwargs: Any) -> Any:
        if watch:
            kwargs["reload_dirs"] = watch
        return run_server(*args, **kwargs)

    # `langgraph dev` imports run_server from this module when it runs: it gets this one.
    server_cli.run_server = run_server_watching_sources
    cli.main(args=rest, prog_name="langgraph")


if __name__ == "__main__":
    main(sys.argv[1:])
