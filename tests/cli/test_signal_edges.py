"""Ctrl-C and SIGTERM at the edges of a run: one line and 128 + the signal, never a
traceback or a death by the signal; a finished run keeps its answer and exit code.

Each case is a real `self-refine` process with its output on pipes (as under a log
file, CI or `timeout`): before the run starts (the input is a pipe nobody has written
yet), twice in a row there, after a finished run printed its answer (standard output
full until the test reads it), and with a model whose call, cut short, ends in
`CallCancelled` as the local model's does.
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.openai_server import OpenAIServer, Recorded, offline_responder

pytestmark = pytest.mark.integration

LINES = {
    signal.SIGINT: "self-refine: interrupted",
    signal.SIGTERM: "self-refine: stopped (SIGTERM)",
}


def _start(*args: str, cwd: Path, stdin: Any = None, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _open_when_read(fifo: Path, run: subprocess.Popen[str]) -> int:
    """The write end of `fifo`, once the program has opened it to read (it then waits)."""
    deadline = time.monotonic() + 120
    while True:
        assert run.poll() is None, f"the program ended first: {run.communicate()}"
        assert time.monotonic() < deadline, "the program never opened its input"
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:  # ENXIO: no reader yet
            assert error.errno == errno.ENXIO
        time.sleep(0.05)


def _said_once(err: str, signum: signal.Signals) -> None:
    assert "Traceback" not in err, err
    said = ("self-refine: interrupted", "self-refine: stopped")
    lines = [line for line in err.splitlines() if line.startswith(said)]
    assert len(lines) == 1 and lines[0].startswith(LINES[signum]), err


def _signalled_while_reading_its_input(workdir: Path, *signals: signal.Signals) -> tuple[int, str]:
    """Start a batch with candidates whose input is a pipe nobody has written yet (as
    `self-refine batch <(make-items) ...` gives it), send `signals` once it waits on it;
    its exit code and standard error."""
    os.mkfifo(workdir / "items.jsonl")
    run = _start(
        "batch", "items.jsonl", "-o", "out.jsonl", "--model", "offline", "--db", "db",
        "--candidates", "3", cwd=workdir,
    )  # fmt: skip
    held = _open_when_read(workdir / "items.jsonl", run)
    try:
        for signum in signals:
            run.send_signal(signum)
        _, err = run.communicate(timeout=60)
    finally:
        os.close(held)
    return run.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_before_the_run_starts_gives_one_line_and_its_exit_code(
    workdir: Path, signum: signal.Signals
) -> None:
    code, err = _signalled_while_reading_its_input(workdir, signum)
    assert code == 128 + signum, err
    _said_once(err, signum)


def test_a_second_ctrl_c_right_after_the_first_still_gives_one_line_and_130(
    workdir: Path,
) -> None:
    code, err = _signalled_while_reading_its_input(workdir, signal.SIGINT, signal.SIGINT)
    assert code == 130, err
    _said_once(err, signal.SIGINT)


def _long_drafts(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """The offline model's replies; a draft 200 kB long (more than a pipe holds)."""
    if Recorded(body=request, time=0).role == "generator":
        return "The dog ran in the park. " * 8000
    return offline_responder(messages, request)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_finished_run_prints_its_answer_keeps_the_answer_and_exit_0(
    workdir: Path, signum: signal.Signals
) -> None:
    with OpenAIServer(responder=_long_drafts) as server:
        run = _start(
            "run", "Write about a dog in a park.", "--model", "test-model",
            "--base-url", server.base_url, "--max-iterations", "0", "--db", "db", "--json",
            cwd=workdir, OPENAI_API_KEY="sk-test",
        )  # fmt: skip
        assert run.stdout is not None
        # The answer's JSON is the only thing on standard output: once it starts, the run
        # has finished, and the program waits for the test to read the rest.
        readable, _, _ = select.select([run.stdout], [], [], 300)
        assert readable, "the run never printed its answer"
        run.send_signal(signum)
        out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert "Traceback" not in err
    assert json.loads(out)["answer"].startswith("The dog ran in the park.")


# A chat model whose call cleans up as the local model's does (`models/local.py`'s
# `_Writing`): a call cut short by the stop ends in `CallCancelled` as it unwinds.
_STAND_IN = """
import sys, time
from pathlib import Path
from self_refine.models.cancel import check_cancelled
from self_refine.models.offline import OfflineModel

class _Writing:
    def __enter__(self):
        check_cancelled()
    def __exit__(self, *exc):
        check_cancelled()  # a reply cut short is no reply

def _generate(self, messages, stop=None, run_manager=None, **kwargs):
    with _Writing():
        Path("writing").touch()
        time.sleep(300)

OfflineModel._generate = _generate
from self_refine.cli.main import main
sys.argv = ["self-refine", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_an_in_process_models_call_with_output_on_a_pipe(
    workdir: Path, signum: signal.Signals
) -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", _STAND_IN, "run", "Write about a dog.", "--model", "offline",
         "--thread-id", "t", "--db", "db"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (workdir / "writing").exists():
        assert run.poll() is None, f"the run ended first: {run.communicate()}"
        assert time.monotonic() < deadline, "the model was never called"
        time.sleep(0.05)
    run.send_signal(signum)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 128 + signum, err
    _said_once(err, signum)
    assert "continue with: self-refine resume t --db db" in err
