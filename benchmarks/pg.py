"""A throwaway PostgreSQL cluster: a temporary data directory on a private loopback port."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PostgresUnavailable", "throwaway_postgres"]


class PostgresUnavailable(RuntimeError):
    """PostgreSQL cannot be started here; the message says why."""


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PostgresUnavailable("PostgreSQL is not installed (Debian: apt-get install -y postgresql)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> list[str]:
    """Prefix that runs a server command as `postgres` when we are root (initdb refuses root)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("runuser"):
        raise PostgresUnavailable("running as root without `runuser` to switch to postgres")
    return ["runuser", "-u", "postgres", "--"]


def _run(command: list[str]) -> None:
    try:
        subprocess.run(command, check=True, capture_output=True)
    except subprocess.CalledProcessError as error:
        lines = (error.stderr or b"").decode(errors="replace").strip().splitlines()
        name = next((Path(part).name for part in command if "/" in part), command[0])
        raise PostgresUnavailable(f"{name} failed: {' '.join(lines[-1:])}") from None


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Start a private cluster and yield a libpq connection string for its superuser."""
    bindir = _bindir()
    prefix = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="self-refine-bench-pg-"))
    if prefix:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    pg_ctl = [*prefix, str(bindir / "pg_ctl"), "-D", str(data)]
    started = False
    try:
        initdb = [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres"]
        _run([*initdb, "-A", "trust", "-E", "UTF8", "--no-sync"])
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
        _run([*pg_ctl, "-o", options, "-w", "-l", str(root / "server.log"), "start"])
        started = True
        yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    finally:
        if started:
            subprocess.run([*pg_ctl, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
