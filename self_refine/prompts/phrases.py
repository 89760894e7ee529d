"""The wording of the instructions the loop sends, as phrases a reply must not repeat.

A reply that holds six words in a row of an instruction (or a short instruction
sentence whole) repeats the prompt instead of answering it: `models/hygiene.py`
rejects it, and the quality benchmark counts an answer that took over feedback
wording as wrong. The phrases are worked out from the texts themselves (a profile's
prompts and `render.LIBRARY_TEXTS`), so they never fall behind a change of a prompt.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from self_refine.prompts.profiles import PromptSet
from self_refine.prompts.render import LIBRARY_TEXTS, ROLES

__all__ = ["Phrases", "instruction_phrases", "normalized", "repeated_phrase"]


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PHRASE_WORDS = 6
"""A reply holding this many words of an instruction in a row repeats the prompt."""


def normalized(text: str) -> str:
    """Lower-case words separated by single spaces: punctuation and layout left out."""
    return " ".join(_WORD.findall(text.lower()))


class Phrases(NamedTuple):
    """Normalized phrases of instructions: runs of six words, and shorter sentences whole."""

    runs: frozenset[tuple[str, ...]]
    sentences: tuple[str, ...]


def instruction_phrases(prompts: PromptSet | None = None) -> Phrases:
    """Every run of six words of the instructions the loop sends with this profile (None:
    the library's own, without a profile's), normalized; a sentence of two to five words
    (a role label, "Reply with the sentences only.") whole. A reply that holds one repeats
    the prompt instead of answering it (`repeated_phrase`). Worked out from the texts
    themselves, so it never falls behind a change of a prompt."""
    try:
        return _phrases(prompts)
    except TypeError:  # a PromptSet holding a list cannot be a cache key
        return _phrases.__wrapped__(prompts)


def repeated_phrase(text: str, phrases: Phrases) -> str | None:
    """The first of the phrases that `text` holds; None when it holds none."""
    flat = normalized(text)
    spaced = f" {flat} "
    found = next((s for s in phrases.sentences if f" {s} " in spaced), None)
    if found:
        return found
    words = flat.split()
    present = set(words)
    # A run the text holds has all its words in the text: most texts hold no run
    # whole, which these set checks tell without building the text's own runs.
    if not any(map(present.issuperset, phrases.runs)):
        return None
    runs = zip(*(words[start:] for start in range(_PHRASE_WORDS)), strict=False)
    run = next((run for run in runs if run in phrases.runs), None)
    return " ".join(run) if run else None


@lru_cache(maxsize=64)
def _phrases(prompts: PromptSet | None) -> Phrases:
    own = (
        [prompts.generate, prompts.feedback, prompts.refine, prompts.request, prompts.revise]
        if prompts
        else []
    )
    texts = [*own, *LIBRARY_TEXTS]
    runs: set[tuple[str, ...]] = set()
    sentences = {f"role {role}": None for role in ROLES}
    for text in texts:
        for sentence in _SENTENCE_END.split(text):
            words = tuple(normalized(sentence).split())
            if len(words) < _PHRASE_WORDS:
                if len(words) >= 4:
                    sentences.setdefault(" ".join(words), None)
                continue
            for start in range(len(words) - _PHRASE_WORDS + 1):
                runs.add(words[start : start + _PHRASE_WORDS])
    return Phrases(frozenset(runs), tuple(sentences))
