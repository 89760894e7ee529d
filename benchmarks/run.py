"""Run every benchmark suite and write the results table: `python -m benchmarks.run`.

A suite is a module `benchmarks/t<N>_<name>.py` measuring target N of the
performance issue, with `run(quick: bool) -> list[Row]`. Each runs in its own
process (imports, caches and garbage of one never weigh on another), so adding
a suite file is all it takes to add its rows to the table.

A full run also profiles the scenarios (`profiles.py`, files in
`results/profiles/`), writes `benchmarks/results/latest.json` and `latest.md`
and puts the table into `benchmarks/README.md`; `--quick` and `--only` just
print. The peers run in `benchmarks/.venv-peers`, made on first use.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import Row, machine, markdown_table

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
TABLE_START, TABLE_END = "<!-- results:start -->", "<!-- results:end -->"
COMMAND = "make bench"


def suites() -> dict[str, int]:
    """Each suite module's name and the target it measures, in target order."""
    found = {}
    for path in HERE.glob("t*_*.py"):
        match = re.fullmatch(r"t(\d+)_\w+", path.stem)
        if match:
            found[path.stem] = int(match.group(1))
    return dict(sorted(found.items(), key=lambda item: (item[1], item[0])))


def _run_suite(name: str, target: int, quick: bool) -> tuple[list[Row], float]:
    """Run one suite in a child process; a failure becomes a row that says so."""
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        out = Path(folder) / "rows.json"
        command = [sys.executable, "-m", f"benchmarks.{name}", "--json", str(out)]
        start = time.perf_counter()
        done = subprocess.run(
            command + (["--quick"] if quick else []),
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            env=dict(os.environ, LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false"),
        )
        elapsed = time.perf_counter() - start
        if done.returncode == 0 and out.exists():
            return [Row.from_json(r) for r in json.loads(out.read_text())], elapsed
    lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
    print(done.stderr, file=sys.stderr)
    return [Row(target, f"suite {name}", "", note=f"failed: {lines[-1]}")], elapsed


def _git_commit() -> str:
    """The short commit checked out (with "(with uncommitted changes)" when the library or
    a benchmark differs from it); in a copy with no git, the one `BENCH_COMMIT` gives,
    else the run is refused (`provenance.given_commit`)."""
    from benchmarks.quality.provenance import given_commit

    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "self_refine", "benchmarks/*.py"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError as why:
        return given_commit(why)
    if not head:
        return given_commit()
    return f"{head}{' (with uncommitted changes)' if dirty else ''}"


def _machine_line(info: dict[str, Any]) -> str:
    versions = {**info["packages"], **info.get("peers", {})}
    packages = ", ".join(f"{name} {version}" for name, version in versions.items())
    return (
        f"{info['cpu']}, {info['cores']} cores, {info['system']}, Python {info['python']}; "
        f"{packages}; load (1-minute average) {info['load_before']} before the run, "
        f"{info['load_after']} after"
    )


def _profiles_text(profiles: dict[str, list[str]]) -> str:
    if not profiles:
        return ""
    lines = [
        "",
        "Where the time goes (self time, top frames; whole profiles in `results/profiles/`):",
        "",
    ]
    for name, top in profiles.items():
        lines.append(f"- `{name}`: " + "; ".join(f"`{frame}`" for frame in top[:4]))
    return "\n".join(lines) + "\n"


def _render(rows: list[Row], info: dict[str, Any]) -> str:
    return (
        f"{markdown_table(rows)}\n\n"
        f"Command: `{info['command']}` ({info['duration_s']:.0f} s), {info['date']}, "
        f"commit {info['commit']}.\n\nMachine: {_machine_line(info)}.\n"
        f"{_profiles_text(info.get('profiles') or {})}"
    )


def _write(rows: list[Row], info: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    document = {**info, "rows": [row.to_json() for row in sorted(rows, key=lambda r: r.target)]}
    (RESULTS / "latest.json").write_text(json.dumps(document, indent=2) + "\n")
    text = _render(rows, info)
    (RESULTS / "latest.md").write_text(f"# Benchmark results\n\n{text}")
    readme = README.read_text()
    if TABLE_START in readme and TABLE_END in readme:
        head, rest = readme.split(TABLE_START, 1)
        tail = rest.split(TABLE_END, 1)[1]
        README.write_text(f"{head}{TABLE_START}\n{text}{TABLE_END}{tail}")


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run the suites; write the results unless the run was partial or quick."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats; print only")
    parser.add_argument(
        "--only", help="comma-separated target numbers, e.g. 1,4; print only", default=""
    )
    given = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(given)
    wanted = {int(n) for n in args.only.split(",") if n.strip()}
    full = not args.quick and not wanted
    info: dict[str, Any] = {
        "command": COMMAND if full else "python -m benchmarks.run " + " ".join(given),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(),
        **machine(),
        "load_before": _load(),
    }
    start = time.perf_counter()
    rows: list[Row] = []
    for name, target in suites().items():
        if wanted and target not in wanted:
            continue
        suite_rows, elapsed = _run_suite(name, target, args.quick)
        print(f"{name}: {len(suite_rows)} rows in {elapsed:.0f} s", file=sys.stderr)
        rows += suite_rows
    if full:
        from benchmarks.peers import peer_versions
        from benchmarks.profiles import profile_all

        info["peers"] = peer_versions()
        print("profiling the scenarios", file=sys.stderr)
        info["profiles"] = profile_all()
    info["duration_s"] = time.perf_counter() - start
    info["load_after"] = _load()
    print(_render(rows, info))
    if full:
        _write(rows, info)
    failed = any(row.note.startswith("failed:") for row in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
