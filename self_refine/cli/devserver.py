"""Serve the graphs to LangGraph Studio with `langgraph dev`, on a free loopback port."""

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


def dev_command(config: Path, port: int, *, reload: bool = True) -> list[str]:
    """The `langgraph dev` command line, run by this Python so it sees the same packages."""
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--config", str(config)]
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
    """Stop a server that never answered, and raise an error that says why."""
    if process.poll() is None:
        process.terminate()
        process.wait()
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
    """Start `langgraph dev`, print the Studio URL once it answers, and wait until it stops."""
    _check_installed()
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    if port is not None and not _port_free(port):
        raise ConfigError(f"port {port} is in use: choose another with --port, or leave it out")
    chosen = port if port is not None else free_port()
    with tempfile.TemporaryDirectory(prefix="self-refine-studio-") as scratch:
        path, cwd = _config_path(config, Path(scratch))
        process = subprocess.Popen(
            dev_command(path, chosen, reload=reload), cwd=cwd, env=dev_env(model)
        )
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
        except KeyboardInterrupt:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
            return 130
