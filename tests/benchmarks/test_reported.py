"""A reported run goes through one command: it refuses a tree with uncommitted changes and
the tuning part, and keeps a ledger of what ran, at which commit and why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.quality.reported import main
from tests.fakes import FakeChatModel


def _checkout(path: Path) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=path,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    git("init", "-q")
    (path / "kept.txt").write_text("what ran\n")
    git("add", "kept.txt")
    git("commit", "-qm", "first")
    return git("rev-parse", "HEAD")


def _options(tmp_path: Path) -> list[str]:
    out = tmp_path / "results"
    out.mkdir(exist_ok=True)
    return ["--n", "1", "--sets", "constrained", "--strategies", "sample", "--budgets", "1,2"] + [
        "--no-cache",
        "--resamples",
        "100",
        "--out",
        str(out),
    ]


def test_a_reported_run_is_refused_on_a_tree_with_uncommitted_changes(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    _checkout(checkout)
    (checkout / "kept.txt").write_text("changed\n")
    ledger = tmp_path / "ledger.jsonl"
    model = FakeChatModel(script={"*": ["The train left."]})
    argv = ["--why", "the figure for the README", "--ledger", str(ledger), "--"]
    with pytest.raises(SystemExit, match="uncommitted changes"):
        main([*argv, *_options(tmp_path)], model, cwd=checkout)
    assert not ledger.exists() and not model.requests


def test_a_reported_run_is_on_the_ledger_with_its_commit_and_why(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    commit = _checkout(checkout)
    ledger = tmp_path / "ledger.jsonl"
    model = FakeChatModel(script={"*": ["The train left."]})
    argv = ["--why", "the figure for the README", "--ledger", str(ledger), "--"]
    main([*argv, *_options(tmp_path)], model, cwd=checkout)
    started, finished = map(json.loads, ledger.read_text().splitlines())
    assert started["event"] == "started" and finished["event"] == "finished"
    assert started["commit"] == finished["commit"] == commit
    assert finished["why"] == "the figure for the README"
    assert "--sets constrained" in finished["command"]
    page = next((tmp_path / "results").glob("budget-*.json"))
    document = json.loads(page.read_text())
    assert document["commit"] == commit and document["ledger"]["file"] == "ledger.jsonl"
    assert page.name in finished["files"]
    main([*argv, *_options(tmp_path), "--name", "again"], model, cwd=checkout)  # adds two lines
    assert ledger.read_text().startswith(json.dumps(started, sort_keys=True))
    assert len(ledger.read_text().splitlines()) == 4


def test_the_tuning_part_and_a_run_without_a_reason_are_refused(tmp_path: Path) -> None:
    model = FakeChatModel(script={"*": ["The train left."]})
    with pytest.raises(SystemExit, match="--part tune"):
        main(["--why", "x", "--", *_options(tmp_path), "--part", "tune"], model)
    with pytest.raises(SystemExit):
        main(["--", *_options(tmp_path)], model)
    with pytest.raises(SystemExit, match="--why must say"):
        main(["--why", " ", "--", *_options(tmp_path)], model)
    assert not model.requests


async def test_a_run_outside_the_ledger_says_so_on_its_page(tmp_path: Path) -> None:
    from benchmarks.quality.spend import arguments, run

    model = FakeChatModel(script={"*": ["The train left."]})
    document, _, paths = await run(arguments(_options(tmp_path)), model)
    assert document["ledger"] is None and len(document["commit"].split()[0]) == 40
    assert "**not on the ledger**" in paths["md"].read_text()


def test_a_run_from_a_copy_with_no_git_names_its_commit_or_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.quality import provenance
    from benchmarks.run import _git_commit

    def no_git(*args: str, cwd: Path = tmp_path) -> str:
        raise SystemExit("git rev-parse HEAD failed (not a git repository)")

    monkeypatch.setattr(provenance, "_git", no_git)
    monkeypatch.delenv(provenance.GIVEN, raising=False)
    with pytest.raises(SystemExit, match="set BENCH_COMMIT to the commit the copy holds"):
        provenance.recorded_commit()
    monkeypatch.setenv(provenance.GIVEN, "unknown")
    with pytest.raises(SystemExit, match="is no commit id"):
        provenance.recorded_commit()
    monkeypatch.setenv(provenance.GIVEN, "deb6f21")
    assert provenance.recorded_commit() == (
        "deb6f21 (given by BENCH_COMMIT: the run's tree is no git checkout)"
    )
    failed = subprocess.CompletedProcess(["git"], 128, stdout="", stderr="not a git repository")
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: failed)
    assert _git_commit().startswith("deb6f21 (given")  # the performance tables too


def test_every_results_file_names_its_commit() -> None:
    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    unnamed = [
        path.relative_to(results)
        for path in results.rglob("*")
        if path.suffix in (".json", ".md")
        and ('"commit": "unknown"' in (text := path.read_text()) or "commit unknown" in text)
    ]
    assert unnamed == []
