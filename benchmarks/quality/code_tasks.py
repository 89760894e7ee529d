"""The code set's functions: each a spec, a reference solution, the examples its task shows
and the hidden tests that grade it.

An entry is `(spec, solution, examples, hidden)`; the function's name is the spec's first
word. `examples` (two or three asserts) are written into the task text and are all a run
may check a draft against; `hidden` are edge cases the spec states but the examples do not
show (empty inputs, negatives, ties, unicode, large values), as MBPP+ and HumanEval+ grade.
`sets.py` adds the grading-only canary to every hidden test. `TUNING` were the set's first
15 functions (the ones earlier runs were tuned on); `REPORTED` are the 40 the figures report.
"""

from __future__ import annotations

__all__ = ["REPORTED", "TUNING", "Function"]

Function = tuple[str, str, list[str], list[str]]

TUNING: tuple[Function, ...] = (
    (
        "count_vowels(text) that returns how many vowels (a, e, i, o, u, either case) the "
        "string contains",
        "def count_vowels(text):\n    return sum(c in 'aeiouAEIOU' for c in text)",
        ["assert count_vowels('Banana') == 3", "assert count_vowels('xyz') == 0"],
        [
            "assert count_vowels('') == 0",
            "assert count_vowels('AEIOU aeiou') == 10",
            "assert count_vowels('yY') == 0",
        ],
    ),
    (
        "second_largest(numbers) that returns the second largest distinct value of a list "
        "of integers, or None when there is none",
        "def second_largest(numbers):\n    values = sorted(set(numbers))\n"
        "    return values[-2] if len(values) > 1 else None",
        ["assert second_largest([3, 1, 2]) == 2", "assert second_largest([10, 40, 30]) == 30"],
        [
            "assert second_largest([5, 5, 5]) is None",
            "assert second_largest([]) is None",
            "assert second_largest([-1, -7, -1, 4]) == -1",
            "assert second_largest([4, 4, 3]) == 3",
        ],
    ),
    (
        "is_palindrome(text) that returns True when the string reads the same backwards, "
        "ignoring case, spaces and punctuation",
        "def is_palindrome(text):\n    kept = [c.lower() for c in text if c.isalnum()]\n"
        "    return kept == kept[::-1]",
        ["assert is_palindrome('racecar')", "assert not is_palindrome('hello')"],
        [
            "assert is_palindrome('A man, a plan, a canal: Panama')",
            "assert is_palindrome('')",
            "assert is_palindrome('No lemon, no melon')",
            "assert not is_palindrome('ab, c')",
        ],
    ),
    (
        "run_lengths(text) that returns a list of (character, count) tuples for each run of "
        "equal consecutive characters",
        "def run_lengths(text):\n    out = []\n    for c in text:\n"
        "        if out and out[-1][0] == c:\n            out[-1] = (c, out[-1][1] + 1)\n"
        "        else:\n            out.append((c, 1))\n    return out",
        ["assert run_lengths('aaab') == [('a', 3), ('b', 1)]"],
        [
            "assert run_lengths('') == []",
            "assert run_lengths('abba') == [('a', 1), ('b', 2), ('a', 1)]",
            "assert run_lengths('zz') == [('z', 2)]",
        ],
    ),
    (
        "clamp(value, low, high) that returns value limited to the range low..high",
        "def clamp(value, low, high):\n    return max(low, min(high, value))",
        ["assert clamp(5, 0, 10) == 5", "assert clamp(12, 0, 10) == 10"],
        [
            "assert clamp(-3, 0, 10) == 0",
            "assert clamp(0, 0, 0) == 0",
            "assert clamp(-5, -10, -6) == -6",
        ],
    ),
    (
        "digit_sum(n) that returns the sum of the decimal digits of an integer (the sign is "
        "ignored)",
        "def digit_sum(n):\n    return sum(int(d) for d in str(abs(n)))",
        ["assert digit_sum(1234) == 10", "assert digit_sum(7) == 7"],
        [
            "assert digit_sum(0) == 0",
            "assert digit_sum(-59) == 14",
            "assert digit_sum(10 ** 30) == 1",
        ],
    ),
    (
        "merge_sorted(a, b) that merges two sorted lists of integers into one sorted list",
        "def merge_sorted(a, b):\n    return sorted(a + b)",
        ["assert merge_sorted([1, 3], [2, 4]) == [1, 2, 3, 4]"],
        [
            "assert merge_sorted([], [5]) == [5]",
            "assert merge_sorted([1, 1], [1]) == [1, 1, 1]",
            "assert merge_sorted([], []) == []",
            "assert merge_sorted([-3, 0], [-5, 9]) == [-5, -3, 0, 9]",
        ],
    ),
    (
        "word_count(text) that returns a dict mapping each lower-cased word (split on "
        "whitespace) to how often it occurs",
        "def word_count(text):\n    counts = {}\n    for word in text.lower().split():\n"
        "        counts[word] = counts.get(word, 0) + 1\n    return counts",
        ["assert word_count('a b a') == {'a': 2, 'b': 1}"],
        [
            "assert word_count('') == {}",
            "assert word_count('Go go GO') == {'go': 3}",
            "assert word_count(' x\\ty\\nx ') == {'x': 2, 'y': 1}",
        ],
    ),
    (
        "fizzbuzz(n) that returns 'FizzBuzz' if n is divisible by 15, 'Fizz' if by 3, "
        "'Buzz' if by 5, and otherwise str(n)",
        "def fizzbuzz(n):\n    if n % 15 == 0:\n        return 'FizzBuzz'\n"
        "    if n % 3 == 0:\n        return 'Fizz'\n    if n % 5 == 0:\n        return 'Buzz'\n"
        "    return str(n)",
        ["assert fizzbuzz(9) == 'Fizz'", "assert fizzbuzz(7) == '7'"],
        [
            "assert fizzbuzz(15) == 'FizzBuzz'",
            "assert fizzbuzz(10) == 'Buzz'",
            "assert fizzbuzz(0) == 'FizzBuzz'",
            "assert fizzbuzz(-3) == 'Fizz'",
        ],
    ),
    (
        "chunk(items, size) that splits a list into consecutive lists of at most size items",
        "def chunk(items, size):\n"
        "    return [items[i:i + size] for i in range(0, len(items), size)]",
        ["assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]"],
        [
            "assert chunk([], 3) == []",
            "assert chunk([1, 2], 5) == [[1, 2]]",
            "assert chunk([1, 2, 3], 1) == [[1], [2], [3]]",
        ],
    ),
    (
        "reverse_words(sentence) that returns the words of the sentence (split on whitespace) "
        "in reverse order, joined by single spaces",
        "def reverse_words(sentence):\n    return ' '.join(reversed(sentence.split()))",
        ["assert reverse_words('one two three') == 'three two one'"],
        [
            "assert reverse_words('') == ''",
            "assert reverse_words('  hello   world ') == 'world hello'",
            "assert reverse_words('solo') == 'solo'",
        ],
    ),
    (
        "is_prime(n) that returns True when the integer n is a prime number and False "
        "otherwise (numbers below 2 are not prime)",
        "def is_prime(n):\n    if n < 2:\n        return False\n"
        "    return all(n % d for d in range(2, int(n ** 0.5) + 1))",
        ["assert is_prime(13)", "assert not is_prime(91)"],
        [
            "assert is_prime(2) and is_prime(97)",
            "assert not is_prime(1) and not is_prime(0) and not is_prime(-7)",
            "assert not is_prime(25) and not is_prime(49)",
        ],
    ),
    (
        "flatten(nested) that turns a list of lists into one list with their items in order "
        "(one level deep)",
        "def flatten(nested):\n    return [item for inner in nested for item in inner]",
        ["assert flatten([[1, 2], [3]]) == [1, 2, 3]"],
        [
            "assert flatten([]) == []",
            "assert flatten([[1], [], [2]]) == [1, 2]",
            "assert flatten([['a'], ['b', ['c']]]) == ['a', 'b', ['c']]",
        ],
    ),
    (
        "unique_in_order(items) that returns the items of a list without repeats, each kept "
        "where it first occurs",
        "def unique_in_order(items):\n    seen = []\n    for item in items:\n"
        "        if item not in seen:\n            seen.append(item)\n    return seen",
        ["assert unique_in_order([3, 1, 3, 2, 1]) == [3, 1, 2]"],
        [
            "assert unique_in_order([]) == []",
            "assert unique_in_order(['b', 'a', 'b']) == ['b', 'a']",
            "assert unique_in_order([2, 2, 2]) == [2]",
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
        ["assert caesar_shift('abc', 1) == 'bcd'", "assert caesar_shift('Same', 0) == 'Same'"],
        [
            "assert caesar_shift('xyz', 3) == 'abc'",
            "assert caesar_shift('Hello, World!', 13) == 'Uryyb, Jbeyq!'",
            "assert caesar_shift('abc', -1) == 'zab'",
            "assert caesar_shift('abc', 27) == 'bcd'",
        ],
    ),
)

REPORTED: tuple[Function, ...] = (
    (
        "mean(numbers) that returns the arithmetic mean of a list of numbers, or None for an "
        "empty list",
        "def mean(numbers):\n    return sum(numbers) / len(numbers) if numbers else None",
        ["assert mean([1, 2, 3]) == 2", "assert mean([4]) == 4"],
        [
            "assert mean([]) is None",
            "assert mean([-2, 2]) == 0",
            "assert mean([1, 2]) == 1.5",
        ],
    ),
    (
        "median(numbers) that returns the median of an unsorted list of numbers (the mean of "
        "the two middle values when the count is even), or None for an empty list",
        "def median(numbers):\n    if not numbers:\n        return None\n"
        "    values = sorted(numbers)\n    middle = len(values) // 2\n"
        "    if len(values) % 2:\n        return values[middle]\n"
        "    return (values[middle - 1] + values[middle]) / 2",
        ["assert median([3, 1, 2]) == 2", "assert median([5]) == 5"],
        [
            "assert median([4, 1, 3, 2]) == 2.5",
            "assert median([]) is None",
            "assert median([9, -1, 5]) == 5",
            "assert median([2, 2, 8, 8]) == 5",
        ],
    ),
    (
        "most_frequent(items) that returns the item occurring most often in a list; on a tie, "
        "the one whose first occurrence comes first; None for an empty list",
        "def most_frequent(items):\n    best, best_count = None, 0\n    for item in items:\n"
        "        count = items.count(item)\n        if count > best_count:\n"
        "            best, best_count = item, count\n    return best",
        [
            "assert most_frequent([1, 2, 2, 3]) == 2",
            "assert most_frequent(['a', 'b', 'a']) == 'a'",
        ],
        [
            "assert most_frequent([]) is None",
            "assert most_frequent([3, 1, 1, 3]) == 3",
            "assert most_frequent(['y', 'x', 'x', 'y', 'z']) == 'y'",
        ],
    ),
    (
        "capitalize_words(text) that upper-cases the first letter of every word and "
        "lower-cases the rest of it, keeping all the whitespace between words exactly as it is",
        "def capitalize_words(text):\n    out, start = [], True\n    for c in text:\n"
        "        out.append(c.upper() if start else c.lower())\n        start = c.isspace()\n"
        "    return ''.join(out)",
        [
            "assert capitalize_words('hello world') == 'Hello World'",
            "assert capitalize_words('pYTHON') == 'Python'",
        ],
        [
            "assert capitalize_words('  two  spaces ') == '  Two  Spaces '",
            "assert capitalize_words('') == ''",
            "assert capitalize_words('ÉCOLE über') == 'École Über'",
            "assert capitalize_words('a\\tb') == 'A\\tB'",
        ],
    ),
    (
        "safe_divide(a, b) that returns a / b, or None when b is zero",
        "def safe_divide(a, b):\n    return None if b == 0 else a / b",
        ["assert safe_divide(10, 4) == 2.5", "assert safe_divide(9, 3) == 3"],
        [
            "assert safe_divide(1, 0) is None",
            "assert safe_divide(0, 0) is None",
            "assert safe_divide(0, 5) == 0",
            "assert safe_divide(-9, 3) == -3",
        ],
    ),
    (
        "count_words(text) that returns how many words the text has, words being separated "
        "by any run of whitespace (spaces, tabs, newlines)",
        "def count_words(text):\n    return len(text.split())",
        ["assert count_words('the quick fox') == 3", "assert count_words('one') == 1"],
        [
            "assert count_words('') == 0",
            "assert count_words('   ') == 0",
            "assert count_words(' a\\tb\\n\\nc ') == 3",
        ],
    ),
    (
        "max_subarray_sum(numbers) that returns the largest sum of a non-empty run of "
        "consecutive items of a list of integers, or 0 for an empty list",
        "def max_subarray_sum(numbers):\n    if not numbers:\n        return 0\n"
        "    best = current = numbers[0]\n    for x in numbers[1:]:\n"
        "        current = max(x, current + x)\n        best = max(best, current)\n"
        "    return best",
        [
            "assert max_subarray_sum([1, -2, 3, 4]) == 7",
            "assert max_subarray_sum([2, 3]) == 5",
        ],
        [
            "assert max_subarray_sum([-3, -1, -2]) == -1",
            "assert max_subarray_sum([]) == 0",
            "assert max_subarray_sum([-1]) == -1",
            "assert max_subarray_sum([5, -9, 6]) == 6",
        ],
    ),
    (
        "rotate_right(items, k) that rotates a list k places to the right (a negative k "
        "rotates left; k may exceed the length; an empty list stays empty)",
        "def rotate_right(items, k):\n    if not items:\n        return []\n"
        "    k %= len(items)\n    return items[-k:] + items[:-k] if k else list(items)",
        [
            "assert rotate_right([1, 2, 3, 4], 1) == [4, 1, 2, 3]",
            "assert rotate_right([1, 2, 3], 2) == [2, 3, 1]",
        ],
        [
            "assert rotate_right([1, 2, 3], 4) == [3, 1, 2]",
            "assert rotate_right([1, 2, 3], -1) == [2, 3, 1]",
            "assert rotate_right([], 3) == []",
            "assert rotate_right([1, 2], 0) == [1, 2]",
        ],
    ),
    (
        "to_binary(n) that returns the binary digits of an integer as a string without any "
        "prefix: '0' for zero and a leading '-' for a negative number",
        "def to_binary(n):\n    return ('-' if n < 0 else '') + format(abs(n), 'b')",
        ["assert to_binary(5) == '101'", "assert to_binary(8) == '1000'"],
        [
            "assert to_binary(0) == '0'",
            "assert to_binary(-6) == '-110'",
            "assert to_binary(2 ** 40) == '1' + '0' * 40",
        ],
    ),
    (
        "roman(n) that returns the Roman numeral for an integer from 1 to 3999, using "
        "subtractive forms such as IV and CM",
        "def roman(n):\n    parts = []\n    for value, letters in ((1000, 'M'), (900, 'CM'), "
        "(500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'), (40, 'XL'), (10, 'X'), "
        "(9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')):\n        count, n = divmod(n, value)\n"
        "        parts.append(letters * count)\n    return ''.join(parts)",
        ["assert roman(3) == 'III'", "assert roman(12) == 'XII'"],
        [
            "assert roman(4) == 'IV'",
            "assert roman(1994) == 'MCMXCIV'",
            "assert roman(3999) == 'MMMCMXCIX'",
            "assert roman(40) == 'XL'",
        ],
    ),
    (
        "hms(seconds) that formats a whole number of seconds as 'H:MM:SS' (hours not padded "
        "and not wrapped at 24)",
        "def hms(seconds):\n    hours, rest = divmod(seconds, 3600)\n"
        "    minutes, secs = divmod(rest, 60)\n    return f'{hours}:{minutes:02d}:{secs:02d}'",
        ["assert hms(3661) == '1:01:01'", "assert hms(59) == '0:00:59'"],
        [
            "assert hms(0) == '0:00:00'",
            "assert hms(86400) == '24:00:00'",
            "assert hms(360000) == '100:00:00'",
        ],
    ),
    (
        "is_anagram(a, b) that returns True when the two strings use the same letters the same "
        "number of times, ignoring case and spaces",
        "def is_anagram(a, b):\n    def key(s):\n"
        "        return sorted(s.replace(' ', '').lower())\n    return key(a) == key(b)",
        ["assert is_anagram('listen', 'silent')", "assert not is_anagram('abc', 'abd')"],
        [
            "assert is_anagram('Dormitory', 'dirty room')",
            "assert not is_anagram('aab', 'abb')",
            "assert is_anagram('', '')",
            "assert not is_anagram('ab', 'abc')",
        ],
    ),
    (
        "first_unique(text) that returns the index of the first character that occurs exactly "
        "once in the string (case-sensitive), or -1 when there is none",
        "def first_unique(text):\n    for i, c in enumerate(text):\n"
        "        if text.count(c) == 1:\n            return i\n    return -1",
        ["assert first_unique('leetcode') == 0", "assert first_unique('loveleetcode') == 2"],
        [
            "assert first_unique('') == -1",
            "assert first_unique('aabb') == -1",
            "assert first_unique('aA') == 0",
            "assert first_unique('xxy') == 2",
        ],
    ),
    (
        "squash_spaces(text) that replaces every run of whitespace (spaces, tabs, newlines) "
        "with one space and removes whitespace at both ends",
        "def squash_spaces(text):\n    return ' '.join(text.split())",
        ["assert squash_spaces('a  b') == 'a b'", "assert squash_spaces('x y') == 'x y'"],
        [
            "assert squash_spaces('  a \\t\\n b  ') == 'a b'",
            "assert squash_spaces('') == ''",
            "assert squash_spaces('   ') == ''",
        ],
    ),
    (
        "pairs_with_sum(numbers, target) that returns every index pair (i, j) with i < j and "
        "numbers[i] + numbers[j] == target, as a list of tuples ordered by i then j",
        "def pairs_with_sum(numbers, target):\n"
        "    return [(i, j) for i in range(len(numbers)) for j in range(i + 1, len(numbers))\n"
        "            if numbers[i] + numbers[j] == target]",
        [
            "assert pairs_with_sum([1, 2, 3, 4], 5) == [(0, 3), (1, 2)]",
            "assert pairs_with_sum([1, 2], 9) == []",
        ],
        [
            "assert pairs_with_sum([2, 2, 2], 4) == [(0, 1), (0, 2), (1, 2)]",
            "assert pairs_with_sum([], 0) == []",
            "assert pairs_with_sum([-1, 1, 0], 0) == [(0, 1)]",
            "assert pairs_with_sum([3], 6) == []",
        ],
    ),
    (
        "running_max(numbers) that returns a list whose i-th item is the largest of the "
        "first i+1 numbers",
        "def running_max(numbers):\n    out = []\n    for x in numbers:\n"
        "        out.append(x if not out else max(out[-1], x))\n    return out",
        ["assert running_max([1, 3, 2, 5]) == [1, 3, 3, 5]"],
        [
            "assert running_max([]) == []",
            "assert running_max([-5, -7, -2]) == [-5, -5, -2]",
            "assert running_max([4, 4]) == [4, 4]",
        ],
    ),
    (
        "product(numbers) that returns the product of a list of numbers (1 for an empty list)",
        "def product(numbers):\n    result = 1\n    for x in numbers:\n        result *= x\n"
        "    return result",
        ["assert product([2, 3, 4]) == 24", "assert product([5]) == 5"],
        [
            "assert product([]) == 1",
            "assert product([-2, 3]) == -6",
            "assert product([7, 0, 9]) == 0",
            "assert product([10] * 25) == 10 ** 25",
        ],
    ),
    (
        "longest_word(text) that returns the longest whitespace-separated word of the text "
        "(the first one on a tie), or '' when the text has no words",
        "def longest_word(text):\n    best = ''\n    for word in text.split():\n"
        "        if len(word) > len(best):\n            best = word\n    return best",
        ["assert longest_word('a quick fox') == 'quick'"],
        [
            "assert longest_word('') == ''",
            "assert longest_word('cat dog') == 'cat'",
            "assert longest_word('  hi\\tthere  ') == 'there'",
        ],
    ),
    (
        "truncate(text, width) that returns the text unchanged when it has at most width "
        "characters, else its first width-3 characters followed by '...' (width is at least 3)",
        "def truncate(text, width):\n"
        "    return text if len(text) <= width else text[:width - 3] + '...'",
        ["assert truncate('hello world', 8) == 'hello...'", "assert truncate('hi', 5) == 'hi'"],
        [
            "assert truncate('abc', 3) == 'abc'",
            "assert truncate('abcd', 3) == '...'",
            "assert truncate('exact', 5) == 'exact'",
            "assert truncate('', 4) == ''",
        ],
    ),
    (
        "count_overlapping(text, sub) that counts the occurrences of a non-empty substring, "
        "overlapping ones included",
        "def count_overlapping(text, sub):\n"
        "    return sum(text.startswith(sub, i) for i in range(len(text)))",
        [
            "assert count_overlapping('hello', 'l') == 2",
            "assert count_overlapping('abc', 'd') == 0",
        ],
        [
            "assert count_overlapping('aaaa', 'aa') == 3",
            "assert count_overlapping('banana', 'ana') == 2",
            "assert count_overlapping('', 'a') == 0",
        ],
    ),
    (
        "gcd_all(numbers) that returns the greatest common divisor of a list of integers "
        "(always non-negative; 0 for an empty list or a list of zeros)",
        "def gcd_all(numbers):\n    import math\n    result = 0\n    for x in numbers:\n"
        "        result = math.gcd(result, x)\n    return result",
        ["assert gcd_all([12, 18]) == 6", "assert gcd_all([7, 14, 21]) == 7"],
        [
            "assert gcd_all([]) == 0",
            "assert gcd_all([0, 0]) == 0",
            "assert gcd_all([-4, 6]) == 2",
            "assert gcd_all([0, 5]) == 5",
        ],
    ),
    (
        "snake_case(name) that turns a camelCase or PascalCase identifier into snake_case: "
        "an underscore goes before each upper-case letter that follows a lower-case letter or "
        "a digit, and everything is lower-cased",
        "def snake_case(name):\n    out = []\n    for i, c in enumerate(name):\n"
        "        if c.isupper() and i and (name[i - 1].islower() or name[i - 1].isdigit()):\n"
        "            out.append('_')\n        out.append(c.lower())\n    return ''.join(out)",
        [
            "assert snake_case('camelCase') == 'camel_case'",
            "assert snake_case('simple') == 'simple'",
        ],
        [
            "assert snake_case('PascalCase') == 'pascal_case'",
            "assert snake_case('version2Update') == 'version2_update'",
            "assert snake_case('') == ''",
            "assert snake_case('getHTTP') == 'get_http'",
        ],
    ),
    (
        "dedupe_ignoring_case(words) that drops every word equal, ignoring case, to an earlier "
        "one, keeping the first spelling and the order",
        "def dedupe_ignoring_case(words):\n    seen, out = set(), []\n    for word in words:\n"
        "        if word.lower() not in seen:\n            seen.add(word.lower())\n"
        "            out.append(word)\n    return out",
        ["assert dedupe_ignoring_case(['a', 'b', 'a']) == ['a', 'b']"],
        [
            "assert dedupe_ignoring_case(['Apple', 'apple', 'APPLE']) == ['Apple']",
            "assert dedupe_ignoring_case([]) == []",
            "assert dedupe_ignoring_case(['b', 'A', 'a', 'B']) == ['b', 'A']",
        ],
    ),
    (
        "transpose(rows) that transposes a matrix given as a list of equal-length rows "
        "(an empty matrix gives [])",
        "def transpose(rows):\n    return [list(column) for column in zip(*rows)]",
        ["assert transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]"],
        [
            "assert transpose([]) == []",
            "assert transpose([[1, 2, 3]]) == [[1], [2], [3]]",
            "assert transpose([[1], [2]]) == [[1, 2]]",
        ],
    ),
    (
        "balanced(text) that returns True when the brackets (), [] and {} in the text are "
        "balanced and properly nested; other characters are ignored",
        "def balanced(text):\n    pairs, stack = {')': '(', ']': '[', '}': '{'}, []\n"
        "    for c in text:\n        if c in '([{':\n            stack.append(c)\n"
        "        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:\n"
        "                return False\n    return not stack",
        ["assert balanced('([]{})')", "assert not balanced('(]')"],
        [
            "assert balanced('')",
            "assert not balanced('(((')",
            "assert not balanced(')(')",
            "assert not balanced('([)]')",
            "assert balanced('a(b)c')",
        ],
    ),
    (
        "ordinal(n) that returns a non-negative integer with its English ordinal suffix, such "
        "as '1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st'",
        "def ordinal(n):\n    if n % 100 in (11, 12, 13):\n        return f'{n}th'\n"
        "    return f\"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }\"",
        ["assert ordinal(1) == '1st'", "assert ordinal(2) == '2nd'", "assert ordinal(4) == '4th'"],
        [
            "assert ordinal(11) == '11th'",
            "assert ordinal(112) == '112th'",
            "assert ordinal(23) == '23rd'",
            "assert ordinal(0) == '0th'",
        ],
    ),
    (
        "is_leap(year) that returns True for a leap year of the Gregorian calendar",
        "def is_leap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        ["assert is_leap(2024)", "assert not is_leap(2023)"],
        ["assert not is_leap(1900)", "assert is_leap(2000)", "assert not is_leap(2100)"],
    ),
    (
        "days_in_month(year, month) that returns the number of days in a month (1-12) of a "
        "year of the Gregorian calendar",
        "def days_in_month(year, month):\n    if month == 2:\n"
        "        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"
        "        return 29 if leap else 28\n    return 30 if month in (4, 6, 9, 11) else 31",
        ["assert days_in_month(2023, 1) == 31", "assert days_in_month(2023, 4) == 30"],
        [
            "assert days_in_month(2024, 2) == 29",
            "assert days_in_month(1900, 2) == 28",
            "assert days_in_month(2000, 2) == 29",
            "assert days_in_month(2023, 12) == 31",
        ],
    ),
    (
        "flatten_all(nested) that flattens arbitrarily nested lists into one flat list in "
        "order (strings are items, not lists)",
        "def flatten_all(nested):\n    out = []\n    for item in nested:\n"
        "        if isinstance(item, list):\n            out.extend(flatten_all(item))\n"
        "        else:\n            out.append(item)\n    return out",
        ["assert flatten_all([1, [2, 3]]) == [1, 2, 3]"],
        [
            "assert flatten_all([[[]]]) == []",
            "assert flatten_all([1, [2, [3, [4]]]]) == [1, 2, 3, 4]",
            "assert flatten_all(['ab', ['c']]) == ['ab', 'c']",
        ],
    ),
    (
        "interleave(a, b) that alternates the items of two lists, starting with a, and "
        "appends what is left of the longer one",
        "def interleave(a, b):\n    out = []\n    for i in range(max(len(a), len(b))):\n"
        "        if i < len(a):\n            out.append(a[i])\n        if i < len(b):\n"
        "            out.append(b[i])\n    return out",
        ["assert interleave([1, 3], [2, 4]) == [1, 2, 3, 4]"],
        [
            "assert interleave([1, 2, 3], ['x']) == [1, 'x', 2, 3]",
            "assert interleave([], [5, 6]) == [5, 6]",
            "assert interleave([], []) == []",
        ],
    ),
    (
        "ranges(numbers) that writes a sorted list of distinct integers as comma-separated "
        "ranges, such as '1-3,5,7-8' for [1, 2, 3, 5, 7, 8]",
        "def ranges(numbers):\n    parts, i = [], 0\n    while i < len(numbers):\n"
        "        j = i\n        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:\n"
        "            j += 1\n"
        "        parts.append(str(numbers[i]) if i == j else f'{numbers[i]}-{numbers[j]}')\n"
        "        i = j + 1\n    return ','.join(parts)",
        ["assert ranges([1, 2, 3, 5, 7, 8]) == '1-3,5,7-8'", "assert ranges([4]) == '4'"],
        [
            "assert ranges([]) == ''",
            "assert ranges([-3, -2, -1, 1]) == '-3--1,1'",
            "assert ranges([1, 3, 5]) == '1,3,5'",
        ],
    ),
    (
        "top_k(numbers, k) that returns the k largest numbers in descending order (all of them "
        "when k exceeds the count, [] when k is 0 or less)",
        "def top_k(numbers, k):\n    return sorted(numbers, reverse=True)[:max(k, 0)]",
        ["assert top_k([5, 1, 9, 3], 2) == [9, 5]", "assert top_k([2, 8], 1) == [8]"],
        [
            "assert top_k([1, 2], 0) == []",
            "assert top_k([1, 2], 5) == [2, 1]",
            "assert top_k([3, 3, 1], 2) == [3, 3]",
            "assert top_k([4], -1) == []",
        ],
    ),
    (
        "split_evenly(total, parts) that splits a non-negative integer into a list of parts "
        "integers as equal as possible, larger ones first, summing to total",
        "def split_evenly(total, parts):\n    size, extra = divmod(total, parts)\n"
        "    return [size + 1] * extra + [size] * (parts - extra)",
        ["assert split_evenly(10, 2) == [5, 5]", "assert split_evenly(9, 3) == [3, 3, 3]"],
        [
            "assert split_evenly(10, 3) == [4, 3, 3]",
            "assert split_evenly(2, 4) == [1, 1, 0, 0]",
            "assert split_evenly(0, 2) == [0, 0]",
        ],
    ),
    (
        "mask(card) that replaces every digit of a card number but its last four digits "
        "with '*', leaving the other characters (spaces, dashes) as they are",
        "def mask(card):\n    digits = sum(c.isdigit() for c in card)\n    out, seen = [], 0\n"
        "    for c in card:\n        if c.isdigit():\n            seen += 1\n"
        "            c = '*' if seen <= digits - 4 else c\n        out.append(c)\n"
        "    return ''.join(out)",
        ["assert mask('1234567890') == '******7890'", "assert mask('12345') == '*2345'"],
        [
            "assert mask('1234 5678 9012 3456') == '**** **** **** 3456'",
            "assert mask('12-34') == '12-34'",
            "assert mask('') == ''",
        ],
    ),
    (
        "acronym(phrase) that returns the upper-cased first letters of the words of a phrase, "
        "words being separated by spaces or hyphens",
        "def acronym(phrase):\n"
        "    return ''.join(word[0].upper() for word in phrase.replace('-', ' ').split())",
        ["assert acronym('portable network graphics') == 'PNG'"],
        [
            "assert acronym('complementary metal-oxide semiconductor') == 'CMOS'",
            "assert acronym('') == ''",
            "assert acronym('  as   soon as possible ') == 'ASAP'",
        ],
    ),
    (
        "digital_root(n) that sums the decimal digits of a non-negative integer again and "
        "again until one digit is left",
        "def digital_root(n):\n    while n >= 10:\n        n = sum(int(d) for d in str(n))\n"
        "    return n",
        ["assert digital_root(38) == 2", "assert digital_root(5) == 5"],
        [
            "assert digital_root(0) == 0",
            "assert digital_root(999999999999) == 9",
            "assert digital_root(10) == 1",
        ],
    ),
    (
        "fibonacci(n) that returns the n-th Fibonacci number, fibonacci(0) being 0 and "
        "fibonacci(1) being 1, exactly and quickly for n up to 200",
        "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
        "    return a",
        ["assert fibonacci(6) == 8", "assert fibonacci(10) == 55"],
        [
            "assert fibonacci(0) == 0",
            "assert fibonacci(1) == 1",
            "assert fibonacci(90) == 2880067194370816120",
            "assert fibonacci(200) == 280571172992510140037611932413038677189525",
        ],
    ),
    (
        "is_power_of_two(n) that returns True when the integer n is 2 raised to a "
        "non-negative whole power",
        "def is_power_of_two(n):\n    return n > 0 and n & (n - 1) == 0",
        ["assert is_power_of_two(8)", "assert not is_power_of_two(6)"],
        [
            "assert is_power_of_two(1)",
            "assert not is_power_of_two(0)",
            "assert not is_power_of_two(-8)",
            "assert is_power_of_two(2 ** 70)",
        ],
    ),
    (
        "count_upper(text) that counts the upper-case letters of a string, in any alphabet",
        "def count_upper(text):\n    return sum(c.isupper() for c in text)",
        ["assert count_upper('Hello World') == 2", "assert count_upper('abc') == 0"],
        [
            "assert count_upper('ÉÇÀ') == 3",
            "assert count_upper('') == 0",
            "assert count_upper('ΑΒγ 123') == 2",
        ],
    ),
    (
        "common_prefix(words) that returns the longest prefix shared by every string of a "
        "list ('' for an empty list)",
        "def common_prefix(words):\n    if not words:\n        return ''\n"
        "    prefix = words[0]\n    for word in words[1:]:\n"
        "        while not word.startswith(prefix):\n            prefix = prefix[:-1]\n"
        "    return prefix",
        [
            "assert common_prefix(['flower', 'flow', 'flight']) == 'fl'",
            "assert common_prefix(['dog', 'cat']) == ''",
        ],
        [
            "assert common_prefix([]) == ''",
            "assert common_prefix(['alone']) == 'alone'",
            "assert common_prefix(['', 'abc']) == ''",
            "assert common_prefix(['ab', 'abc']) == 'ab'",
        ],
    ),
    (
        "parse_ints(text) that reads comma-separated integers, each possibly negative and "
        "surrounded by spaces, into a list ([] for a blank text)",
        "def parse_ints(text):\n"
        "    return [int(part) for part in text.split(',')] if text.strip() else []",
        ["assert parse_ints('1,2,3') == [1, 2, 3]", "assert parse_ints('7') == [7]"],
        [
            "assert parse_ints('') == []",
            "assert parse_ints(' -4 , 5 ') == [-4, 5]",
            "assert parse_ints('   ') == []",
        ],
    ),
    (
        "format_thousands(n) that writes an integer with a comma between each group of three "
        "digits, such as '1,234,567'",
        "def format_thousands(n):\n    return f'{n:,}'",
        [
            "assert format_thousands(1234567) == '1,234,567'",
            "assert format_thousands(1000) == '1,000'",
        ],
        [
            "assert format_thousands(-1234567) == '-1,234,567'",
            "assert format_thousands(0) == '0'",
            "assert format_thousands(999) == '999'",
            "assert format_thousands(-100) == '-100'",
        ],
    ),
)
