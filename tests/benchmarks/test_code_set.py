"""The code set's hidden tests see what its examples do not: for every reported function,
a plausible first draft (an edge of the spec missed, as small models miss them) passes
the example asserts its task shows and fails its hidden tests."""

from __future__ import annotations

import pytest

from benchmarks.quality.sets import make_set

NAIVE = {
    "mean": "def mean(numbers):\n    return sum(numbers) / len(numbers)",
    "median": (
        "def median(numbers):\n    values = sorted(numbers)\n    return values[len(values) // 2]"
    ),
    "most_frequent": "def most_frequent(items):\n    return max(set(items), key=items.count)",
    "capitalize_words": (
        "def capitalize_words(text):\n    return ' '.join(w.capitalize() for w in text.split())"
    ),
    "safe_divide": "def safe_divide(a, b):\n    return a / b",
    "count_words": "def count_words(text):\n    return len(text.split(' '))",
    "max_subarray_sum": (
        "def max_subarray_sum(numbers):\n    best = current = 0\n    for x in numbers:\n"
        "        current = max(0, current + x)\n        best = max(best, current)\n    return best"
    ),
    "rotate_right": (
        "def rotate_right(items, k):\n    k %= len(items)\n    return items[-k:] + items[:-k]"
    ),
    "to_binary": "def to_binary(n):\n    return bin(n)[2:]",
    "roman": (
        "def roman(n):\n    out = ''\n    for value, letter in ((1000, 'M'), (500, 'D'), "
        "(100, 'C'), (50, 'L'), (10, 'X'), (5, 'V'), (1, 'I')):\n"
        "        count, n = divmod(n, value)\n        out += letter * count\n    return out"
    ),
    "hms": (
        "def hms(seconds):\n    h, rest = divmod(seconds, 3600)\n    m, s = divmod(rest, 60)\n"
        "    return f'{h % 24}:{m:02d}:{s:02d}'"
    ),
    "is_anagram": "def is_anagram(a, b):\n    return sorted(a.lower()) == sorted(b.lower())",
    "first_unique": (
        "def first_unique(text):\n    for i, c in enumerate(text):\n"
        "        if text.count(c) == 1:\n            return i"
    ),
    "squash_spaces": (
        "import re\n\ndef squash_spaces(text):\n    return re.sub(' +', ' ', text).strip()"
    ),
    "pairs_with_sum": (
        "def pairs_with_sum(numbers, target):\n    seen, out = {}, []\n"
        "    for j, x in enumerate(numbers):\n        if target - x in seen:\n"
        "            out.append((seen[target - x], j))\n        seen[x] = j\n    return sorted(out)"
    ),
    "running_max": (
        "def running_max(numbers):\n    top, out = 0, []\n    for x in numbers:\n"
        "        top = max(top, x)\n        out.append(top)\n    return out"
    ),
    "product": (
        "from functools import reduce\n\ndef product(numbers):\n"
        "    return reduce(lambda a, b: a * b, numbers)"
    ),
    "longest_word": "def longest_word(text):\n    return max(text.split(), key=len)",
    "truncate": (
        "def truncate(text, width):\n"
        "    return text[:width - 3] + '...' if len(text) > width - 3 else text"
    ),
    "count_overlapping": "def count_overlapping(text, sub):\n    return text.count(sub)",
    "gcd_all": (
        "from functools import reduce\nfrom math import gcd\n\ndef gcd_all(numbers):\n"
        "    return reduce(gcd, numbers)"
    ),
    "snake_case": (
        "def snake_case(name):\n"
        "    return ''.join('_' + c.lower() if c.isupper() else c for c in name)"
    ),
    "dedupe_ignoring_case": (
        "def dedupe_ignoring_case(words):\n    out = []\n    for word in words:\n"
        "        if word not in out:\n            out.append(word)\n    return out"
    ),
    "transpose": (
        "def transpose(rows):\n    return [[row[i] for row in rows] for i in range(len(rows[0]))]"
    ),
    "balanced": (
        "def balanced(text):\n    return all(text.count(a) == text.count(b) "
        "for a, b in ('()', '[]', '{}'))"
    ),
    "ordinal": (
        "def ordinal(n):\n    return f\"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }\""
    ),
    "is_leap": "def is_leap(year):\n    return year % 4 == 0",
    "days_in_month": (
        "def days_in_month(year, month):\n    if month == 2:\n"
        "        return 29 if year % 4 == 0 else 28\n"
        "    return 30 if month in (4, 6, 9, 11) else 31"
    ),
    "flatten_all": (
        "def flatten_all(nested):\n"
        "    return [x for item in nested for x in (item if isinstance(item, list) else [item])]"
    ),
    "interleave": "def interleave(a, b):\n    return [x for pair in zip(a, b) for x in pair]",
    "ranges": (
        "def ranges(numbers):\n    parts = []\n    start = prev = numbers[0]\n"
        "    for x in numbers[1:] + [None]:\n        if x is not None and x == prev + 1:\n"
        "            prev = x\n            continue\n"
        "        parts.append(str(start) if start == prev else f'{start}-{prev}')\n"
        "        start = prev = x\n    return ','.join(parts)"
    ),
    "top_k": "def top_k(numbers, k):\n    return sorted(set(numbers), reverse=True)[:k]",
    "split_evenly": "def split_evenly(total, parts):\n    return [total // parts] * parts",
    "mask": "def mask(card):\n    return '*' * (len(card) - 4) + card[-4:]",
    "acronym": "def acronym(phrase):\n    return ''.join(w[0].upper() for w in phrase.split())",
    "digital_root": "def digital_root(n):\n    return n % 9",
    "fibonacci": (
        "def fibonacci(n):\n    root = 5 ** 0.5\n    return round(((1 + root) / 2) ** n / root)"
    ),
    "is_power_of_two": "def is_power_of_two(n):\n    return n & (n - 1) == 0",
    "count_upper": "def count_upper(text):\n    return sum('A' <= c <= 'Z' for c in text)",
    "common_prefix": (
        "def common_prefix(words):\n    for i, c in enumerate(words[0]):\n"
        "        for word in words[1:]:\n            if i >= len(word) or word[i] != c:\n"
        "                return words[0][:i]\n    return words[0]"
    ),
    "parse_ints": "def parse_ints(text):\n    return [int(x) for x in text.split(',')]",
    "format_thousands": (
        "def format_thousands(n):\n    digits, out = str(n), ''\n    while len(digits) > 3:\n"
        "        out = ',' + digits[-3:] + out\n        digits = digits[:-3]\n"
        "    return digits + out"
    ),
}


def test_every_reported_function_has_a_plausible_slip_its_examples_miss() -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    from self_refine.critics import judge_draft

    reported = [item for item in make_set("code", None, seed=2026) if item["split"] == "report"]
    names = [item["solution"].split("(")[0].removeprefix("def ") for item in reported]
    assert sorted(names) == sorted(NAIVE)
    for name, item in zip(names, reported, strict=True):
        draft = f"```python\n{NAIVE[name]}\n```"
        assert judge_draft(item["task"], draft, item["reference"], ["python_tests"]) is True, name
        assert judge_draft(item["task"], draft, item["grade"], ["python_tests"]) is False, name
