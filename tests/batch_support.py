"""A math dataset with scripted model behaviour, for batch tests against the local server.

Each task asks for a sum. What the "model" (the test server's responder) does
depends on the task's kind:

- `cc`: first draft right; the critic accepts it.               correct -> correct
- `ic1`: first draft wrong; the first refine fixes it.           incorrect -> correct
- `ic2`: wrong; the first refine is wrong too, the second fixes. incorrect -> correct
- `ii`: wrong, and every refine is wrong (runs to max_iterations). incorrect -> incorrect
- `ci`: right, but the critic believes a wrong total and the refine
  follows it; the critic then scores the wrong draft higher.     correct -> incorrect
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("cc", "ic1", "ic2", "ii", "ci")


@dataclass(frozen=True)
class Script:
    """What the model says for one task."""

    first: int
    refines: tuple[int, ...]
    belief: int


def _script(kind: str, right: int) -> Script:
    wrong = [right + 1, right + 2, right + 3, right + 4]
    return {
        "cc": Script(right, (), right),
        "ic1": Script(wrong[0], (right,), right),
        "ic2": Script(wrong[0], (wrong[1], right), right),
        "ii": Script(wrong[0], tuple(wrong[1:]), right),
        "ci": Script(right, (wrong[0],), wrong[0]),
    }[kind]


@dataclass
class MathDataset:
    """Items (as dicts for a JSONL file) and the script for each task."""

    items: list[dict[str, Any]]
    scripts: dict[str, Script]
    kinds: dict[str, str]

    def write(self, path: Path, extra_lines: tuple[str, ...] = ()) -> Path:
        lines = [json.dumps(item) for item in self.items] + list(extra_lines)
        path.write_text("\n".join(lines) + "\n")
        return path


def math_dataset(per_kind: int = 2) -> MathDataset:
    """per_kind items of each kind, interleaved, with ids q0, q1, ..."""
    items, scripts, kinds = [], {}, {}
    for n in range(per_kind * len(KINDS)):
        kind = KINDS[n % len(KINDS)]
        a, b = 10 + 3 * n, 7 + n
        task = f"Question {n}: what is {a} + {b}? Answer with the number."
        items.append({"id": f"q{n}", "task": task, "reference": {"answer": str(a + b)}})
        scripts[task] = _script(kind, a + b)
        kinds[f"q{n}"] = kind
    return MathDataset(items, scripts, kinds)


def _section(text: str, tag: str) -> str | None:
    found = re.findall(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, flags=re.S)
    return found[-1] if found else None


class MathResponder:
    """The test server's responder for a MathDataset."""

    def __init__(self, dataset: MathDataset) -> None:
        self.scripts = dataset.scripts

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        system = str(messages[0].get("content", ""))
        prompt = str(messages[-1].get("content", ""))
        everything = "\n".join(str(m.get("content", "")) for m in messages[1:])
        role = system.split("\n", 1)[0].removeprefix("Role: ").strip()
        script = self.scripts[_section(everything, "task") or ""]
        if role == "critic":
            numbers = re.findall(r"-?\d+", _section(prompt, "draft") or "")
            done = bool(numbers) and int(numbers[-1]) == script.belief
            feedback = [] if done else ["Recheck the sum: the total looks wrong."]
            return json.dumps({"feedback": feedback, "score": 0.9 if done else 0.3, "done": done})
        if role == "refiner":  # one earlier draft per attempt, in either layout
            drafts = sum(m.get("role") == "assistant" for m in messages)
            step = drafts or prompt.count("<attempt n=")
            return f"The answer is {script.refines[step - 1]}."
        return f"The answer is {script.first}."


def expected(dataset: MathDataset, ids: set[str] | None = None) -> dict[str, Any]:
    """Accuracy and transitions the scripts imply (the LLM critic decides, a verifier judges)."""
    kinds = [k for i, k in dataset.kinds.items() if ids is None or i in ids]
    count = {kind: kinds.count(kind) for kind in KINDS}
    n = len(kinds)
    return {
        "items": n,
        "accuracy_first": round((count["cc"] + count["ci"]) / n, 4),
        "accuracy_final": round((count["cc"] + count["ic1"] + count["ic2"]) / n, 4),
        "transitions": {
            "incorrect->correct": count["ic1"] + count["ic2"],
            "incorrect->incorrect": count["ii"],
            "correct->correct": count["cc"],
            "correct->incorrect": count["ci"],
        },
        "accuracy_by_iteration": [
            round((count["cc"] + count["ci"]) / n, 4),
            round((count["cc"] + count["ic1"]) / n, 4),
            round((count["cc"] + count["ic1"] + count["ic2"]) / n, 4),
            round((count["cc"] + count["ic1"] + count["ic2"]) / n, 4),
        ],
        "stop_reasons": {"critic_done": n - count["ii"], "max_iterations": count["ii"]},
        "mean_iterations": round(
            (count["ic1"] + 2 * count["ic2"] + 3 * count["ii"] + count["ci"]) / n, 4
        ),
    }
