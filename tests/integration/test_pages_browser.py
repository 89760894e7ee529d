"""The HTML report pages in a real headless Chromium (Debian's), opened from disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
FIXTURES = Path(__file__).parent.parent / "pages" / "fixtures"
ARTIFACTS = Path(__file__).parent.parent / "artifacts"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

if not Path(CHROMIUM).exists():
    pytest.skip("needs Debian's chromium (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=ARGS, headless=True
        )
        try:
            yield context
        finally:
            context.close()


class Visit:
    """A page opened from disk, recording console errors and every request it makes."""

    def __init__(self, context: Any, path: Path, width: int = 1100) -> None:
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page = context.new_page()
        self.page.set_viewport_size({"width": width, "height": 900})
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        self.page.goto(path.as_uri())

    def _route(self, route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()


def _cli(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "self_refine.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "LANGSMITH_TRACING": "false"},
        check=True,
    )
    return done.stderr


def _screenshot(visit: Visit, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    visit.page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def test_batch_page_filters_expands_and_stays_offline(browser: Any, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "offline_batch.jsonl", tmp_path)
    shutil.copy(FIXTURES / "rejected.jsonl", tmp_path)
    said = _cli(
        "report", "offline_batch.jsonl", "rejected.jsonl", "--html", "report.html", cwd=tmp_path
    )
    assert "page written to report.html" in said
    visit = Visit(browser, tmp_path / "report.html")
    page = visit.page
    # Accuracy after 0, 1, 2 refine steps: three points on the line chart.
    assert page.locator("svg.line-chart").first.locator("circle.point").count() == 3
    assert page.locator("svg.bar-chart").count() == 2
    page.click("button.filter[data-outcome='broken']")
    visible = page.locator("details.item:visible")
    assert [visible.nth(i).get_attribute("data-id") for i in range(visible.count())] == ["r1"]
    assert page.locator("#shown").inner_text() == "1"
    page.click("button.filter[data-outcome='still wrong']")
    ids = page.eval_on_selector_all(
        "details.item:not([hidden])", "els => els.map(e => e.dataset.id)"
    )
    assert ids == [f"q{n}" for n in range(6)]
    page.click("button.filter[data-outcome='']")
    page.select_option("#stop", "max_iterations")
    assert page.locator("details.item:visible").count() == 1
    page.select_option("#stop", "")
    page.fill("#search", "haiku")
    assert page.locator("details.item:visible").get_attribute("data-id") == "w1"
    page.fill("#search", "")
    item = page.locator("details.item[data-id='r1']")
    assert not item.locator(".attempt").first.is_visible()
    item.locator("summary").click()
    assert item.locator(".attempt").count() == 2 and item.locator(".attempt").first.is_visible()
    assert item.locator(".rejected[data-reason='echo']").is_visible()
    assert item.locator("ins").first.inner_text() == "5."
    _screenshot(visit, "batch-page.png")
    assert visit.errors == [] and visit.outside == []


def test_thread_page_shows_diff_chart_and_step_times(browser: Any, tmp_path: Path) -> None:
    task = "Write one sentence about the sea using the words wave and salt."
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "self_refine.cli",
            "run",
            task,
            "--model",
            "offline",
            "--db",
            "t.db",
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "LANGSMITH_TRACING": "false"},
    )
    import json

    thread_id = json.loads(ran.stdout)["thread_id"]
    said = _cli("show", thread_id, "--db", "t.db", "--html", "thread.html", cwd=tmp_path)
    assert "page written to thread.html" in said
    visit = Visit(browser, tmp_path / "thread.html", width=420)  # a phone-sized screen
    page = visit.page
    attempts = page.locator(".attempt").count()
    assert page.locator("svg.line-chart circle.point").count() == attempts >= 2
    inserted = page.locator(".attempt").nth(attempts - 1).locator("ins").all_inner_texts()
    assert any("salt" in text for text in inserted)
    assert page.locator(".steps tbody tr").count() >= 3
    no_overflow = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert no_overflow
    _screenshot(visit, "thread-page-narrow.png")
    assert visit.errors == [] and visit.outside == []


def test_batch_page_shows_every_candidate_the_kept_one_and_why(
    browser: Any, tmp_path: Path
) -> None:
    shutil.copy(FIXTURES / "candidates.jsonl", tmp_path)
    _cli("report", "candidates.jsonl", "--html", "report.html", cwd=tmp_path)
    visit = Visit(browser, tmp_path / "report.html")
    page = visit.page
    item = page.locator("details.item[data-id='c1']")
    assert "4 candidates per step" in item.locator("> summary").inner_text()
    item.locator("> summary").click()
    table = item.locator("details.candidates")
    assert table.is_visible()
    assert "kept candidate 2: the verifiers passed it first; 2 others were stopped" in (
        table.locator("summary").inner_text()
    )
    rows = table.locator("tr.candidate")
    assert rows.count() == 4
    kept = table.locator("tr.candidate[data-kept='true']")
    assert kept.get_attribute("data-index") == "2" and "verified" in kept.inner_text()
    judged = table.locator("tr.candidate[data-index='0']")
    assert "Train the pencil on the river." in judged.inner_text()
    assert 'Use the word "compass".' in judged.inner_text() and "0.75" in judged.inner_text()
    assert table.locator("tr.candidate[data-state='stopped']").count() == 2
    other = page.locator("details.item[data-id='c2']")
    other.locator("> summary").click()
    echo = other.locator("tr.candidate[data-state='echo']")
    assert echo.is_visible() and "<task>" in echo.locator("pre").inner_text()
    _screenshot(visit, "batch-page-candidates.png")
    assert visit.errors == [] and visit.outside == []


def test_thread_page_of_a_run_with_candidates_shows_each_step_s_candidates(
    browser: Any, tmp_path: Path
) -> None:
    concepts = '{"concepts": ["wave", "salt"]}'
    task = "Write one sentence about the sea using the words wave and salt."
    subprocess.run(
        [sys.executable, "-m", "self_refine.cli", "run", task, "--model", "offline",
         "--candidates", "3", "--max-iterations", "1", "--profile", "constrained_generation",
         "--reference", concepts, "--thread-id", "c", "--db", "t.db"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
        env={**os.environ, "LANGSMITH_TRACING": "false"},
    )  # fmt: skip
    _cli("show", "c", "--db", "t.db", "--html", "thread.html", cwd=tmp_path)
    visit = Visit(browser, tmp_path / "thread.html", width=420)  # a phone-sized screen
    page = visit.page
    steps = page.locator(".attempt")
    assert steps.count() == 2
    for n in range(2):
        table = steps.nth(n).locator("details.candidates")
        assert table.is_visible()
        assert table.locator("tr.candidate").count() == 3
        assert table.locator("tr.candidate[data-kept='true']").count() == 1
        assert "kept candidate" in table.locator("summary").inner_text()
    assert "candidate x3" in page.locator(".steps").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    _screenshot(visit, "thread-page-candidates-narrow.png")
    assert visit.errors == [] and visit.outside == []


def test_thread_page_of_a_search_run_draws_its_tree(browser: Any, tmp_path: Path) -> None:
    concepts = '{"concepts": ["dog", "park", "zebra"]}'
    task = "Write a sentence using dog, park and zebra"
    subprocess.run(
        [sys.executable, "-m", "self_refine.cli", "run", task, "--model", "offline",
         "--candidates", "4", "--max-iterations", "3", "--strategy", "search",
         "--critics", "concepts", "--reference", concepts, "--thread-id", "s", "--db", "t.db"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
        env={**os.environ, "LANGSMITH_TRACING": "false"},
    )  # fmt: skip
    _cli("show", "s", "--db", "t.db", "--html", "thread.html", cwd=tmp_path)
    visit = Visit(browser, tmp_path / "thread.html", width=420)  # a phone-sized screen
    page = visit.page
    nested = page.locator("ul.tree li.tree-node li.tree-node")
    assert nested.count() >= 1 and nested.first.is_visible()
    child = nested.first
    parent = child.locator("xpath=ancestor::li[1]")
    assert child.get_attribute("data-parent") == parent.get_attribute("data-node")
    assert page.locator("ul.tree li.answer").count() == 1
    refined = page.locator(".attempt[data-parent]:not([data-parent=''])").first
    assert "changes from node" in refined.locator(".kept-as").inner_text()
    assert refined.locator(".draft.diff ins").count() >= 1
    fresh = page.locator(".attempt[data-parent='']").first
    assert "shown as new" in fresh.locator(".kept-as").inner_text()
    assert fresh.locator(".draft.diff").count() == 0
    assert "fresh draft" in page.locator("tr.candidate .draft-of").first.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    _screenshot(visit, "thread-page-search-narrow.png")
    assert visit.errors == [] and visit.outside == []
