"""The quality benchmark's task sets, made here from a seed: `python -m benchmarks.quality.sets`.

Every item says apart what a run may see and what only grades it:

- `reference`: the run-time reference, what a user asking the task would have. A run's
  checks are built from it alone (`RUN_CHECK` names the verifier that reads it);
- `grade`: the grading reference, read only by the grader (`GRADER`) once a run is over.
  It carries `CANARY`, and so does every hidden test, so a test can show that nothing
  graded ever reaches a model request;
- `split`: `tune` (the items constants, defaults and forms are chosen on) or `report`
  (the items the figures report).

The sets:
- constrained: 4-8 required words drawn from a word list. The words are in the task, so
  the run checks them (`concepts`, which accepts inflected forms) and so does the grader;
- arithmetic: templated multi-step word problems, the reported part's from templates no
  tuning item comes from (`_HELD_OUT`). The run has no key (`reference` is
  empty; `RUN_CHECK` names no verifier: a key-free check, such as a vote over sampled
  answers, is what plugs in there); the answer key only grades (`answer`);
- code: a Python function from a spec whose task text shows two or three example asserts;
  the run's `python_tests` verifier runs only those, and the grader runs them and the
  hidden edge-case tests (`code_tasks.py`). Each item keeps a reference solution that
  passes all of its tests.

The first items of each set are its tuning part (for constrained and arithmetic, the 30
items earlier runs reported and were tuned on; for code, its first 15 functions); the rest
are reported. Written to `benchmarks/quality/sets/*.jsonl`, one JSON object per line in the
batch input format (`id`, `task`, `reference`) with `split` and `grade` beside.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.quality.code_tasks import REPORTED, TUNING

__all__ = [
    "CANARY",
    "GRADER",
    "PARTS",
    "PROFILE",
    "RUN_CHECK",
    "SETS",
    "SET_NAMES",
    "SIZES",
    "arithmetic",
    "code",
    "constrained",
    "make_set",
    "write_sets",
]

HERE = Path(__file__).resolve().parent
SETS_DIR = HERE / "sets"

CANARY = "self-refine grading data, never shown to a run: d158d498-5305-47e7-a26b-e66277d49c2a"
"""In every grading reference and hidden test; a model request holding it is a leak."""

PARTS = ("report", "tune")
"""`report`: the items the figures report; `tune`: the items choices are made on."""

WORDS = (
    "anchor apple bakery balloon basket beach bicycle blanket bridge candle canyon carpet "
    "castle cloud compass desert dolphin drum engine feather fence field forest fountain "
    "garden glove guitar hammer harbor helmet island jacket kettle kite ladder lantern "
    "library meadow mirror mountain needle orchard paddle pencil piano pillow pocket "
    "puddle rabbit ribbon river rocket saddle scarf shovel tent thunder tower train "
    "tunnel umbrella valley violin wagon whistle window"
).split()
NAMES = ("Mia", "Omar", "Lena", "Ravi", "Sofia", "Tom", "Aiko", "Ben", "Nora", "Hugo")


def constrained(rng: random.Random, index: int) -> dict[str, Any]:
    """One constrained-generation item: a sentence or two using 4-8 given words."""
    words = rng.sample(WORDS, rng.randint(4, 8))
    task = (
        "Write one or two natural sentences that use all of these words: " + ", ".join(words) + "."
    )
    return {
        "id": f"constrained-{index:03d}",
        "task": task,
        "reference": {"concepts": words},
        "grade": {"concepts": words, "canary": CANARY},
    }


def _change(rng: random.Random, name: str) -> tuple[str, int]:
    a, b = rng.randint(2, 6), rng.randint(2, 5)
    p1, p2 = rng.randint(2, 9), rng.randint(3, 12)
    spent = a * p1 + b * p2
    bill = next(v for v in (20, 50, 100, 200) if v > spent)
    text = (
        f"Pens cost {p1} dollars each and notebooks cost {p2} dollars each. {name} buys {a} "
        f"pens and {b} notebooks and pays with a {bill} dollar bill. How many dollars of "
        f"change does {name} get?"
    )
    return text, bill - spent


def _boxes(rng: random.Random, name: str) -> tuple[str, int]:
    per, boxes, given, eaten = (
        rng.randint(6, 24),
        rng.randint(3, 9),
        rng.randint(2, 10),
        rng.randint(1, 5),
    )
    text = (
        f"A box holds {per} cookies. {name} buys {boxes} boxes, gives {given} cookies to a "
        f"neighbour and eats {eaten}. How many cookies are left?"
    )
    return text, per * boxes - given - eaten


def _pages(rng: random.Random, name: str) -> tuple[str, int]:
    p, d, q, e = rng.randint(5, 30), rng.randint(2, 7), rng.randint(10, 40), rng.randint(2, 6)
    text = (
        f"{name} reads {p} pages a day for {d} days, then {q} pages a day for {e} days. "
        f"How many pages does {name} read in total?"
    )
    return text, p * d + q * e


def _trip(rng: random.Random, name: str) -> tuple[str, int]:
    s, h, t, k = rng.randint(40, 90), rng.randint(2, 5), rng.randint(20, 60), rng.randint(1, 4)
    text = (
        f"{name} drives at {s} km per hour for {h} hours, then at {t} km per hour for {k} "
        f"hours. How many kilometres does {name} drive in total?"
    )
    return text, s * h + t * k


def _thirds(rng: random.Random, name: str) -> tuple[str, int]:
    money = 6 * rng.randint(5, 40)
    text = (
        f"{name} has {money} dollars and spends a third of it on a coat, then half of what "
        f"is left on shoes. How many dollars does {name} have left?"
    )
    return text, money - money // 3 - (money - money // 3) // 2


def _tickets(rng: random.Random, name: str) -> tuple[str, int]:
    adults, children = rng.randint(2, 6), rng.randint(2, 8)
    adult, child = rng.randint(8, 20), rng.randint(3, 7)
    off = rng.randint(2, 6)
    text = (
        f"Museum tickets cost {adult} dollars for an adult and {child} dollars for a child. "
        f"{name} buys tickets for {adults} adults and {children} children and gets {off} "
        f"dollars off the whole order. How many dollars does {name} pay?"
    )
    return text, adults * adult + children * child - off


def _garden(rng: random.Random, name: str) -> tuple[str, int]:
    rows, per, dead, extra = (
        rng.randint(3, 9),
        rng.randint(4, 12),
        rng.randint(2, 9),
        rng.randint(3, 15),
    )
    text = (
        f"{name} plants {rows} rows of tomatoes with {per} plants in each row. {dead} plants "
        f"die, and {name} plants {extra} more. How many tomato plants are there now?"
    )
    return text, rows * per - dead + extra


def _savings(rng: random.Random, name: str) -> tuple[str, int]:
    start, weekly, weeks = rng.randint(10, 60), rng.randint(5, 25), rng.randint(3, 10)
    spent = rng.randint(5, start + weekly * weeks - 1)
    text = (
        f"{name} has {start} dollars saved and saves {weekly} dollars every week for {weeks} "
        f"weeks, then spends {spent} dollars on a game. How many dollars does {name} have?"
    )
    return text, start + weekly * weeks - spent


def _bus(rng: random.Random, name: str) -> tuple[str, int]:
    first = rng.randint(12, 40)
    off1, on1 = rng.randint(2, first - 5), rng.randint(3, 15)
    off2 = rng.randint(1, first - off1 + on1 - 1)
    text = (
        f"A bus leaves with {first} passengers. At the first stop {off1} get off and {on1} get "
        f"on; at the second stop {off2} get off, {name} among them. How many passengers are "
        "on the bus after the second stop?"
    )
    return text, first - off1 + on1 - off2


def _recipe(rng: random.Random, name: str) -> tuple[str, int]:
    per, batches, cups = rng.randint(2, 6), rng.randint(3, 8), rng.randint(10, 40)
    used = per * batches
    cups = max(cups, used + rng.randint(1, 10))
    text = (
        f"A batch of pancakes needs {per} cups of flour. {name} has {cups} cups and makes "
        f"{batches} batches. How many cups of flour are left?"
    )
    return text, cups - used


_PROBLEMS: tuple[Callable[[random.Random, str], tuple[str, int]], ...] = (
    _change,
    _boxes,
    _pages,
    _trip,
    _thirds,
)
"""The tuning part's templates."""
_HELD_OUT: tuple[Callable[[random.Random, str], tuple[str, int]], ...] = (
    _tickets,
    _garden,
    _savings,
    _bus,
    _recipe,
)
"""The reported part's templates: a family no tuning item comes from, so no reported item
is a tuning item with its name or numbers changed."""


def arithmetic(rng: random.Random, index: int) -> dict[str, Any]:
    """One templated multi-step word problem; its computed answer only grades. The tuning
    part's items come from `_PROBLEMS`, the reported part's from `_HELD_OUT`."""
    family = _PROBLEMS if index < SIZES["arithmetic"]["tune"] else _HELD_OUT
    text, answer = family[index % len(family)](rng, rng.choice(NAMES))
    return {
        "id": f"arithmetic-{index:03d}",
        "task": text,
        "reference": {},
        "grade": {"answer": str(answer), "canary": CANARY},
    }


_FUNCTIONS = (*TUNING, *REPORTED)


def hidden(test: str) -> str:
    """A hidden test carrying the canary as its assert message (the grader runs it as is)."""
    return f"{test}, {CANARY!r}"


def code(rng: random.Random, index: int) -> dict[str, Any]:
    """One function spec: its example asserts in the task and the run's reference, every
    test (examples and hidden ones) in the grading reference, and its reference solution."""
    spec, solution, examples, tests = _FUNCTIONS[index]
    shown = "\n".join(examples)
    task = (
        f"Write a Python function {spec}. For example, these asserts pass:\n```python\n{shown}\n```"
    )
    return {
        "id": f"code-{index:03d}",
        "task": task,
        "reference": {"tests": list(examples)},
        "grade": {"tests": [*examples, *map(hidden, tests)], "canary": CANARY},
        "solution": solution,
    }


SETS: dict[str, Callable[[random.Random, int], dict[str, Any]]] = {
    "constrained": constrained,
    "arithmetic": arithmetic,
    "code": code,
}
SET_NAMES = ("humaneval", *SETS)
"""Every set the benchmarks run: HumanEval (`humaneval.py`, read from its wheel, not written
here) and the sets made here."""

PROFILE = {
    "humaneval": "python_function",
    "constrained": "constrained_generation",
    "arithmetic": "math",
    "code": "python_function",
}

RUN_CHECK: dict[str, str | None] = {
    "humaneval": "python_tests",
    "constrained": "concepts",
    "arithmetic": None,
    "code": "python_tests",
}
"""The verifier a run may use, reading the item's `reference` (what the task gives).

Arithmetic has none: the run holds no answer key. A key-free check (a vote over sampled
final answers, or the model's own program agreeing with its answer) is named here once
the library has it; until then a run on arithmetic has only its LLM critic. A HumanEval
problem whose docstring shows no executable example has an empty `reference`: its run
has the LLM critic alone too."""

GRADER = {
    "humaneval": "python_tests",
    "constrained": "concepts",
    "arithmetic": "answer",
    "code": "python_tests",
}
"""The exact checker that judges an answer against the item's `grade`, after the run (for
HumanEval, the problem's `check` on the prompt's imports and helpers, then the draft's code)."""

SIZES = {
    "constrained": {"tune": 30, "report": 60},
    "arithmetic": {"tune": 30, "report": 60},
    "code": {"tune": len(TUNING), "report": len(REPORTED)},
}
"""How many items each part of each set has; the tuning part comes first."""


def make_set(name: str, n: int | None, seed: int) -> list[dict[str, Any]]:
    """The set's items (its first `n`; None: all of them), the tuning part first, each with its
    `split`; the same seed gives the same items."""
    rng = random.Random(f"{name}-{seed}")
    tune, total = SIZES[name]["tune"], sum(SIZES[name].values())
    items, seen = [], set()
    for index in range(total if n is None else min(n, total)):
        item = SETS[name](rng, index)
        while _unnamed(item["task"]) in seen:  # the same problem with another name: draw again
            item = SETS[name](rng, index)
        seen.add(_unnamed(item["task"]))
        items.append({"id": item.pop("id"), "split": "tune" if index < tune else "report", **item})
    return items


def _unnamed(task: str) -> str:
    """The task with its person's name taken out: two tasks equal here are one problem."""
    for name in NAMES:
        task = task.replace(name, "NAME")
    return task


def write_sets(seed: int, folder: Path = SETS_DIR) -> list[Path]:
    """Write every set as JSONL; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in SETS:
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(item) + "\n" for item in make_set(name, None, seed)))
        paths.append(path)
    return paths


def main() -> None:
    """Write the sets from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    for path in write_sets(args.seed):
        print(path)


if __name__ == "__main__":
    main()
