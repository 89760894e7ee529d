"""The quality benchmark's task sets, made here from a seed: `python -m benchmarks.quality.sets`.

Three sets, each item with an exact checker (a verifier of the project):
- constrained: 4-8 required words drawn from a word list (the `concepts` verifier,
  which accepts inflected forms);
- arithmetic: templated multi-step word problems with computed answers (`answer`);
- code: small Python functions from a spec, with hidden tests run in the sandbox
  (`python_tests`); each comes with a reference solution that passes its tests. There
  are 15 distinct functions, so this set never has more than 15 items.
Written to `benchmarks/quality/sets/*.jsonl`, one JSON object per line in the batch
input format (`id`, `task`, `reference`).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["DISTINCT", "SETS", "arithmetic", "code", "constrained", "make_set", "write_sets"]

HERE = Path(__file__).resolve().parent
SETS_DIR = HERE / "sets"

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
    return {"id": f"constrained-{index:03d}", "task": task, "reference": {"concepts": words}}


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


_PROBLEMS: tuple[Callable[[random.Random, str], tuple[str, int]], ...] = (
    _change,
    _boxes,
    _pages,
    _trip,
    _thirds,
)


def arithmetic(rng: random.Random, index: int) -> dict[str, Any]:
    """One templated multi-step word problem with its computed answer."""
    text, answer = _PROBLEMS[index % len(_PROBLEMS)](rng, rng.choice(NAMES))
    return {"id": f"arithmetic-{index:03d}", "task": text, "reference": {"answer": str(answer)}}


# (spec, reference solution, hidden tests); the function name is the first word after "def".
_FUNCTIONS: tuple[tuple[str, str, list[str]], ...] = (
    (
        "count_vowels(text) that returns how many vowels (a, e, i, o, u, either case) the "
        "string contains",
        "def count_vowels(text):\n    return sum(c in 'aeiouAEIOU' for c in text)",
        [
            "assert count_vowels('') == 0",
            "assert count_vowels('Banana') == 3",
            "assert count_vowels('xyz') == 0",
            "assert count_vowels('AEIOU aeiou') == 10",
        ],
    ),
    (
        "second_largest(numbers) that returns the second largest distinct value of a list "
        "of integers, or None when there is none",
        "def second_largest(numbers):\n    values = sorted(set(numbers))\n"
        "    return values[-2] if len(values) > 1 else None",
        [
            "assert second_largest([3, 1, 2]) == 2",
            "assert second_largest([5, 5, 5]) is None",
            "assert second_largest([]) is None",
            "assert second_largest([-1, -7, -1, 4]) == -1",
        ],
    ),
    (
        "is_palindrome(text) that returns True when the string reads the same backwards, "
        "ignoring case, spaces and punctuation",
        "def is_palindrome(text):\n    kept = [c.lower() for c in text if c.isalnum()]\n"
        "    return kept == kept[::-1]",
        [
            "assert is_palindrome('A man, a plan, a canal: Panama')",
            "assert not is_palindrome('hello')",
            "assert is_palindrome('')",
            "assert is_palindrome('No lemon, no melon')",
        ],
    ),
    (
        "run_lengths(text) that returns a list of (character, count) tuples for each run of "
        "equal consecutive characters",
        "def run_lengths(text):\n    out = []\n    for c in text:\n"
        "        if out and out[-1][0] == c:\n            out[-1] = (c, out[-1][1] + 1)\n"
        "        else:\n            out.append((c, 1))\n    return out",
        [
            "assert run_lengths('aaab') == [('a', 3), ('b', 1)]",
            "assert run_lengths('') == []",
            "assert run_lengths('abba') == [('a', 1), ('b', 2), ('a', 1)]",
        ],
    ),
    (
        "clamp(value, low, high) that returns value limited to the range low..high",
        "def clamp(value, low, high):\n    return max(low, min(high, value))",
        [
            "assert clamp(5, 0, 10) == 5",
            "assert clamp(-3, 0, 10) == 0",
            "assert clamp(12, 0, 10) == 10",
            "assert clamp(0, 0, 0) == 0",
        ],
    ),
    (
        "digit_sum(n) that returns the sum of the decimal digits of an integer (the sign is "
        "ignored)",
        "def digit_sum(n):\n    return sum(int(d) for d in str(abs(n)))",
        [
            "assert digit_sum(0) == 0",
            "assert digit_sum(1234) == 10",
            "assert digit_sum(-59) == 14",
        ],
    ),
    (
        "merge_sorted(a, b) that merges two sorted lists of integers into one sorted list",
        "def merge_sorted(a, b):\n    return sorted(a + b)",
        [
            "assert merge_sorted([1, 3], [2, 4]) == [1, 2, 3, 4]",
            "assert merge_sorted([], [5]) == [5]",
            "assert merge_sorted([1, 1], [1]) == [1, 1, 1]",
        ],
    ),
    (
        "word_count(text) that returns a dict mapping each lower-cased word (split on "
        "whitespace) to how often it occurs",
        "def word_count(text):\n    counts = {}\n    for word in text.lower().split():\n"
        "        counts[word] = counts.get(word, 0) + 1\n    return counts",
        [
            "assert word_count('a b a') == {'a': 2, 'b': 1}",
            "assert word_count('') == {}",
            "assert word_count('Go go GO') == {'go': 3}",
        ],
    ),
    (
        "fizzbuzz(n) that returns 'FizzBuzz' if n is divisible by 15, 'Fizz' if by 3, "
        "'Buzz' if by 5, and otherwise str(n)",
        "def fizzbuzz(n):\n    if n % 15 == 0:\n        return 'FizzBuzz'\n"
        "    if n % 3 == 0:\n        return 'Fizz'\n    if n % 5 == 0:\n        return 'Buzz'\n"
        "    return str(n)",
        [
            "assert fizzbuzz(15) == 'FizzBuzz'",
            "assert fizzbuzz(9) == 'Fizz'",
            "assert fizzbuzz(10) == 'Buzz'",
            "assert fizzbuzz(7) == '7'",
        ],
    ),
    (
        "chunk(items, size) that splits a list into consecutive lists of at most size items",
        "def chunk(items, size):\n"
        "    return [items[i:i + size] for i in range(0, len(items), size)]",
        [
            "assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]",
            "assert chunk([], 3) == []",
            "assert chunk([1, 2], 5) == [[1, 2]]",
        ],
    ),
    (
        "reverse_words(sentence) that returns the words of the sentence (split on whitespace) "
        "in reverse order, joined by single spaces",
        "def reverse_words(sentence):\n    return ' '.join(reversed(sentence.split()))",
        [
            "assert reverse_words('one two three') == 'three two one'",
            "assert reverse_words('') == ''",
            "assert reverse_words('  hello   world ') == 'world hello'",
        ],
    ),
    (
        "is_prime(n) that returns True when the integer n is a prime number and False "
        "otherwise (numbers below 2 are not prime)",
        "def is_prime(n):\n    if n < 2:\n        return False\n"
        "    return all(n % d for d in range(2, int(n ** 0.5) + 1))",
        [
            "assert is_prime(2) and is_prime(13) and is_prime(97)",
            "assert not is_prime(1) and not is_prime(0) and not is_prime(-7)",
            "assert not is_prime(91) and not is_prime(25)",
        ],
    ),
    (
        "flatten(nested) that turns a list of lists into one list with their items in order "
        "(one level deep)",
        "def flatten(nested):\n    return [item for inner in nested for item in inner]",
        [
            "assert flatten([[1, 2], [3], []]) == [1, 2, 3]",
            "assert flatten([]) == []",
            "assert flatten([['a'], ['b', ['c']]]) == ['a', 'b', ['c']]",
        ],
    ),
    (
        "unique_in_order(items) that returns the items of a list without repeats, each kept "
        "where it first occurs",
        "def unique_in_order(items):\n    seen = []\n    for item in items:\n"
        "        if item not in seen:\n            seen.append(item)\n    return seen",
        [
            "assert unique_in_order([3, 1, 3, 2, 1]) == [3, 1, 2]",
            "assert unique_in_order([]) == []",
            "assert unique_in_order(['b', 'a', 'b']) == ['b', 'a']",
        ],
    ),
    (
        "caesar_shift(text, k) that shifts every letter k places along the alphabet, "
        "wrapping from z to a and keeping upper or lower case; other characters stay as they "
        "are",
        "def caesar_shift(text, k):\n    out = []\n    for c in text:\n"
        "        if c.isalpha() and c.isascii():\n"
        "            base = ord('A') if c.isupper() else ord('a')\n"
        "            c = chr(base + (ord(c) - base + k) % 26)\n"
        "        out.append(c)\n    return ''.join(out)",
        [
            "assert caesar_shift('abc', 1) == 'bcd'",
            "assert caesar_shift('xyz', 3) == 'abc'",
            "assert caesar_shift('Hello, World!', 13) == 'Uryyb, Jbeyq!'",
            "assert caesar_shift('Same', 0) == 'Same'",
        ],
    ),
)


def code(rng: random.Random, index: int) -> dict[str, Any]:
    """One function spec with hidden tests (and the reference solution, for checking the set)."""
    spec, solution, tests = _FUNCTIONS[index % len(_FUNCTIONS)]
    task = f"Write a Python function {spec}."
    return {
        "id": f"code-{index:03d}",
        "task": task,
        "reference": {"tests": tests},
        "solution": solution,
    }


SETS: dict[str, Callable[[random.Random, int], dict[str, Any]]] = {
    "constrained": constrained,
    "arithmetic": arithmetic,
    "code": code,
}
PROFILE = {"constrained": "constrained_generation", "arithmetic": "math", "code": "python_function"}
VERIFIER = {"constrained": "concepts", "arithmetic": "answer", "code": "python_tests"}


DISTINCT = {"code": len(_FUNCTIONS)}
"""Sets with a fixed number of distinct items: asking for more gives no more."""


def make_set(name: str, n: int, seed: int) -> list[dict[str, Any]]:
    """Up to `n` items of one set (never a repeated item); the same seed gives the same items."""
    rng = random.Random(f"{name}-{seed}")
    return [SETS[name](rng, index) for index in range(min(n, DISTINCT.get(name, n)))]


def write_sets(n: int, seed: int, folder: Path = SETS_DIR) -> list[Path]:
    """Write every set as JSONL; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in SETS:
        path = folder / f"{name}.jsonl"
        lines = [json.dumps(item) for item in make_set(name, n, seed)]
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def main() -> None:
    """Write the sets from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30, help="items per set (default 30)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    for path in write_sets(args.n, args.seed):
        print(path)


if __name__ == "__main__":
    main()
