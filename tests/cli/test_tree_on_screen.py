"""A run that samples or searches, as a user sees it: each draft's node, parent and kind,
the values a step's pick compared, the steps by kind and which draft is the answer."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from self_refine.cli.main import main

TASK = "Write a sentence using dog, park and zebra"
VERIFIED_BY = ["--reference", '{"concepts": ["dog", "park", "zebra"]}', "--critics", "concepts"]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _search(capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any]]:
    """A search run with the offline model: its first refinement verifies better than any
    fresh draft, so the run both refines and samples."""
    run = _cli(
        capsys,
        *("run", TASK, *VERIFIED_BY, "--strategy", "search", "--candidates", "4"),
        *("--max-iterations", "3", "--thread-id", "tree"),
    )
    values = json.loads(_cli(capsys, "show", "tree", "--json"))
    return run, values


def _drafts(values: dict[str, Any]) -> list[tuple[int, dict[str, Any], bool]]:
    """(step, draft, kept) of every draft of the run."""
    return [
        (attempt["iteration"], draft, draft is attempt)
        for attempt in values["attempts"]
        for draft in [attempt, *attempt.get("candidates", [])]
    ]


def _kind(draft: dict[str, Any]) -> str:
    parent = draft["parent"]
    return "fresh draft" if parent is None else f"refinement of node {parent}"


@pytest.mark.usefixtures("workdir")
def test_show_gives_each_draft_its_node_parent_and_kind_and_the_values_compared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run, values = _search(capsys)
    drafts = _drafts(values)
    parents = [d["parent"] for _, d, _ in drafts]
    assert None in parents and any(p is not None for p in parents), "a fresh draft and a refinement"
    table = _cli(capsys, "show", "tree")
    for step, draft, kept in drafts:
        # One comparison row per reply: its candidate, node, kind and the values ranked.
        row = re.search(
            rf"^ +candidate {draft['index'] if not kept else draft['candidate']} +"
            rf"node {draft['node']} +{_kind(draft)} +(.*)$",
            table,
            flags=re.M,
        )
        assert row, f"no row for node {draft['node']}"
        if draft.get("rejected"):
            assert row.group(1) == f"rejected ({draft['rejected']['reason']})"
        else:
            checked = draft["checked"]
            score = draft["critique"]["score"]
            assert row.group(1).startswith(f"verified no, lowest {checked:.2f}, critic {score:.2f}")
        assert row.group(1).endswith("  kept") == kept
        if kept:
            assert f"node {draft['node']}, a {_kind(draft)}; step {step} wrote " in table
    assert table.splitlines()[3].split()[0] == "step"
    # The final lines: the steps by kind, and which draft is the answer.
    fresh = sum(1 for p in parents if p is None)
    steps = f"{len(values['attempts'])} steps ({len(parents) - fresh} refinement"
    answer = next(d for _, d, _ in drafts if d["node"] == values["best"]["node"])
    assert answer["draft"] == values["answer"] and answer["parent"] is not None
    said = f"candidate {answer.get('candidate', answer.get('index'))}: node {answer['node']}, a "
    assert f"stop reason: max_iterations after {steps}" in table
    assert f"answer (step {values['best']['iteration']}, {said}{_kind(answer)}):" in table
    assert f"Stopped: max_iterations after {steps}" in run
    assert f"Answer (step {values['best']['iteration']}, {said}{_kind(answer)}):" in run
    assert "refine step" not in run + table


@pytest.mark.usefixtures("workdir")
def test_each_candidate_line_of_a_search_run_says_fresh_or_refined_from_which_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run, values = _search(capsys)
    lines = re.findall(r"^\[candidate (\d+)\] node (\d+), (fresh|refined from node \d+)", run, re.M)
    by_node = {d["node"]: d for _, d, _ in _drafts(values)}
    assert len(lines) == len(by_node)
    for index, node, made in lines:
        draft = by_node[int(node)]
        assert int(index) == draft.get("index", draft.get("candidate"))
        parent = draft["parent"]
        assert made == ("fresh" if parent is None else f"refined from node {parent}")
    assert re.search(r"^\[pick\] step 1 \(1 refinement, 3 fresh drafts\)", run, re.M)


@pytest.mark.usefixtures("workdir")
def test_a_sample_run_says_steps_of_fresh_drafts_not_refine_steps(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    run = _cli(
        capsys,
        *("run", TASK, *VERIFIED_BY, "--strategy", "sample", "--candidates", "3"),
        *("--max-iterations", "1", "--thread-id", "sample"),
    )
    assert "refine step" not in run
    assert "Stopped: max_iterations after 2 steps (6 fresh drafts); score 0.33" in run
    assert re.search(r"^Answer \(step 0, candidate 0: node 0, a fresh draft\):$", run, re.M)
    assert re.search(r"^\[pick\] step 1 \(3 fresh drafts\)  candidate 0 of 3 ", run, re.M)
    assert "    kept node 3, a fresh draft: it ties with candidate 1" in run
    table = _cli(capsys, "show", "sample")
    assert "refine step" not in table
    assert "stop reason: max_iterations after 2 steps (6 fresh drafts)\n" in table
    assert "node 3, a fresh draft; step 1 wrote 3 fresh drafts" in table


@pytest.mark.usefixtures("workdir")
def test_the_thread_page_of_a_search_run_draws_the_tree_and_diffs_a_refinement_with_its_parent(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    _, values = _search(capsys)
    code = main(["show", "tree", "--html", "tree.html"])
    capsys.readouterr()
    assert code == 0
    page = (workdir / "tree.html").read_text()
    drafts = _drafts(values)
    by_node = {d["node"]: d for _, d, _ in drafts}
    # The tree: one entry per draft, under the draft it refined.
    shown = dict(
        re.findall(r'<li class="tree-node[^"]*" data-node="(\d+)" data-parent="(\d*)"', page)
    )
    assert {int(n): (int(p) if p else None) for n, p in shown.items()} == {
        n: d["parent"] for n, d in by_node.items()
    }
    # Each step: headed by what it wrote, its kept draft diffed against its parent or new.
    steps = re.split(r'<li class="attempt', page)[1:]
    assert len(steps) == len(values["attempts"])
    for step, attempt in zip(steps, values["attempts"], strict=True):
        head = re.search(r'data-node="(\d+)" data-parent="(\d*)">\n<h3>(.*?)\n<span', step)
        assert head, step[:200]
        assert int(head.group(1)) == attempt["node"]
        assert (int(head.group(2)) if head.group(2) else None) == attempt["parent"]
        assert head.group(3).startswith(f"step {attempt['iteration']}: ")
        assert "refine step" not in head.group(3)
        kept = step.split('<details class="candidates"')[0]
        if attempt["parent"] is None:
            assert "shown as new</p>" in kept and 'class="draft diff"' not in kept
        else:
            parent = by_node[attempt["parent"]]["draft"]
            assert f"changes from node {attempt['parent']}</p>" in kept
            assert 'class="draft diff" title="changes from node' in kept
            diff = re.search(r'class="draft diff"[^>]*>(.*?)</div>', kept, re.S)
            assert diff and "<ins>" in diff.group(1)
            # The diff reads as the parent without its insertions, as the draft without
            # its deletions.
            before = re.sub(r"<ins>.*?</ins>|</?del>", "", diff.group(1), flags=re.S)
            after = re.sub(r"<del>.*?</del>|</?ins>", "", diff.group(1), flags=re.S)
            assert html.unescape(before) == parent
            assert html.unescape(after) == attempt["draft"]
    assert "refine step" not in page
    assert f"max_iterations after {len(values['attempts'])} steps (" in page


def test_a_sample_batch_summary_and_page_count_steps_of_fresh_drafts_not_refine_steps(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    items = [
        {"id": "a", "task": TASK, "reference": {"concepts": ["dog", "park", "zebra"]}},
        {
            "id": "b",
            "task": "Write about a cat in a hat",
            "reference": {"concepts": ["cat", "hat"]},
        },
    ]
    (workdir / "in.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    args = ["--strategy", "sample", "--candidates", "3", "--critics", "concepts"]
    code = main(["batch", "in.jsonl", "-o", "out.jsonl", *args, "--max-iterations", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    said = out + err
    # Each item: 3 steps of 3 fresh drafts (the offline model never satisfies the verifier).
    assert "mean steps: 3.00 (per item: 9.00 fresh drafts, 0.00 refinements)" in said
    assert "accuracy after step k: 0: 0.0%  1: 0.0%  2: 0.0%" in said
    assert "refine step" not in said
    assert main(["report", "out.jsonl", "--html", "report.html"]) == 0
    capsys.readouterr()
    page = (workdir / "report.html").read_text()
    assert (
        "<div><b>mean steps</b>3.00 (per item: 9.00 fresh drafts, 0.00 refinements)</div>" in page
    )
    assert "max_iterations · 3 steps (9 fresh drafts) · score" in page
    assert "accuracy (%) after step k" in page and "refine step" not in page
    # Every draft of item a is the same text, scored the same: the earliest is the answer.
    assert page.count("<b>answer</b>step 0, candidate 0: node 0, a fresh draft; the best") == 2


def test_a_pick_the_critic_s_scores_cannot_explain_shows_the_verifiers_lowest_scores() -> None:
    """Four replies the critic scored 0.00; the verifiers' lowest scores decided."""
    from self_refine.cli.console import attempts_table

    def reply(index: int, checked: float) -> dict[str, Any]:
        critique = {"score": 0.0, "feedback": ["a test fails"], "verified": False}
        return {"index": index, "node": 4 + index, "parent": None if index else 1,
                "draft": f"draft {index}", "critique": critique, "usage": {},
                "verified": False, "checked": checked}  # fmt: skip

    kept = reply(1, 0.5)
    attempt = {
        **{k: kept[k] for k in ("draft", "critique", "usage", "node", "parent", "checked")},
        "iteration": 1,
        "candidate": 1,
        "kept_because": "it ties with candidate 3; ties go to the lower index",
        "candidates": [reply(0, 0.2), reply(2, 0.25), reply(3, 0.5)],
    }
    table = attempts_table([attempt])  # type: ignore[list-item]
    rows = re.findall(r"^ +candidate (\d) +node (\d) +(.+?) {2,}(verified.*)$", table, re.M)
    assert rows == [
        ("0", "4", "refinement of node 1", "verified no, lowest 0.20, critic 0.00"),
        ("1", "5", "fresh draft", "verified no, lowest 0.50, critic 0.00  kept"),
        ("2", "6", "fresh draft", "verified no, lowest 0.25, critic 0.00"),
        ("3", "7", "fresh draft", "verified no, lowest 0.50, critic 0.00"),
    ]


@pytest.mark.usefixtures("workdir")
def test_a_refine_run_with_candidates_shows_the_values_each_reply_was_ranked_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _cli(
        capsys,
        *("run", TASK, "--reference", '{"concepts": ["dog", "park", "zebra"]}'),
        *("--critics", "concepts,llm", "--candidates", "3", "--max-iterations", "1"),
        *("--thread-id", "rc"),
    )
    assert "Stopped: max_iterations after 1 refine step(s); score 0.50" in run
    assert "\nAnswer (refine step 1, candidate 0):\n" in run
    values = json.loads(_cli(capsys, "show", "rc", "--json"))
    table = _cli(capsys, "show", "rc")
    for attempt in values["attempts"]:
        for other in attempt["candidates"]:
            said = "yes" if other["verified"] else "no"
            values_ranked = (
                f"verified {said}, lowest {other['checked']:.2f}, "
                f"critic {other['critique']['score']:.2f}"
            )
            assert f"        candidate {other['index']}  {values_ranked}" in table
        # The kept reply's lowest verifier score is recorded on its attempt, as in a search.
        kept = f"verified no, lowest {attempt['checked']:.2f}, critic "
        assert f"candidate {attempt['candidate']}  {kept}" in table
        assert "not recorded" not in table
