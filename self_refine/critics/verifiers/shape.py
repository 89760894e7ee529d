"""The shape of a written answer: what a text must be besides holding the right words.

A check that only looks for words can be passed without doing the task: the words
as a list ("Train, pencil, compass, river."), each word opening a clause of its own
("Pillow stands tall, mountain is high, ladder is long, ..."), each word given a
clause that says what it is ("A tower is a building, a beach is a shore, and a
fountain is a fountain."), one word said to be another ("The compass is a river."),
fragments strung
together with commas ("Jacket covers island, scarf covers fountain, island perfect
for coffee shop, ..."), sentences laid out as list items ("- The library was ..."),
more sentences than the task asks for, an instruction about the text instead of the
text ("Add compass to train the pencil on the river."), or remarks about the text,
the way feedback talks ("The text is fluent because it uses all the words."). Each
function here finds one of these and returns what to fix, in words a small model
can act on; `shape_problems` runs them all. They read the text only, never a model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

__all__ = [
    "definitions",
    "edit_instruction",
    "equated_words",
    "list_items",
    "remarks_about_text",
    "sentence_limit",
    "sentences",
    "shape_problems",
    "strung_fragments",
    "too_many_sentences",
    "word_list",
]

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_COUNT = r"(?:a|an|one|two|three|four|five|six|\d{1,2})"
_LIMIT = re.compile(
    rf"\b(?:(?:at most|up to|no more than)\s+)?(?P<low>{_COUNT})"
    rf"(?:\s*(?:or|to|-|\u2013)\s*(?P<high>{_COUNT}))?\s+(?:[a-z]+\s+){{0,2}}?sentences?\b",
    re.I,
)
_NAMES = ("one", "two", "three", "four", "five", "six")


def sentence_limit(task: str) -> int | None:
    """The most sentences the task asks for ("one or two sentences": 2), None when it says none."""
    found = _LIMIT.search(task)
    if found is None:
        return None
    word = (found.group("high") or found.group("low")).lower()
    return int(word) if word.isdigit() else _NAMES.index(word) + 1 if word in _NAMES else 1


_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*\u2022]|[a-z][.)])\s+", re.I | re.M)
_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)]*\s+|\n+")
_LETTER = re.compile(r"[^\W\d_]")


def sentences(text: str) -> list[str]:
    """The sentences of a text: split after . ! ? and at line breaks; a list item is one."""
    unlisted = _ITEM.sub("", text)
    return [part.strip() for part in _END.split(unlisted) if _LETTER.search(part)]


def too_many_sentences(task: str, text: str) -> str | None:
    """What to fix when the text has more sentences (or list items) than the task asks for."""
    limit = sentence_limit(task)
    if limit is None:
        return None
    count = len(sentences(text))
    if count <= limit:
        return None
    allowed = "one sentence" if limit == 1 else f"at most {_spelled(limit)} sentences"
    listed = (
        " (a numbered or bulleted list counts one sentence per item)" if _ITEM.search(text) else ""
    )
    return f"Write {allowed}, as the task asks: the text has {count}{listed}."


def _spelled(number: int) -> str:
    return _NAMES[number - 1] if 0 < number <= len(_NAMES) else str(number)


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_SEGMENT = re.compile(
    r"[,;:\n()\[\]]+|\s+(?:and|or|&)\s+|\s+-\s+|\.\s+|^\s*(?:\d+[.)]|[-*\u2022])\s+", re.I | re.M
)
_FILLER = frozenset(
    "a an the and or of in on at to by for with from into onto is are was were be been "
    "this that these those some any my your his her its their our there here it".split()
)
Matcher = Callable[[str], bool]


def _content(segment: str) -> list[str]:
    return [w for w in _WORD.findall(segment.lower()) if w not in _FILLER]


def word_list(
    text: str, concepts: Sequence[str], matches: Callable[[str, str], bool]
) -> str | None:
    """What to fix when the text lists the words instead of using them in sentences.

    Two signs, counted over the text's parts between commas, semicolons, colons, line
    breaks and "and": three or more words listed (parts that hold nothing but required
    words and small words such as articles: "a pencil, a compass, a river"; a part of
    bare words, "pencil compass river", lists each), or four or more parts that each
    open with one required word and hold no other ("Pillow stands tall, mountain is
    high, ...").
    `matches(concept, text)` says whether a concept appears in a text (any inflection).
    """
    bare = opening = 0
    for segment in _SEGMENT.split(text):
        words = _content(segment)
        found = [c for c in concepts if matches(c, segment)] if words else []
        if not found:
            continue
        if all(any(matches(c, word) for c in found) for word in words):
            # "a pencil" is one listed word; "pencil compass river", with not even an
            # article between them, lists three.
            bare += len(found) if len(words) == len(_WORD.findall(segment.lower())) else 1
        elif len(found) == 1 and matches(found[0], words[0]):
            opening += 1
    if bare >= 3:
        return (
            "Use the words in one or two sentences about one scene; do not list them "
            f"({bare} of them stand alone between commas)."
        )
    if opening >= 4:
        return (
            "Write one scene in which the words act together; do not give each word a "
            f"clause of its own ({opening} clauses each open with one of the words)."
        )
    return None


_COPULA = frozenset(("is", "are"))


def _copular_parts(text: str) -> Iterator[tuple[str, list[str]]]:
    """The parts of the text (as `word_list` splits it) that say "X is ...": each with its
    words, articles before X left out."""
    for segment in _SEGMENT.split(text):
        words = _WORD.findall(segment.lower())
        while words and words[0] in _OPENERS:
            words = words[1:]
        if len(words) >= 3 and words[1] in _COPULA:
            yield segment, words


def definitions(
    text: str, concepts: Sequence[str], matches: Callable[[str, str], bool]
) -> str | None:
    """What to fix when the text says what each word is, one clause a word, and nothing more.

    "A tower is a building, a beach is a shore, and a fountain is a fountain." uses
    every word in one sentence and relates none of them: the form a policy trained on
    this check's reward found. Counted over the parts between commas, semicolons,
    colons, line breaks and "and": three or more parts of the form "(a) WORD is ...",
    each holding that required word alone, covering every required word (all but one
    when there are five or more).
    """
    defined = set()
    for segment, words in _copular_parts(text):
        found = [c for c in concepts if matches(c, segment)]
        if len(found) == 1 and matches(found[0], words[0]):
            defined.add(found[0])
    wanted = len(concepts) - 1 if len(concepts) >= 5 else len(concepts)
    if len(defined) < max(3, wanted):
        return None
    return (
        "Write one scene in which the words act together; do not say what each word is "
        f'({len(defined)} parts each say what one of the words is, as "a tower is a building").'
    )


_KIND = re.compile(r"^(?:(?:a|an|the)\s+)?(?:type|kind|sort|form)\s+of\s+")


def equated_words(
    text: str, concepts: Sequence[str], matches: Callable[[str, str], bool]
) -> str | None:
    """What to fix when the text says one required word is another, or itself.

    "The compass is a river and the library is a library." holds every word and says
    nothing: a part that opens with a required word, then "is" or "are", then an
    article or "a type of", then a required word. A policy trained on this check's reward
    found that form, as another found `definitions`'s.
    """
    for segment, words in _copular_parts(text):
        if not any(matches(c, words[0]) for c in concepts):
            continue
        rest = " ".join(words[2:])
        named = _KIND.sub("", rest).split()
        if not (_KIND.match(rest) or words[2] in _OPENERS):
            continue  # "anchor is anchored to ...": a verb, not a thing named
        while named and named[0] in _OPENERS:
            named = named[1:]
        if named and any(matches(c, named[0]) for c in concepts):
            said = " ".join(_WORD.findall(segment.lower()))
            return (
                "Write a scene in which the words act together; do not say that one of them "
                f'is another or itself ("{_clip(said)}").'
            )
    return None


def list_items(text: str) -> str | None:
    """What to fix when the text is laid out as a list ("- ...", "1. ...", "* ...").

    A task that asks for sentences asks for prose: list items are not sentences, even
    as many as the task allows.
    """
    items = len(_ITEM.findall(text))
    if not items:
        return None
    return (
        "Write the sentences as plain prose, not as a list: remove the list markers "
        f"({items} line{'s' if items > 1 else ''} open{'' if items > 1 else 's'} with one)."
    )


_JOINS = frozenset(
    "and or but nor yet while where when whereas because though although which who "
    "whose whom that until after before if since then".split()
)
_PARTS = re.compile(r"[,;]+")
_OPENERS = frozenset("a an the its his her their".split())
FRAGMENT_PARTS = 4
"""Parts between commas a sentence may string together with no word that joins them."""


def _opens_with(part: str, concepts: Sequence[str], matches: Callable[[str, str], bool]) -> bool:
    """Whether the part is a clause that opens with a required word, bare or after an
    article ("a scarf spins"); a word alone is a listed word (`word_list`), not a clause."""
    words = _WORD.findall(part.lower())
    while words and words[0] in _OPENERS:
        words = words[1:]
    return len(words) > 1 and any(matches(c, words[0]) for c in concepts)


def strung_fragments(
    text: str, concepts: Sequence[str], matches: Callable[[str, str], bool]
) -> str | None:
    """What to fix when a sentence strings clauses, one per required word, with commas alone.

    "Jacket covers island, scarf covers fountain, island perfect for coffee shop,
    candle just as nice as fountain." is fragments, not a sentence: four or more parts
    between commas, at least three of them opening with a required word (bare or after
    an article), and no word such as "and", "while", "where" or "which" joining any
    of them. "A rabbit, floating on the beach, is playing with a drum, its feathers
    in the wind." is a sentence: its parts do not each open with a word of the list.
    """
    for sentence in sentences(text):
        parts = [part for part in _PARTS.split(sentence) if _LETTER.search(part)]
        if len(parts) < FRAGMENT_PARTS:
            continue
        if any(word in _JOINS for word in _WORD.findall(sentence.lower())):
            continue
        opening = sum(_opens_with(part, concepts, matches) for part in parts)
        if opening >= FRAGMENT_PARTS - 1:
            return (
                "Write whole sentences, not fragments strung together with commas "
                f'("{_clip(sentence)}": {opening} parts each open with one of the words, and '
                'nothing joins them); join them with words such as "and", "while", "where".'
            )
    return None


_EDIT_VERBS = (
    "add|adds|insert|include|incorporate|mention|replace|swap|substitute|remove|delete|drop|"
    "keep|rewrite|revise|change|use|put|work|fix"
)
_EDIT = re.compile(
    rf"^\W*(?:please\s+)?(?:{_EDIT_VERBS})\s+(?:in\s+)?(?:the\s+(?:missing\s+)?(?:words?|concepts?|terms?)\s+)?"
    r"[\"'\u201c\u2018]?(?P<word>[a-z]+)\b",
    re.I,
)


def edit_instruction(text: str, concepts: Sequence[str]) -> str | None:
    """What to fix when a sentence of the text is an instruction about the text.

    An edit verb followed by a required word in its bare form ("Add compass to ...",
    "Use the word \"river\"", "Keep pencil ..."): a sentence about a scene says "a
    compass", never "compass" alone after "add". "Use a compass to ..." is a sentence.
    """
    bare = {c.lower() for c in concepts if " " not in c.strip()}
    for sentence in sentences(text):
        found = _EDIT.match(sentence)
        if found and found.group("word").lower() in bare:
            return (
                "Write the sentences themselves, not an instruction about them "
                f'("{_clip(sentence)}" tells how to change a text).'
            )
    return None


_SELF = re.compile(
    r"\b(?:the|this|these|that|my|your|each|every|both|previous|new|revised|original|given)"
    r"\s+(?:(?:given|required|listed|provided|following|missing|above|previous|original|new|"
    r"revised|same|other|four|five|six|seven|eight)\s+)?"
    r"(?:text|sentence|sentences|draft|words|concept|concepts|feedback|revision|prompt|"
    r"word\s+list)\b"
    r"|\b(?:required|missing)\s+(?:word|words|concept|concepts)\b"
    r"|\bthe\s+words?\s+[\"'\u201c\u2018]",
    re.I,
)


def remarks_about_text(text: str) -> str | None:
    """What to fix when the text talks about itself, the words or the feedback.

    Feedback wording ("The text is fluent because it uses all the words.", "(a
    required concept)", "the words \"river\" ...") is about an answer, not one.
    """
    found = _SELF.search(text)
    if found is None:
        return None
    sentence = next((s for s in sentences(text) if found.group(0) in s), found.group(0))
    return (
        "Reply with the sentences only, without remarks about them, the words or the "
        f'feedback ("{_clip(sentence)}" is about the text).'
    )


def _clip(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def shape_problems(
    task: str, text: str, concepts: Sequence[str], matches: Callable[[str, str], bool]
) -> list[str]:
    """Every shape problem of a constrained-generation answer, as feedback items."""
    found = [
        word_list(text, concepts, matches),
        strung_fragments(text, concepts, matches),
        definitions(text, concepts, matches),
        equated_words(text, concepts, matches),
        list_items(text),
        too_many_sentences(task, text),
        edit_instruction(text, concepts),
        remarks_about_text(text),
    ]
    return [problem for problem in found if problem]
