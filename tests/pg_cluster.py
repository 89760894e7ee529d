"""A throwaway PostgreSQL cluster for tests: initdb and pg_ctl, 127.0.0.1, a private port.

It uses Debian's binaries under /usr/lib/postgresql/*/bin (the `postgresql`
package, which .ci/run installs when missing). PostgreSQL refuses to run as
root, so under root the server runs as the `postgres` user (`runuser`).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from glob import glob
from pathlib import Path

MISSING = (
    "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin: "
    "install them with `apt-get install postgresql` (.ci/run does)"
)


def find_bindir() -> Path | None:
    """The newest Debian PostgreSQL bin directory with initdb and pg_ctl, if any."""
    found = [Path(p) for p in glob("/usr/lib/postgresql/*/bin")]
    usable = [p for p in found if (p / "initdb").exists() and (p / "pg_ctl").exists()]
    version = lambda p: int(re.sub(r"\D", "", p.parent.name) or 0)  # noqa: E731
    return max(usable, key=version) if usable else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresCluster:
    """initdb + pg_ctl start on start(), pg_ctl stop and the directory removed on stop()."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.port = _free_port()
        self.base = Path(tempfile.mkdtemp(prefix="self-refine-pg-"))
        self.data = self.base / "data"
        self.as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        done = subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            log = self.base / "server.log"
            detail = log.read_text() if log.exists() else ""
            raise RuntimeError(f"{command[0]} failed: {done.stderr}{done.stdout}{detail}")

    def start(self) -> PostgresCluster:
        self.base.chmod(0o755)
        self.data.mkdir()
        if self.as_postgres:
            shutil.chown(self.base, "postgres")
            shutil.chown(self.data, "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c fsync=off -c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.base / "server.log"),
            "-w",
            "start",
        )
        return self

    def stop(self) -> None:
        try:
            self._run(
                str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
            )
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)
