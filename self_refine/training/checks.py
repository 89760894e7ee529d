"""The checks the training package adds to the built-in verifiers, by name.

`stated_answer`: an answer counts only where the reply states it, in its last line.
`visible_tests`: a critic for code tasks that runs only the examples the prompt shows.

## stated_answer

The `answer` verifier reads a draft's final answer wherever it can find one, down to the
last number of the text. That serves a benchmark that grades what a model meant; as a
reward it can be met by where a number falls: a policy that restates the task ("The task
is to subtract 28 from 14.") ends with a number and may pass. Here an answer counts only
when the reply's last non-empty line ends by stating it:

- "The answer is N", "answer is: N", "Final answer: N" or "Answer: N" (any case), or
- "\\boxed{N}",

where N is one number (digits, an optional sign, a decimal point or thousands commas),
then at most a full stop. Markdown emphasis (`*`, `` ` ``) and `$` in that line are
ignored. Anything after the statement in the line ("The answer is 12, I think.") and a
statement on an earlier line fail. The number is compared with `reference["answer"]` as
the `answer` verifier compares (`answers_match`). The reward (`verifier_reward`), the
rollout's turn-1 and turn-2 verdicts and `evaluate_policy` all take the check by its name,
`"stated_answer"`, which resolves to this one `STATED_ANSWER` wherever the training
package reads verifier names; the task's prompt must ask for the form.

## visible_tests

A code task's reference holds every test in `tests` (graded, by the `python_tests`
verifier, for the reward and the verdicts) and the examples its prompt shows in
`visible`. As the critic (`critics=["visible_tests"]`), `VISIBLE_TESTS` runs the visible
examples alone, sandboxed as `python_tests` runs them, so the refiner is told what its
code returned on the examples it was shown ("solve([3, 8, 1]) returned 12, expected 8"):
information the policy lacks at turn 1, while the hidden tests only grade.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from self_refine.critics.verifiers.answer import ANSWER, answers_match
from self_refine.critics.verifiers.base import BuiltinVerifier, reference_field
from self_refine.critics.verifiers.python_tests import PYTHON_TESTS
from self_refine.state import Critique

__all__ = [
    "STATED_ANSWER",
    "TRAINING_VERIFIERS",
    "VISIBLE_TESTS",
    "stated_answer",
    "training_verifiers",
]

_NUMBER = r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_STATED = re.compile(
    rf"(?:\banswer\s+is\s*:?|\banswer\s*:)\s*(?P<said>{_NUMBER})\s*\.?$"
    rf"|\\boxed\{{\s*(?P<boxed>{_NUMBER})\s*\}}\s*\.?$",
    re.I,
)
_IGNORED = str.maketrans("", "", "*`$")
_FORM = 'end your reply with a last line "The answer is <number>."'
"""What the check's feedback asks for, in the words a task's prompt should use too."""


def stated_answer(reply: str) -> str | None:
    """The number the reply's last non-empty line ends by stating as its answer, or None."""
    lines = [line for line in reply.splitlines() if line.strip()]
    if not lines:
        return None
    found = _STATED.search(lines[-1].translate(_IGNORED).strip())
    if found is None:
        return None
    return (found.group("said") or found.group("boxed")).replace("\u2212", "-")


def _judge(task: str, draft: str, expected: Any) -> Critique:
    value = stated_answer(draft)
    if value is None:
        return Critique(feedback=[f"No stated final answer in the last line: {_FORM}"], score=0.0)
    if answers_match(value, expected):
        return Critique(score=1.0, done=True)
    return Critique(
        feedback=[
            f'The final answer "{value}" (the last line) is wrong; recheck the steps that '
            "lead to it."
        ],
        score=0.0,
    )


STATED_ANSWER = BuiltinVerifier(
    name="stated_answer",
    summary='the reply\'s last line states reference["answer"] ("The answer is N", \\boxed{N})',
    prepare=ANSWER.prepare,
    judge=_judge,
)


def _visible(reference: Any) -> Any:
    return PYTHON_TESTS.prepare(
        {"tests": reference_field(reference, "visible", '["assert solve([1, 2]) == 3"]')}
    )


VISIBLE_TESTS = BuiltinVerifier(
    name="visible_tests",
    summary='the code passes reference["visible"], the examples the prompt shows, sandboxed',
    prepare=_visible,
    judge=PYTHON_TESTS.judge,
)

TRAINING_VERIFIERS: dict[str, BuiltinVerifier] = {
    check.name: check for check in (STATED_ANSWER, VISIBLE_TESTS)
}
"""The checks the training package adds to the built-in verifiers, by name."""


def training_verifiers(specs: Sequence[Any]) -> list[Any]:
    """`specs` with each training check's name replaced by the check itself."""
    return [
        TRAINING_VERIFIERS[spec] if isinstance(spec, str) and spec in TRAINING_VERIFIERS else spec
        for spec in specs
    ]
