"""Mistakes a new user makes at the command line: each is refused early and says what to do."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from self_refine.cli.main import main
from self_refine.errors import ModelCallError

TASK = "Write one sentence using the words: dog, frisbee, park."


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _exit_code(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    return int(stop.value.code or 0), capsys.readouterr().err


def test_empty_thread_id_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "c.sqlite"
    code, out, err = cli(capsys, "run", TASK, "--thread-id", "", "--db", str(db))
    assert code == 2
    assert "--thread-id is empty" in err
    assert "thread:" not in out and not db.exists()


@pytest.mark.parametrize("command", ["show", "resume"])
def test_reading_a_missing_db_does_not_create_it(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "typo.sqlite"
    code, _, err = cli(capsys, command, "nope", "--db", str(db))
    assert code == 2
    assert f"no thread 'nope' in {db}: no such database file" in err
    assert not db.exists()


def test_show_hint_and_json_of_a_thread_waiting_at_its_first_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "elsewhere.sqlite")
    monkeypatch.setattr("sys.stdin", open(tmp_path / "empty", "w+"))  # noqa: SIM115
    cli(capsys, "run", TASK, "--critics", "human", "--thread-id", "t", "--db", db)
    code, out, _ = cli(capsys, "show", "t", "--db", db)
    assert code == 0
    assert f"not finished; continue with: self-refine resume t --db {db}" in out
    code, out, _ = cli(capsys, "show", "t", "--db", db, "--json")
    assert json.loads(out)["attempts"] == []


def test_show_json_says_null_for_a_draft_not_yet_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "self_refine.models.offline.OfflineModel._generate",
            lambda *a, **k: (_ for _ in ()).throw(ModelCallError("the model is down")),
        )
        code, _, _ = cli(capsys, "run", TASK, "--thread-id", "t", "--db", db)
    assert code == 1
    code, out, _ = cli(capsys, "show", "t", "--db", db, "--json")
    assert code == 0
    assert json.loads(out)["draft"] is None


def test_usage_errors_are_one_line_and_point_to_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _exit_code(capsys, "run", TASK, "--max-iterations", "many")
    assert code == 2
    assert err.splitlines() == [
        "self-refine run: error: argument --max-iterations: invalid int value: 'many'",
        "see: self-refine run --help",
    ]


@pytest.mark.parametrize("value", ["0", "-5", "1e-320"])
def test_timeout_out_of_range_gets_one_message(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "run", TASK, "--timeout", value, "--db", str(tmp_path / "c"))
    assert code == 2
    assert "--timeout must be at least 0.001 seconds (a millisecond; a model request takes " in err
    assert err.endswith(f"longer), got {value}\n")


def test_model_error_ending_in_a_period_is_not_doubled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "self_refine.models.offline.OfflineModel._generate",
        lambda *a, **k: (_ for _ in ()).throw(ModelCallError("Connection error.")),
    )
    code, _, err = cli(capsys, "run", TASK, "--db", str(tmp_path / "c.sqlite"))
    assert code == 1
    assert "Connection error. Progress is saved" in err and ".." not in err


def test_ctrl_c_note_carries_the_program_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("self_refine.models.offline.OfflineModel._generate", interrupt)
    code, _, err = cli(capsys, "run", TASK, "--thread-id", "t", "--db", str(tmp_path / "c"))
    assert code == 130
    assert err.strip().splitlines()[-1].startswith("self-refine: interrupted; continue with:")


def _items(tmp_path: Path) -> Path:
    items = tmp_path / "items.jsonl"
    items.write_text(
        '{"id": "a", "task": "Write a sentence using the words: dog, park."}\n', encoding="utf-8"
    )
    return items


def test_report_on_batch_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items(tmp_path)
    code, out, err = cli(capsys, "report", str(items))
    assert code == 2
    assert "looks like batch input, not its results" in err and out == ""


@pytest.mark.parametrize("where", ["folder", "under_a_file"])
def test_unwritable_summary_is_refused_before_any_item_runs(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items(tmp_path)
    (tmp_path / "plain").write_text("", encoding="utf-8")
    summary = tmp_path if where == "folder" else tmp_path / "plain" / "summary.json"
    output = tmp_path / "out.jsonl"
    argv = ["batch", str(items), "-o", str(output), "--summary", str(summary)]
    code, _, err = cli(capsys, *argv, "--model", "offline", "--db", str(tmp_path / "c.db"))
    assert code == 2
    assert f"--summary {str(summary)!r}" in err
    assert not output.exists(), "no item may run before the summary path is known to work"


def test_a_finished_batch_says_where_its_summary_and_plot_are_and_report_draws_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    items = _items(tmp_path)
    output, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    argv = ["batch", str(items), "-o", str(output), "--summary", str(summary)]
    code, _, err = cli(capsys, *argv, "--model", "offline", "--db", str(tmp_path / "c.db"))
    assert code == 0, err
    assert f"summary written to {summary}" in err
    assert f"summary and plot: self-refine report {output}" in err

    code, _, err = cli(capsys, "report", str(output))
    assert code == 0, err
    plot = tmp_path / "out.png"
    assert f"plot written to {plot}" in err
    assert plot.read_bytes().startswith(b"\x89PNG")
    plot.unlink()
    code, _, err = cli(capsys, "report", str(output), "--no-plot")
    assert code == 0 and not plot.exists() and "plot written" not in err


def test_output_in_a_missing_folder_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "new" / "folder" / "out.jsonl"
    argv = ["batch", str(_items(tmp_path)), "-o", str(output), "--model", "offline"]
    code, _, err = cli(capsys, *argv, "--db", str(tmp_path / "c.db"))
    assert code == 0, err
    assert [json.loads(line)["id"] for line in output.read_text().splitlines()] == ["a"]


def test_output_that_cannot_be_written_is_refused_before_any_item_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain").write_text("", encoding="utf-8")
    output = tmp_path / "plain" / "out.jsonl"  # a folder that is a file: unwritable even as root
    db = tmp_path / "c.db"
    argv = ["batch", str(_items(tmp_path)), "-o", str(output), "--model", "offline"]
    code, out, err = cli(capsys, *argv, "--db", str(db))
    assert code == 2
    assert err.startswith("self-refine: error: ") and "-o path" in err and out == ""
    assert not db.exists(), "no item may run before the output path is known to work"


def test_plot_without_matplotlib_says_how_to_install_it_from_a_clone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "out.jsonl"
    argv = ["batch", str(_items(tmp_path)), "-o", str(output), "--model", "offline"]
    assert cli(capsys, *argv, "--db", str(tmp_path / "c.db"))[0] == 0
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = cli(capsys, "report", str(output), "--plot", str(tmp_path / "p.png"))
    assert code == 2
    assert '--plot needs matplotlib: pip install -e ".[plot]" in a clone of the project' in err
