"""What `batch` and `report` write: pages of image tasks, standard output, files left alone.

A batch of tasks with images has its own output read back by `report` and
`batch --html`; `-o -` with standard output closed and `--summary -` say what they do;
a summary, a page or a plot is written over only when this program wrote it; a
batch refused before any work leaves no output file behind. Run as a user runs
them: the `self-refine` program in a child process, a model server on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.images import IMAGE_TASK_TEXT, image_task, png_base64
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration


def _image_items(folder: Path) -> None:
    lines = [
        {"id": "pic", "task": image_task(), "reference": {"answer": "red dot"}},
        {"id": "text", "task": "What is 6 * 7?", "reference": {"answer": "42"}},
    ]
    (folder / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_batch_of_image_tasks_gets_its_page_and_report(
    tmp_path: Path, server: OpenAIServer
) -> None:
    _image_items(tmp_path)
    flags = ["--model", "test-model", "--base-url", server.base_url]
    done = run_cli("batch", "in.jsonl", "-o", "out.jsonl", "--html", "page.html", *flags,
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "page.html").read_text()
    assert IMAGE_TASK_TEXT in page and png_base64() in page
    report = run_cli("report", "out.jsonl", "--html", "again.html", "--no-plot", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "items: 2" in report.stdout
    assert png_base64() in (tmp_path / "again.html").read_text()


def test_a_batch_refused_before_any_work_leaves_no_output_file(tmp_path: Path) -> None:
    _image_items(tmp_path)
    done = run_cli("batch", "in.jsonl", "-o", "out.jsonl", "--model", "offline", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "reads text only" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def _text_items(folder: Path) -> None:
    (folder / "in.jsonl").write_text(
        json.dumps({"id": "a", "task": "What is 6 * 7?", "reference": {"answer": "42"}}) + "\n"
    )


def test_dash_o_with_standard_output_closed_says_so(tmp_path: Path) -> None:
    _text_items(tmp_path)
    closed = ["sh", "-c", 'exec "$@" >&-', "sh"]
    done = run_cli("batch", "in.jsonl", "-o", "-", "--model", "offline", cwd=tmp_path,
                   prefix=closed)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "-o - writes to standard output, which is closed: give -o a file path" in done.stderr
    assert "NoneType" not in done.stderr and done.stderr.count("\n") == 1


def test_summary_dash_prints_the_summary_as_json(tmp_path: Path) -> None:
    _text_items(tmp_path)
    args = ["batch", "in.jsonl", "-o", "out.jsonl", "--model", "offline", "--summary", "-"]
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"] == 1
    assert "items: 1" in done.stderr  # the text summary moves to standard error
    assert not (tmp_path / "-").exists()
    both = run_cli("batch", "in.jsonl", "-o", "-", "--model", "offline", "--summary", "-",
                   cwd=tmp_path)  # fmt: skip
    assert both.returncode == 2 and "would both be on standard output" in both.stderr


@pytest.mark.parametrize(
    ("flag", "name", "content"),
    [
        ("--summary", "summary.json", '{"my": "notes"}\n'),
        ("--html", "page.html", "<html><body>my own page</body></html>\n"),
        ("--summary", "notes.txt", "shopping list\n"),
    ],
)
def test_a_file_this_program_did_not_write_is_never_overwritten(
    tmp_path: Path, flag: str, name: str, content: str
) -> None:
    _text_items(tmp_path)
    (tmp_path / name).write_text(content)
    args = ["batch", "in.jsonl", "-o", "out.jsonl", "--model", "offline", flag, name]
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{name!r}" in done.stderr and "not written by self-refine" in done.stderr
    assert (tmp_path / name).read_text() == content
    assert not (tmp_path / "out.jsonl").exists()


def test_report_keeps_a_plot_it_did_not_draw(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _text_items(tmp_path)
    assert run_cli("batch", "in.jsonl", "-o", "out.jsonl", "--model", "offline",
                   cwd=tmp_path).returncode == 0  # fmt: skip
    photo = b"\x89PNG\r\n\x1a\nsomeone's holiday photo"
    (tmp_path / "out.png").write_bytes(photo)
    done = run_cli("report", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "'out.png'" in done.stderr, done.stderr
    assert (tmp_path / "out.png").read_bytes() == photo
    (tmp_path / "out.png").unlink()
    assert run_cli("report", "out.jsonl", cwd=tmp_path).returncode == 0
    drawn = (tmp_path / "out.png").read_bytes()
    assert drawn.startswith(b"\x89PNG") and drawn != photo


def test_outputs_this_program_wrote_are_written_again(tmp_path: Path) -> None:
    _text_items(tmp_path)
    args = ["batch", "in.jsonl", "-o", "out.jsonl", "--model", "offline"]
    extra = ["--summary", "s.json", "--html", "p.html"]
    assert run_cli(*args, *extra, cwd=tmp_path).returncode == 0
    again = run_cli(*args, *extra, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "s.json").read_text())["items"] == 1
    report = run_cli("report", "out.jsonl", "--html", "p.html", "--no-plot", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
