"""Re-judging a committed quality run: the answers the checker now fails count wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.quality.rejudge import rejudge_quality_run

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
STEM = "quality-local-qwen2.5-coder-0.5b-instruct-q4_k_m-2026-11-25"
FRAGMENTS = (
    "Jacket covers island, scarf covers fountain, island perfect for coffee shop, "
    "candle just as nice as fountain."
)


def _as_judged_before(path: Path) -> None:
    """Mark the fragments answer right again, as the checker before the rule had it."""
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["condition"] == "candidates" and record["answer"] == FRAGMENTS:
            record["correct_final"] = True
            for attempt in record["attempts"]:
                if attempt["draft"] == FRAGMENTS:
                    attempt["correct"] = True
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def test_an_answer_the_checker_now_fails_falls_and_the_figures_follow(tmp_path: Path) -> None:
    for suffix in (".json", ".md", ".records.jsonl"):
        shutil.copy(RESULTS / f"{STEM}{suffix}", tmp_path / f"{STEM}{suffix}")
    _as_judged_before(tmp_path / f"{STEM}.records.jsonl")

    fell = rejudge_quality_run(tmp_path / f"{STEM}.json", ["constrained"])

    # -007 by the fragments rule, -001 ("Train your pencil on the river, using the
    # compass.") and bestofn's -005 (a sentence of nothing but a clause per word: "Rabbits
    # swim through the lush green beach, the river stretches ..., the feathered drum
    # gently dances, and the window is ...") by the sentence checker, which the committed
    # figures predate
    assert fell == [
        "constrained/candidates/constrained-001",
        "constrained/candidates/constrained-007",
        "constrained/bestofn/constrained-005",
    ]
    again = json.loads((tmp_path / f"{STEM}.json").read_text())["results"]["constrained"]
    committed = json.loads((RESULTS / f"{STEM}.json").read_text())["results"]["constrained"]
    assert committed["candidates"]["accuracy_at"][-1] == 0.2
    assert again["candidates"]["accuracy_at"][-1] == 0.1
    assert again["first"]["accuracy_at"] == committed["first"]["accuracy_at"]
    page = (tmp_path / f"{STEM}.md").read_text()
    assert "**re-judged**" in page and "constrained/candidates/constrained-007" in page
