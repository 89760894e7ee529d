"""The `answer` verifier: compare the draft's final answer with the reference answer.

A draft that is no worked solution, but remarks about one in the words of feedback
("The final answer "28" ... is wrong; recheck ...") or an instruction to change one
("Recheck the second step ..."), fails whatever number it ends with.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from self_refine.critics.verifiers.base import BuiltinVerifier, reference_field
from self_refine.errors import ConfigError
from self_refine.state import Critique

__all__ = ["ANSWER", "answers_match", "extract_answer", "unreadable_number"]

_ANSWER_IS = re.compile(r"(?:final answer|the answer|answer)\s*+(?:is\b\s*+:?|:|=)", re.I)
"""Where a statement of the final answer begins; its value is the rest of that line."""
_VALUE_START = re.compile(r"\s*+(?:\*\*)?[^\S\n]*+")
_FENCE_OPEN = re.compile(r"```[ \t]*(?:python3?|py)\b(?:[^\n`]|`(?!``))*+\n", re.I)
"""The opening line of a Python block: what the block prints or assigns is no answer the
draft states. The block ends at the next ``` (or the end of the draft)."""

_HASHES = re.compile(r"^[^\S\n]*+####(?P<value>[^\n]*+)", re.M)
_SPACES = "\u00a0\u2009\u202f "
"""What may stand between digit groups: a space, a no-break space, a thin space, a narrow
no-break space ("1 000", "12 345")."""
_NUMERAL = rf"\d++(?:[,.]\d++|[{_SPACES}]\d{{3,}}+)*+"
"""Digits, and digit groups each joined by a comma, a point or (before three digits or more)
a space: every way of writing one number ("1,000,000", "12 345", "2,5"), and runs no
grammar reads ("1 0000", "1,2,3"), taken whole so that no piece of one is ever read as the
answer (see `_numeral`); numbers listed with spaces ("1 2 3 5 8") stay apart."""
_NUMBER = re.compile(
    rf"(?<![\d.,])[-\u2212]?\$?\s?{_NUMERAL}(?:[eE][-+]?\d+)?(?:\s*/\s*\d+)?"
    r"|[-\u2212]?(?<!\d)\.\d+"
)
_SENTENCE_END = re.compile(r"\.(?=\s|$)|[;!?]|,\s|\s(?:because|since|as|which|so)\b")
_TOLERANCE = 1e-6


def _boxed(draft: str) -> str | None:
    """The content of the last \\boxed{...}, with nested braces."""
    start = draft.rfind("\\boxed")
    if start < 0:
        return None
    brace = draft.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for end in range(brace, len(draft)):
        depth += {"{": 1, "}": -1}.get(draft[end], 0)
        if depth == 0:
            return draft[brace + 1 : end].strip()
    return None


def _without_programs(draft: str) -> str:
    """The draft without its Python blocks, read once from start to end."""
    kept, position = [], 0
    while (opening := _FENCE_OPEN.search(draft, position)) is not None:
        kept.append(draft[position : opening.start()])
        closing = draft.find("```", opening.end())
        position = len(draft) if closing < 0 else closing + 3
    kept.append(draft[position:])
    return "".join(kept)


def _statement(draft: str) -> str | None:
    """The value of the draft's last "The answer is ..." whose line holds one.

    The value runs to the end of its line, so an earlier statement's value holds every
    later one on that line ("the answer is: The answer is 38."): the last is the one
    read. The draft is read once (linear time, however many statements it holds).
    """
    starts = [found.end() for found in _ANSWER_IS.finditer(draft)]
    for start in reversed(starts):
        begin = _VALUE_START.match(draft, start)
        value_start = begin.end() if begin else start
        line_end = draft.find("\n", value_start)
        value = draft[value_start : len(draft) if line_end < 0 else line_end]
        ended = _SENTENCE_END.search(value)
        value = (value[: ended.start()] if ended else value).strip().strip("*").strip()
        if value:
            return value
    return None


def extract_answer(draft: str) -> tuple[str, str] | None:
    """The final answer in the draft and where it was found, or None.

    Looks for, in order: the last \\boxed{...}, the last "#### ...", the last
    "The answer is ..." (or "Answer: ..."; its last number when the statement
    is not a plain number), and the last number in the text, all outside the draft's
    Python blocks (a `print("The answer is", x)` in a program states no answer). A number
    is read whole: "1 000", "12 345" and "1,000,000" are one number each; digits no
    grammar reads as one number ("1 0000") are the answer as written, which reads as none.
    """
    draft = _without_programs(draft)
    boxed = _boxed(draft)
    if boxed:
        return boxed, "\\boxed{}"
    hashes = [value.strip() for value in _HASHES.findall(draft) if value.strip()]
    if hashes:
        return hashes[-1], '"####"'
    value = _statement(draft)
    if value:
        numbers = _NUMBER.findall(value)
        if numbers and _number(value) is None:
            value = numbers[-1].strip()  # the last number of the statement: "x = 3 + 4 = 7"
        return value, '"the answer is"'
    numbers = _NUMBER.findall(draft)
    if numbers:
        return numbers[-1].strip(), "the last number"
    return None


def unreadable_number(value: str) -> bool:
    """True when `value` holds digits that no way of writing one number reads ("1 0000",
    "1.2.3"): a final answer to rewrite, never to read a piece of."""
    return any(_numeral(run.group()) is None for run in re.finditer(_NUMERAL, value))


def _strip_latex(text: str) -> str:
    text = re.sub(r"^\s*[A-Za-z]\w*\s*=\s*", "", text)  # "x = 5" -> "5"
    text = re.sub(r"\\(?:text|mathrm|textbf|mathbf)\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = text.replace("\\$", "$").replace("\\%", "%").replace("\\!", "").replace("\\,", "")
    return text.replace("\\left", "").replace("\\right", "")


_INFINITY = re.compile(r"([-+]?)(?:inf|infinity|\u221e)", re.I)
_EXACT_EXPONENT_LIMIT = 4000  # beyond this a value is compared as a Decimal, never as a ratio


_COMMA_GROUPS = re.compile(r"\d{1,3}(?:,\d{3})++(?:\.\d++)?|\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d++)?")
"""1,000,000 and 1,234.5; 1,00,000 (lakh groups)."""
_SPACE_GROUPS = re.compile(rf"\d{{1,3}}(?:[{_SPACES}]\d{{3}})++(?:[.,]\d++)?")
"""1 000, 12 345 and 1 234,5 (with no-break or thin spaces too)."""
_DECIMAL_COMMA = re.compile(r"\d++,(?!\d{3}$)\d++")
"""2,5, 1,00 and 3,14159: a comma before other than three digits is a decimal comma."""


def _numeral(digits: str) -> str | None:
    """The digits of one number as Decimal reads them ("12 345" -> "12345", "2,5" -> "2.5"),
    or None when they are no one number (the groups "1 0000", the list "1,2,3")."""
    if re.fullmatch(r"\d++(?:\.\d++)?|\.\d++", digits):
        return digits
    if _COMMA_GROUPS.fullmatch(digits):
        return digits.replace(",", "")
    if _SPACE_GROUPS.fullmatch(digits):
        return re.sub(f"[{_SPACES}]", "", digits).replace(",", ".")
    if _DECIMAL_COMMA.fullmatch(digits):
        return digits.replace(",", ".")
    return None


def _number(text: str) -> Decimal | Fraction | None:
    """The number a short answer states, tolerant of $, grouped thousands ("1,000", "12 345"),
    decimal commas ("2,5"), %, units and fractions.

    A plain number stays an exact Decimal (so 1e400 and 21-digit integers keep
    every digit); "a/b" becomes a Fraction; "inf" and "\u221e" are infinities.
    """
    text = _strip_latex(text).replace("\u2212", "-").strip().strip("$").strip()
    text = re.sub(r"^\((.*)\)$", r"\1", text)
    infinity = _INFINITY.fullmatch(text)
    if infinity:
        return Decimal(f"{infinity.group(1)}Infinity")
    match = re.fullmatch(
        rf"(?P<sign>[-+]?)\$?\s*(?P<digits>{_NUMERAL}|\.\d++)(?P<exp>[eE][-+]?\d+)?"
        r"(?:\s*/\s*\(?(?P<den>[-+]?[\d.]+)\)?)?\s*%?\s*(?P<unit>[A-Za-z][A-Za-z .]*)?",
        text.replace("(", "").replace(")", "") if "/" in text else text,
    )
    if not match:
        return None
    digits = _numeral(match.group("digits"))
    if digits is None:
        return None
    raw = f"{match.group('sign')}{digits}{match.group('exp') or ''}"
    try:
        value = Decimal(raw)
        if not match.group("den"):
            return value
        numerator, denominator = _ratio(value), _ratio(Decimal(match.group("den")))
        if numerator is None or denominator is None:
            return None
        return numerator / denominator
    except (InvalidOperation, ZeroDivisionError, ValueError):
        return None


def _ratio(value: Decimal) -> Fraction | None:
    """The value as an exact Fraction; None when infinite or too large to expand."""
    if not value.is_finite() or abs(value.adjusted()) > _EXACT_EXPONENT_LIMIT:
        return None
    return Fraction(value)


def _terminates(value: Fraction) -> bool:
    """Whether the fraction has a finite decimal expansion (denominator 2^a * 5^b)."""
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


def _numbers_match(a: Decimal | Fraction, b: Decimal | Fraction) -> bool:
    """Exact equality; a rounded decimal matches a repeating fraction within 1e-6."""
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    x = _ratio(a) if isinstance(a, Decimal) else a
    y = _ratio(b) if isinstance(b, Decimal) else b
    if x is None or y is None:
        return False
    if x == y:
        return True
    if _terminates(x) and _terminates(y):
        return False
    return abs(x - y) <= _TOLERANCE * max(Fraction(1), abs(y))


def _words(text: str) -> str:
    text = _strip_latex(text).lower().strip().strip("$").strip()
    text = re.sub(r"^\(?([a-z])\)$", r"\1", text)  # "(b)" -> "b"
    text = text.strip(" .,;:!\"'`*")
    return " ".join(text.split())


def answers_match(given: str, expected: Any) -> bool:
    """True when `given` states the same answer as `expected` (number or text).

    Numbers match exactly, whatever their notation: 42, 42.0, $42, 1,000,
    3/4 and 0.75, 50%, \\frac{3}{4}, 1e400, inf; only a decimal compared with a
    repeating fraction (0.333333 and 1/3) matches within a relative 1e-6. Text matches case- and
    spacing-insensitively; "(B)" matches "B". A list of expected answers
    matches any of them.
    """
    if isinstance(expected, list | tuple):
        return any(answers_match(given, option) for option in expected)
    if isinstance(expected, bool):
        expected = "yes" if expected else "no"
    a, b = _number(given), _number(str(expected))
    if a is not None and b is not None:
        return _numbers_match(a, b)
    return _words(given) == _words(str(expected)) and bool(_words(given))


_ONE_ANSWER = str | int | float  # bool is an int: true/false read as yes/no


def _prepare(reference: Any) -> Any:
    expected = reference_field(reference, "answer", '"42"')
    options = expected if isinstance(expected, list | tuple) else [expected]
    wrong = next((o for o in options if not isinstance(o, _ONE_ANSWER)), None)
    if wrong is not None:
        inside = " inside the list" if options is expected else ""
        raise ConfigError(
            'reference["answer"] must be a number, a string, true/false or a list of them, '
            f"got {type(wrong).__name__}{inside}"
        )
    return expected


_FEEDBACK_WORDING = re.compile(
    r"\bis wrong; recheck\b|\(read from (?:the last number|\\boxed|\"the answer is\"|\"####\")"
    r"|\bno final answer found\b|\bthe feedback\b|\bthe (?:previous|earlier|original) "
    r"(?:answer|solution|draft)\b",
    re.I,
)
_INSTRUCTION = re.compile(
    r"^\W*(?:re-?check|redo|re-?calculate|recompute|correct|fix|change|replace|update)\s+"
    r"(?:the|step|your|this|it)\b",
    re.I,
)


def _not_a_solution(draft: str) -> str | None:
    """What to fix when the draft talks about a solution instead of being one."""
    found = _FEEDBACK_WORDING.search(draft)
    if found:
        return (
            "Write the worked solution only, without remarks about answers or feedback "
            f'("{found.group(0)}").'
        )
    if _INSTRUCTION.match(draft):
        return "Write the worked solution itself, not an instruction about changing one."
    return None


def _judge(task: str, draft: str, expected: Any) -> Critique:
    problem = _not_a_solution(draft)
    if problem:
        return Critique(feedback=[problem], score=0.0)
    found = extract_answer(draft)
    if found is None:
        return Critique(
            feedback=['No final answer found: end with "The answer is <answer>."'], score=0.0
        )
    value, where = found
    if answers_match(value, expected):
        return Critique(score=1.0, done=True)
    if unreadable_number(value):
        return Critique(
            feedback=[
                f'The final answer "{value}" (read from {where}) is not one number: write '
                "it with digits alone (12345, 2.5), then recheck the steps that lead to it."
            ],
            score=0.0,
        )
    return Critique(
        feedback=[
            f'The final answer "{value}" (read from {where}) is wrong; '
            "recheck the steps that lead to it."
        ],
        score=0.0,
    )


ANSWER = BuiltinVerifier(
    name="answer",
    summary='the final answer equals reference["answer"] (numbers in any notation)',
    prepare=_prepare,
    judge=_judge,
)
