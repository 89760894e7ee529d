"""What the report pages show, computed from fixed batch output files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from self_refine.batch.metrics import summarize
from self_refine.batch.report import load_records
from self_refine.pages.batch import batch_view, outcome
from self_refine.pages.diff import word_diff
from self_refine.pages.render import render_page
from self_refine.pages.thread import thread_view
from self_refine.run import refine
from tests.fakes import FakeChatModel

FIXTURES = Path(__file__).with_name("fixtures")
OFFLINE = FIXTURES / "offline_batch.jsonl"  # `self-refine batch --model offline` output
REJECTED = FIXTURES / "rejected.jsonl"  # one hand-made record: rejected replies, verifier items


@pytest.fixture
def records() -> list[dict]:
    return load_records([OFFLINE, REJECTED])


def test_accuracy_chart_plots_the_summary_curve_in_percent() -> None:
    records = load_records([OFFLINE])
    page = batch_view(records, title="t")
    curve = summarize(records)["accuracy_by_iteration"]
    chart = page["charts"][0]
    assert chart.title.startswith("accuracy")
    assert chart.values == [100 * v for v in curve]
    assert len(chart.points) == len(curve) == 3
    heights = [y for _, y in chart.points]
    assert heights[0] == heights[1] > heights[2]  # SVG y grows downwards: rose at step 2


def test_bar_charts_count_transitions_and_stop_reasons(records: list[dict]) -> None:
    page = batch_view(records, title="t")
    transitions = {label: count for label, count, _ in page["charts"][1].bars}
    reasons = {label: count for label, count, _ in page["charts"][2].bars}
    assert transitions == {
        "incorrect->correct": 1,
        "incorrect->incorrect": 6,
        "correct->correct": 0,
        "correct->incorrect": 1,
    }
    assert reasons == {"critic_done": 8, "max_iterations": 1}


def test_items_are_sorted_by_outcome_for_the_filters(records: list[dict]) -> None:
    page = batch_view(records, title="t")
    by_id = {item["id"]: item["outcome"] for item in page["items"]}
    assert by_id["w0"] == "improved"
    assert by_id["r1"] == "broken"
    assert by_id["w1"] == "unjudged"
    assert {by_id[f"q{n}"] for n in range(6)} == {"still wrong"}
    assert page["outcomes"] == {"improved": 1, "broken": 1, "still wrong": 6, "unjudged": 1}
    assert outcome({"correct_first": True, "correct_final": True}) == "still right"


def test_thread_marks_rejected_replies_parse_fallback_and_fate_of_items() -> None:
    (record,) = load_records([REJECTED])
    view = thread_view(record, title="r1")
    first, second = view["attempts"]
    assert first["parse_fallback"] and not second["parse_fallback"]
    assert [r["reason"] for r in second["rejected"]] == ["echo", "refusal"]
    assert first["rejected"] == []
    fates = {item["source"]: item["fate"] for item in first["feedback"]}
    assert fates == {"answer": "not fixed", "llm": "unknown"}
    assert {item["fate"] for item in second["feedback"]} == {"no next draft"}
    assert view["picked"] == 1 and "highest score" in (view["why"] or "")


def test_a_verifier_item_is_fixed_when_the_next_draft_passes() -> None:
    attempts = [
        {
            "iteration": 0,
            "draft": "4",
            "critique": {"feedback": ["expected 5"], "source": "answer", "verified": False},
        },
        {
            "iteration": 1,
            "draft": "5",
            "critique": {"feedback": [], "source": "answer", "verified": True},
        },
    ]
    view = thread_view({"attempts": attempts, "answer": "5"}, title="t")
    assert view["attempts"][0]["feedback"][0]["fate"] == "fixed"
    assert view["score_chart"] is None  # no scores: no chart rather than a made-up line


def test_items_of_a_critique_no_verifier_judged_have_unknown_fate() -> None:
    (record,) = [r for r in load_records([OFFLINE]) if r["id"] == "w0"]
    view = thread_view(record, title="w0")
    assert {item["fate"] for item in view["attempts"][0]["feedback"]} == {"unknown"}


def test_word_diff_marks_inserted_and_deleted_words() -> None:
    segments = word_diff("the answer is 4.", "the answer is clearly 5.")
    assert ("ins", "clearly 5.") in segments and ("del", "4.") in segments
    assert "".join(t for k, t in segments if k != "del") == "the answer is clearly 5."


def test_page_escapes_drafts_and_keeps_rejected_section_optional(records: list[dict]) -> None:
    hostile = {"attempts": [{"iteration": 0, "draft": "<script>x()</script>", "critique": {}}]}
    html = render_page("thread.html.j2", thread_view(hostile, title="t"))
    assert "<script>x()" not in html and "&lt;script&gt;x()" in html
    assert 'class="rejected"' not in html
    batch_html = render_page("batch.html.j2", batch_view(records, title="t"))
    assert batch_html.count('class="rejected"') == 2
    assert "http://" not in batch_html and "https://" not in batch_html


def test_thread_score_chart_plots_each_attempts_score() -> None:
    (record,) = load_records([REJECTED])
    chart = thread_view(record, title="r1")["score_chart"]
    assert chart is not None and chart.values == [0.0, 0.4]
    assert chart.labels == ["0.00", "0.40"]
    (x0, y0), (x1, y1) = chart.points
    assert x0 < x1 and y0 > y1  # to the right, and higher (SVG y grows downwards)


def test_a_page_of_a_thousand_items_stays_a_few_times_its_jsonl(records: list[dict]) -> None:
    many = [{**records[n % len(records)], "id": f"item-{n}"} for n in range(1000)]
    html = render_page("batch.html.j2", batch_view(many, title="t"))
    raw = sum(len(json.dumps(record, ensure_ascii=False)) + 1 for record in many)
    assert html.count('<details class="item"') == 1000
    # 2.6x when measured: markup, a chart and a diff per item around small drafts.
    assert len(html.encode()) < 3 * raw, "the page grew out of proportion to its data"


def _long_draft(sentences: int) -> str:
    return " ".join(
        f"Sentence {n} says something about item {n * 7 % 101}." for n in range(sentences)
    )


def _edited(draft: str) -> str:
    return " ".join(w.upper() if n % 19 == 0 else w for n, w in enumerate(draft.split(" ")))


def test_long_drafts_are_diffed_by_sentence_and_the_page_says_so() -> None:
    """A whole-draft word diff is quadratic: 40 KB drafts took seconds; see benchmarks t7."""
    first = _long_draft(800)
    attempts = [
        {"iteration": 0, "draft": first, "critique": {"score": 0.5, "feedback": ["More."]}},
        {"iteration": 1, "draft": _edited(first), "critique": {"score": 0.6, "feedback": []}},
    ]
    view = thread_view({"task": "t", "attempts": attempts}, title="t")
    segments = view["attempts"][1]["diff"]
    assert "".join(t for k, t in segments if k != "del") == attempts[1]["draft"]
    assert "".join(t for k, t in segments if k != "ins") == first
    page = render_page("thread.html.j2", view)
    assert "compared sentence by sentence" in page


@pytest.mark.parametrize("edit", ["scattered", "one passage"])
def test_a_megabyte_draft_is_compared_whole_and_gives_both_drafts_back(edit: str) -> None:
    from self_refine.pages.diff import compare_drafts

    before = _long_draft(20_000)
    middle = len(before) // 2
    after = _edited(before) if edit == "scattered" else before[:middle] + "NEW " + before[middle:]
    compared = compare_drafts(before, after)
    assert "".join(t for k, t in compared.segments if k != "del") == after
    assert "".join(t for k, t in compared.segments if k != "ins") == before
    if edit == "one passage":
        assert compared.coarse is None and ("ins", "NEW ") in compared.segments
    else:
        assert compared.coarse is not None


CANDIDATES = FIXTURES / "candidates.jsonl"  # hand-made: steps of candidates, kept and why


def test_every_candidate_of_a_step_is_shown_the_kept_one_first_with_why() -> None:
    first, second = load_records([CANDIDATES])
    (step,) = thread_view(first, title="c1")["attempts"]
    assert [c["index"] for c in step["candidates"]] == [2, 0, 1, 3]
    assert [c["kept"] for c in step["candidates"]] == [True, False, False, False]
    assert step["kept_because"] == "the verifiers passed it first; 2 others were stopped"
    kept, judged, stopped, _ = step["candidates"]
    assert kept["verified"] is True and kept["draft"] == first["answer"]
    assert judged["score"] == 0.75 and judged["draft"] == "Train the pencil on the river."
    assert [i["source"] for i in judged["feedback"]] == ["concepts", "llm"]
    assert stopped["rejected"]["reason"] == "stopped"
    (step,) = thread_view(second, title="c2")["attempts"]
    assert step["candidates"][2]["rejected"]["reason"] == "echo"


def test_one_reply_steps_have_no_candidates_to_show(records: list[dict]) -> None:
    page = thread_view(records[0], title="t")
    assert all(a["candidates"] is None for a in page["attempts"])
    assert {i["candidates"] for i in batch_view(records, title="t")["items"]} == {1}
    items = batch_view(load_records([CANDIDATES]), title="t")["items"]
    assert [i["candidates"] for i in items] == [4, 3]


def test_ids_with_control_and_direction_characters_are_shown_as_escapes() -> None:
    ids = ["a\x00b", "evil\u202egnp.exe", "back\\slash", "plain id"]
    records = [{"id": i, "stop_reason": "verified", "attempts": []} for i in ids]
    html = render_page("batch.html.j2", batch_view(records, title="t"))
    assert "\x00" not in html and "\u202e" not in html
    data_ids = re.findall(r'data-id="([^"]*)"', html)
    assert sorted(data_ids) == sorted(
        ["a\\x00b", "evil\\u202egnp.exe", "back\\\\slash", "plain id"]
    )
    assert "<b>evil\\u202egnp.exe</b>" in html, "the id is shown as it is kept, not reordered"


def test_direction_characters_in_drafts_tasks_and_feedback_are_shown_as_escapes() -> None:
    bidi = "The answer is \u202e24\u202c."
    attempt = {"iteration": 0, "draft": bidi, "critique": {"score": 1.0, "feedback": [bidi]}}
    record = {"id": "b", "task": bidi, "answer": bidi, "stop_reason": "verified"}
    html = render_page("batch.html.j2", batch_view([{**record, "attempts": [attempt]}], title="t"))
    assert "\u202e" not in html and "\u202c" not in html
    assert html.count("The answer is \\u202e24\\u202c.") >= 3  # task, draft, feedback


def test_the_page_shows_the_answer_text_first_and_a_line_of_each_tree_node() -> None:
    """A reader sees the answer at the top, and each node of the tree says what it states."""
    wrong = "Counting gives 102. The answer is 102."
    right = "Counting gives 346. The answer is 346."
    model = FakeChatModel(script={"generator": [wrong, right, right]})
    result = refine(
        "What is 173 * 2?",
        model=model,
        profile="math",
        strategy="sample",
        candidates=3,
        critics=["none"],
        select="vote",
        max_iterations=0,
    )
    assert result["answer"] == right
    html = render_page("thread.html.j2", thread_view(dict(result), title="t"))
    answer_at = html.index(f'<pre class="answer">{right}</pre>')
    assert answer_at < html.index('<pre class="task">') < html.index('class="tree"')
    nodes = re.findall(r'<li class="tree-node[^"]*" data-node="(\d)".*?</li>', html, re.S)
    assert nodes == ["0", "1", "2"]
    assert f'· states 102</span><br><span class="node-line">{wrong}</span>' in html
    assert html.count(f'· states 346</span><br><span class="node-line">{right}</span>') == 2
