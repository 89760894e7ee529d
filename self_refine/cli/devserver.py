"""Serve the graphs to LangGraph Studio with `langgraph dev`, on a free loopback port.

The server runs in its own session (a process group of its own, which Ctrl-C at
the terminal does not reach), started through `devserver_child` so that its
reload watcher sees only the graphs' code and it stops if this process dies.
This process stops the whole group on every way out: the server exiting,
Ctrl-C, SIGTERM, SIGHUP, or an error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TextIO

from self_refine.cli.process_group import Stopped, stop_group, stop_signals
from self_refine.errors import ConfigError

__all__ = [
    "DEFAULT_PORT",
    "HOST",
    "INSTALL_HINT",
    "dev_command",
    "dev_env",
    "free_port",
    "packaged_config",
    "run_studio",
    "studio_url",
    "wait_ready",
    "watch_dirs",
]

HOST = "127.0.0.1"
DEFAULT_PORT = 2024
INSTALL_HINT = 'pip install "langgraph-self-refine[studio]"'
PACKAGED_GRAPHS = {
    "self_refine": "self_refine.graphs.studio:graph",
    "chat": "self_refine.graphs.studio:chat",
}


def studio_url(port: int, host: str = HOST) -> str:
    """The LangGraph Studio address that opens the server at host:port."""
    return f"https://smith.langchain.com/studio/?baseUrl=http://{host}:{port}"


def _port_free(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(preferred: int | None = DEFAULT_PORT, host: str = HOST) -> int:
    """`preferred` if nothing listens there, else (or when None) a port the system says is free."""
    if preferred and _port_free(preferred, host):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _check_installed() -> None:
    for module in ("langgraph_cli", "langgraph_api"):
        if importlib.util.find_spec(module) is None:
            raise ConfigError(
                f"LangGraph Studio needs the LangGraph dev server ({module} is missing): "
                f"{INSTALL_HINT}"
            )


def packaged_config(directory: Path) -> Path:
    """Write a studio config serving the installed package's graphs, for use outside the repo."""
    path = directory / "studio.json"
    path.write_text(json.dumps({"dependencies": ["."], "graphs": PACKAGED_GRAPHS}, indent=2))
    return path


def _config_path(config: str | None, scratch: Path) -> tuple[Path, Path | None]:
    """The config to serve and the directory to serve it from (None: the current one).

    A given path, else ./studio.json, else the installed package's graphs.
    """
    if config is not None:
        path = Path(config).resolve()
        if not path.is_file():
            raise ConfigError(f"no studio config at {config}: pass the path of studio.json")
        return path, path.parent
    if Path("studio.json").is_file():
        return Path("studio.json").resolve(), None
    return packaged_config(scratch), None


def _package_root(path: Path) -> Path:
    """The outermost package folder holding a module file (its own folder if in none)."""
    folder = path.parent
    while (folder.parent / "__init__.py").is_file() and (folder / "__init__.py").is_file():
        folder = folder.parent
    return folder


def _module_folder(module: str) -> Path | None:
    """The outermost package folder of an importable module, or None if it cannot be found."""
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def watch_dirs(config: Path) -> list[Path]:
    """The folders holding the code of the config's graphs: what a reload should watch.

    A graph given as a file ("./pkg/graphs.py:graph") is watched through the
    outermost package around it; one given as a module ("pkg.graphs:graph")
    through that package. Nothing else (databases, caches, the server's own
    store) is watched.
    """
    try:
        graphs = json.loads(config.read_text()).get("graphs") or {}
    except (OSError, ValueError):
        return []
    found: set[Path] = set()
    for spec in graphs.values():
        target = str(spec).rsplit(":", 1)[0]
        if target.endswith(".py") or "/" in target:
            path = (config.parent / target).resolve()
            if path.is_file():
                found.add(_package_root(path))
        elif (folder := _module_folder(target)) is not None:
            found.add(folder.resolve())
    return sorted(found)


def dev_command(
    config: Path, port: int, *, reload: bool = True, watch: list[Path] | None = None
) -> list[str]:
    """The `langgraph dev` command line, run by this Python so it sees the same packages.

    It runs through `devserver_child`: the reload watcher sees only `watch`,
    and the server stops when this process dies.
    """
    command = [sys.executable, "-m", "self_refine.cli.devserver_child"]
    command += ["--parent", str(os.getpid())]
    if reload:
        for folder in watch or []:
            command += ["--watch", str(folder)]
    command += ["--", "dev", "--config", str(config)]
    command += ["--no-browser", "--host", HOST, "--port", str(port)]
    return command if reload else [*command, "--no-reload"]


def dev_env(model: str | None) -> dict[str, str]:
    """This process's environment with analytics and version checks off, and the model set."""
    env = dict(os.environ)
    env["LANGGRAPH_CLI_NO_ANALYTICS"] = "1"
    env["LANGGRAPH_NO_VERSION_CHECK"] = "true"
    env["SELF_REFINE_MODEL"] = model or env.get("SELF_REFINE_MODEL") or "offline"
    return env


def wait_ready(process: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """Poll the server's /ok until it answers; False if it exits or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/ok", timeout=2) as reply:
                if reply.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    return False


def _not_ready(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Raise an error that says why a server never answered (the caller stops it)."""
    if process.poll() is None:
        raise RuntimeError(
            f"langgraph dev did not answer within {timeout:.0f} s; its output above says why"
        )
    raise RuntimeError(
        f"langgraph dev stopped before it was ready (exit code {process.returncode}); "
        "its output above says why"
    )


def run_studio(
    config: str | None,
    *,
    port: int | None,
    model: str | None,
    reload: bool,
    out: TextIO,
    timeout: float = 120.0,
) -> int:
    """Start `langgraph dev`, print the Studio URL once it answers, and wait until it stops.

    Exit code: the server's, or 130 after Ctrl-C, 128 + the signal after SIGTERM or SIGHUP.
    """
    _check_installed()
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    if port is not None and not _port_free(port):
        raise ConfigError(f"port {port} is in use: choose another with --port, or leave it out")
    chosen = port if port is not None else free_port()
    try:
        with tempfile.TemporaryDirectory(prefix="self-refine-studio-") as scratch, stop_signals():
            path, cwd = _config_path(config, Path(scratch))
            command = dev_command(path, chosen, reload=reload, watch=watch_dirs(path))
            process = subprocess.Popen(command, cwd=cwd, env=dev_env(model), start_new_session=True)
            try:
                if not wait_ready(process, chosen, timeout):
                    _not_ready(process, timeout)
                print(
                    f"\nLangGraph Studio: {studio_url(chosen)}\n"
                    f"API: http://{HOST}:{chosen}   (Ctrl-C stops the server)",
                    file=out,
                    flush=True,
                )
                return process.wait()
            finally:
                stop_group(process)
    except KeyboardInterrupt:
        return 130
    except Stopped as stopped:
        return 128 + stopped.signum
