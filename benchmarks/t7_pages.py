"""Target 7 (issue 24): the time to write a report page grows about linearly with draft size.

A thread page shows each draft diffed word by word against the one before it; a
whole-draft word diff costs up to the product of the two drafts' lengths (a 30 KB
draft took seconds, a 1 MB one was still diffing after a minute). Pages of a
thread with three attempts are timed at 10 KB, 100 KB and 1 MB drafts, for two
kinds of refine step: one passage inserted, and words changed all through the
draft (5% of them). The 1 MB page is compared with the 10 KB one: 100x the text
should take about 100x the time, not 10,000x. A reference row times the whole-draft
word diff of two 30 KB drafts, as pages made it before.
"""

from __future__ import annotations

import difflib
import random
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.report import Row, median, suite_main
from self_refine.pages.render import write_thread_page
from self_refine.pages.thread import thread_view

SIZES = (10_000, 100_000, 1_000_000)
_WORDS = "the a of to and in is it that for on with as was by this be at from or".split()


def _draft(chars: int, rng: random.Random) -> str:
    vocabulary = _WORDS + [f"w{i}" for i in range(3000)]
    sentences, length = [], 0
    while length < chars:
        words = [rng.choice(vocabulary) for _ in range(rng.randint(5, 25))]
        sentence = " ".join(words).capitalize() + "."
        sentences.append(sentence)
        length += len(sentence) + 1
    return " ".join(sentences)


def _inserted(draft: str, rng: random.Random) -> str:
    middle = draft.find(". ", len(draft) // 2) + 2
    return draft[:middle] + "A passage the refine step added. " + draft[middle:]


def _scattered(draft: str, rng: random.Random) -> str:
    return " ".join(w.upper() if rng.random() < 0.05 else w for w in draft.split(" "))


def _thread(chars: int, step: Callable[[str, random.Random], str]) -> dict[str, Any]:
    rng = random.Random(chars)
    drafts = [_draft(chars, rng)]
    for _ in range(2):
        drafts.append(step(drafts[-1], rng))
    attempts = [
        {"iteration": n, "draft": d, "critique": {"score": 0.5, "feedback": ["Improve it."]}}
        for n, d in enumerate(drafts)
    ]
    return {"task": "Refine a long draft.", "attempts": attempts, "answer": drafts[-1]}


def _page_seconds(values: dict[str, Any], repeats: int) -> float:
    times = []
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        for _ in range(repeats):
            start = time.perf_counter()
            write_thread_page(thread_view(values, title="long"), Path(folder) / "t.html")
            times.append(time.perf_counter() - start)
    return median(times)


def _whole_word_diff_seconds(chars: int) -> float:
    """The diff pages made before issue 24: difflib over every word and space of both drafts."""
    rng = random.Random(7)
    before = _draft(chars, rng)
    after = _scattered(before, rng)
    tokens = re.compile(r"\s+|[^\s]+")
    start = time.perf_counter()
    matcher = difflib.SequenceMatcher(
        a=tokens.findall(before), b=tokens.findall(after), autojunk=False
    )
    matcher.get_opcodes()
    return time.perf_counter() - start


def run(quick: bool) -> list[Row]:
    """Time thread pages at each draft size, for both kinds of refine step."""
    repeats = 1 if quick else 3
    rows = []
    for name, step in (("one passage inserted", _inserted), ("5% of words changed", _scattered)):
        seconds = {size: _page_seconds(_thread(size, step), repeats) for size in SIZES}
        for size in SIZES[1:]:
            growth = size // SIZES[0]
            limit = 1.5 * growth
            ratio = seconds[size] / seconds[SIZES[0]]
            rows.append(
                Row(
                    7,
                    f"thread page, 3 attempts of a {size // 1000:,} KB draft, "
                    f"each refine step with {name}",
                    "s",
                    seconds[size],
                    seconds[SIZES[0]],
                    f"{SIZES[0] // 1000} KB drafts",
                    f"<= {limit:g}x ({growth}x the text)",
                    ratio <= limit,
                )
            )
    rows.append(
        Row(
            7,
            "the whole-draft word diff pages made before, two 30 KB drafts (5% of words changed)",
            "s",
            _whole_word_diff_seconds(30_000),
            seconds[SIZES[0]],
            f"a whole page of {SIZES[0] // 1000} KB drafts now",
            "reference",
            note="one diff; a page of three attempts makes two",
        )
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(suite_main(run))
