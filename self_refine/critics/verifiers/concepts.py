"""The `concepts` verifier: every required concept appears in the draft, in any inflection,
in text of the shape the task asks for (see `shape.py`): not a word list, no more
sentences than asked, not an instruction about the text, no remarks about it."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from self_refine.critics.verifiers.base import BuiltinVerifier, reference_field
from self_refine.critics.verifiers.shape import shape_problems
from self_refine.errors import ConfigError
from self_refine.state import Critique

__all__ = ["CONCEPTS", "concept_forms", "missing_concepts"]

_VOWELS = set("aeiou")
_IRREGULAR = {
    "be": ["is", "are", "was", "were", "been", "being"],
    "catch": ["caught"],
    "child": ["children"],
    "drink": ["drank", "drunk"],
    "drive": ["drove", "driven"],
    "eat": ["ate", "eaten"],
    "fall": ["fell", "fallen"],
    "fly": ["flew", "flown", "flies"],
    "foot": ["feet"],
    "give": ["gave", "given"],
    "go": ["went", "gone", "goes"],
    "hold": ["held"],
    "man": ["men"],
    "mouse": ["mice"],
    "person": ["people"],
    "ride": ["rode", "ridden"],
    "run": ["ran"],
    "see": ["saw", "seen"],
    "sing": ["sang", "sung"],
    "sit": ["sat"],
    "stand": ["stood"],
    "swim": ["swam", "swum"],
    "take": ["took", "taken"],
    "teach": ["taught"],
    "throw": ["threw", "thrown"],
    "tooth": ["teeth"],
    "woman": ["women"],
    "write": ["wrote", "written"],
}


def _doubles_final(word: str) -> bool:
    """True for short words ending consonant-vowel-consonant ("run" -> "running")."""
    return (
        len(word) >= 3
        and word[-1] not in _VOWELS | set("wxy")
        and word[-2] in _VOWELS
        and word[-3] not in _VOWELS
    )


def concept_forms(word: str) -> set[str]:
    """The word and its regular inflections: plural, -s, -ing, -ed, and common irregulars."""
    w = word.lower()
    forms = {w, w + "s", w + "es", w + "ing", w + "ed", *_IRREGULAR.get(w, [])}
    if w.endswith("e") and not w.endswith(("ee", "ye", "oe")):
        forms |= {w[:-1] + "ing", w + "d"}
    if w.endswith("ie"):
        forms.add(w[:-2] + "ying")
    if len(w) > 1 and w.endswith("y") and w[-2] not in _VOWELS:
        forms |= {w[:-1] + "ies", w[:-1] + "ied"}
    if w.endswith("f"):
        forms.add(w[:-1] + "ves")
    if w.endswith("fe"):
        forms.add(w[:-2] + "ves")
    if _doubles_final(w):
        forms |= {w + w[-1] + "ing", w + w[-1] + "ed"}
    return forms


@lru_cache(maxsize=1024)
def _pattern(concept: str) -> re.Pattern[str]:
    """Match the concept; in a phrase only the last word is inflected ("ice creams")."""
    words = concept.lower().split()
    last = "|".join(sorted(map(re.escape, concept_forms(words[-1])), key=len, reverse=True))
    head = "".join(re.escape(w) + r"[\s-]+" for w in words[:-1])
    return re.compile(rf"(?<![\w-]){head}(?:{last})(?![\w-])", re.I)


MAX_CONCEPTS = 200
"""Most concepts one reference may list: each is one feedback item when missing."""


def missing_concepts(draft: str, concepts: list[str]) -> list[str]:
    """The concepts that do not appear in the draft, in their given order."""
    return [c for c in concepts if not _pattern(c).search(draft)]


def _prepare(reference: Any) -> list[str]:
    concepts = reference_field(reference, "concepts", '["dog", "frisbee", "catch"]')
    if isinstance(concepts, str):
        concepts = [c for c in re.split(r"[,;]", concepts)]
    if not isinstance(concepts, list) or not all(isinstance(c, str) for c in concepts):
        raise ConfigError(
            'reference["concepts"] must be a list of strings, e.g. ["dog", "frisbee", "catch"]'
        )
    cleaned = [" ".join(c.split()) for c in concepts if c.strip()]
    if not cleaned:
        raise ConfigError('reference["concepts"] is empty: list the concepts the text must use')
    unique = list(dict.fromkeys(cleaned))
    if len(unique) > MAX_CONCEPTS:
        raise ConfigError(
            f'reference["concepts"] lists {len(unique):,} concepts, over {MAX_CONCEPTS}: a text '
            "cannot use them all; give the few it must use"
        )
    return unique


def _appears(concept: str, text: str) -> bool:
    return _pattern(concept).search(text) is not None


def _judge(task: str, draft: str, concepts: list[str]) -> Critique:
    missing = missing_concepts(draft, concepts)
    absent = set(missing)
    kept = [c for c in concepts if c not in absent]
    feedback = [f'Use the word "{c}".' for c in missing]
    if missing and kept:
        # Small models add the missing word and drop another: say which ones stay.
        feedback.append(f"Keep the words already used: {', '.join(kept)}.")
    shape = shape_problems(task, draft, concepts, _appears)
    coverage = 1 - len(missing) / len(concepts)
    # A text of the wrong shape gets half credit at most, so that a proper sentence
    # missing a word ranks above a list of every word.
    return Critique(
        feedback=[*feedback, *shape],
        score=round(coverage / 2 if shape else coverage, 3),
        done=not missing and not shape,
    )


CONCEPTS = BuiltinVerifier(
    name="concepts",
    summary='every concept in reference["concepts"] appears (plurals, -ing, -ed allowed)',
    prepare=_prepare,
    judge=_judge,
    settles=False,
)
