"""`self-refine run --critic human`: the person answers at the terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from self_refine.cli.main import main

TASK = "Write one sentence using the words: dog, frisbee, park."


def _run(
    argv: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_asks_at_the_terminal_and_resume_asks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    start = ["run", TASK, "--critic", "human", "--db", db, "--thread-id", "t1"]
    # One critique, then the input ends: the run waits, saved, for the next one.
    code, out, err = _run(start, 'Replace "rough" with "short"\n\n0.4\n\n', monkeypatch, capsys)
    assert code == 1, "input that ends while the critic waits is not success"
    assert "standard input ended while the human critic waited" in err
    assert "draft:\n    this is a very rough draft about dog" in out
    assert '[critique] iteration 0  score 0.40  done false  (human)\n    - Replace "rough"' in out
    assert "[refine] draft 1:\n    this is a very short draft about dog" in out
    assert f"waiting for a critique; answer it with: self-refine resume t1 --db {db}" in out

    # No feedback, no score, Enter at "done?": the draft is accepted.
    code, out, _ = _run(["resume", "t1", "--db", db], "\n\n\n", monkeypatch, capsys)
    assert code == 0
    assert 'earlier draft 0: Replace "rough" with "short"' in out
    assert "Stopped: critic_done after 1 refine step(s)" in out
    assert "Answer (refine step 1):\n    this is a very short draft about dog" in out


def test_bad_answers_are_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    # A score that is not a number, then an empty answer marked not done, then "done".
    answers = "\nhigh\n1.5\n\nn\n\n0.9\ny\n"
    code, out, _ = _run(
        ["run", TASK, "--critic", "human", "--db", db], answers, monkeypatch, capsys
    )
    assert code == 0
    assert "'high' is not a number" in out
    assert "1.5 is outside 0..1" in out
    assert "your last answer could not be used: the answer is empty" in out
    assert "Stopped: critic_done after 0 refine step(s); score 0.90" in out


def test_json_output_stays_clean_while_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", TASK, "--critic", "human", "--db", str(tmp_path / "c.sqlite"), "--json"]
    code, out, err = _run(argv, "\n\ny\n", monkeypatch, capsys)
    assert code == 0
    assert "[human critic] iteration 0" in err
    assert "thread: " in err
    result = json.loads(out)  # the whole of stdout is the result
    assert result["stop_reason"] == "critic_done"
    assert result["attempts"][0]["critique"]["source"] == "human"
    assert result["next"] == []


def test_json_output_stays_clean_while_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    argv = ["run", TASK, "--critic", "human", "--db", db, "--json", "--thread-id", "w"]
    code, out, err = _run(argv, "", monkeypatch, capsys)  # no answer: the run waits
    assert code == 1
    assert f"waiting for a critique; answer it with: self-refine resume w --db {db}" in err
    waiting = json.loads(out)
    assert waiting["thread_id"] == "w" and waiting["stop_reason"] is None
    assert waiting["next"] == ["critique"]

    code, out, err = _run(["resume", "w", "--db", db, "--json"], "\n\ny\n", monkeypatch, capsys)
    assert code == 0
    assert "thread: w" in err
    assert json.loads(out)["stop_reason"] == "critic_done"


@pytest.mark.parametrize(("select", "chosen"), [("best", 0), ("last", 1)])
def test_select_picks_the_better_earlier_draft_or_the_last(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    select: str,
    chosen: int,
) -> None:
    argv = ["run", TASK, "--critic", "human", "--select", select, "--json"]
    argv += ["--db", str(tmp_path / "c.sqlite")]
    # Draft 0 scores 0.9 and gets one fix; draft 1 scores 0.2 and is accepted.
    answers = 'Replace "rough" with "short"\n\n0.9\n\n\n0.2\ny\n'
    code, out, _ = _run(argv, answers, monkeypatch, capsys)
    assert code == 0
    result = json.loads(out)
    drafts = [a["draft"] for a in result["attempts"]]
    assert [a["critique"]["score"] for a in result["attempts"]] == [0.9, 0.2]
    assert drafts[0] != drafts[1]
    assert result["answer"] == drafts[chosen]


def test_unknown_critic_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", TASK, "--critic", "robot"]) == 2
    assert "--critics 'robot': unknown critic 'robot'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("critics", "says"),
    [
        ("human,concepts", "the human critic works alone"),
        ("llm,human", "the human critic works alone"),
        ("concepts,llm,llm", "name one explaining critic, not 2"),
    ],
)
def test_critic_combinations_the_graph_cannot_run_leave_no_thread(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    critics: str,
    says: str,
) -> None:
    db = str(tmp_path / "c.sqlite")
    argv = ["run", TASK, "--critics", critics, "--db", db, "--thread-id", "h1"]
    code, out, err = _run(argv, "", monkeypatch, capsys)
    assert code == 2
    assert err.count("\n") == 1 and f"--critics {critics!r}: {says}" in err
    assert "thread:" not in out
    code, _, err = _run(["resume", "h1", "--db", db], "", monkeypatch, capsys)
    assert code == 2 and "no thread 'h1'" in err
    code, _, err = _run(["show", "h1", "--db", db], "", monkeypatch, capsys)
    assert code == 2 and "no thread 'h1'" in err


def test_new_input_on_a_thread_waiting_for_a_person_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from self_refine import create_self_refine_graph

    db = str(tmp_path / "c.sqlite")
    start = ["run", TASK, "--critic", "human", "--db", db, "--thread-id", "t"]
    assert _run(start, "", monkeypatch, capsys)[0] == 1  # waits for the first critique

    def snapshot() -> tuple[object, ...]:
        with SqliteSaver.from_conn_string(db) as saver:
            graph = create_self_refine_graph("offline").compile(checkpointer=saver)
            state = graph.get_state({"configurable": {"thread_id": "t"}})
        return state.values, state.next, [i.value for i in state.interrupts], state.config

    before = snapshot()
    again = ["run", "Write a haiku about rain.", "--db", db, "--thread-id", "t"]
    code, _, err = _run(again, "", monkeypatch, capsys)
    assert code == 2
    assert "thread 't' already exists" in err and "self-refine resume t" in err
    assert snapshot() == before

    code, out, _ = _run(["resume", "t", "--db", db], "\n\ny\n", monkeypatch, capsys)
    assert code == 0
    assert "Answer (the first draft):\n    this is a very rough draft about dog" in out


def _run_with_reader_leaving(tmp_path: Path, leave_after: str) -> tuple[int, str]:
    """Run with the human critic, stdout piped to a reader that leaves once it sees a line.

    The answers arrive on stdin only after the reader has left, as a person's would.
    """
    import subprocess
    import sys
    import time

    command = [sys.executable, "-m", "self_refine.cli", "run", TASK, "--critics", "human"]
    process = subprocess.Popen(
        [*command, "--thread-id", "t", "--db", str(tmp_path / "c.sqlite")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    for line in process.stdout:
        if leave_after in line:
            break
    process.stdout.close()  # the reader leaves, as `| head -1` does
    time.sleep(0.5)
    _, err = process.communicate("\n\ny\n", timeout=120)
    return process.returncode, err


@pytest.mark.parametrize("leave_after", ["thread: t", "[human critic]"])
def test_a_closed_stdout_moves_the_questions_to_stderr_and_the_run_finishes(
    tmp_path: Path,
    leave_after: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = _run_with_reader_leaving(tmp_path, leave_after)
    assert code == 0, err
    assert "failed" not in err and "BrokenPipeError" not in err
    # The person still sees what is asked: the questions went on on stderr.
    assert "done, no further change needed?" in err
    assert err.count("stdout was closed") == 1
    code, out, _ = _run(["show", "t", "--db", str(tmp_path / "c.sqlite")], "", monkeypatch, capsys)
    assert code == 0 and "stop reason: critic_done" in out
