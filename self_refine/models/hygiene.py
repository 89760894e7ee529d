"""What a model's reply must be before it becomes a draft.

Small models wrap their answer in a preamble ("Here is the revised text:"), in the
prompt's own fence tags (or open one before it and never close it), in quotes, and may
end it in a loop of one phrase; those wrappers and the loop's copies are removed
(`clean_reply`).
A reply that still carries the prompt's scaffolding (fence tags, its instructions,
the task text, earlier feedback), refuses, is empty, is longer than the length
guard, or (in a refine step with feedback) is the previous draft unchanged, is not a
new draft (`rejection`): the caller records it as rejected, asks once more saying
why, and otherwise keeps the previous draft. Unless the model's own text can be read out
of it (`DraftGuard.salvage`): small models write their draft in a `<draft>` fence and go
on to invent a feedback or reference block, or copy the prompt's blocks back and then
write the draft after them; the text in its draft fence, or after the last block it
copied, is the draft when it is found nowhere in the request and passes every check above.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any

from langchain_core.messages import BaseMessage

from self_refine.models.repetition import cut_loop
from self_refine.models.resolve import message_text
from self_refine.prompts.phrases import Phrases, instruction_phrases, repeated_phrase
from self_refine.state import RejectedReply

__all__ = ["DraftGuard", "clean_reply", "draft_limit", "rejected"]

_TAGS = "task|draft|feedback|reference|attempt"
_WRAPPED = re.compile(rf"^\s*<({_TAGS})\b[^>]*>\s*(?P<body>.*?)\s*</\1>\s*$", re.I | re.S)
_SCAFFOLDING = re.compile(rf"</?(?:{_TAGS})\b[^>]*>|&lt;/?(?:{_TAGS})\b", re.I)
_OPENED = re.compile(r"^\s*<(?:draft|reference|attempt)\b[^>]*>\s*(?P<body>.*)$", re.I | re.S)
"""A reply that opens with a fence tag of the model's own text and never closes it (cut off
at the reply cap, or the tag left open): the model's text follows the tag."""
_PREAMBLE = re.compile(
    r"^\s*(?:(?:sure|certainly|okay|ok|of course)[,!.]?\s*)?"
    r"(?:(?:here(?:'s| is| are)\s+(?:the|my|an?|your)?\s*)?"
    r"(?:new|revised|improved|updated|rewritten|refined|corrected|final|first)?\s*"
    r"(?:draft|version|text|response|answer|attempt|sentence|reply)\s*"
    r"(?:\([^)\n]{0,40}\))?\s*(?:is)?\s*[:\-]"
    r"|(?:draft|answer|response)\s*\d*\s*[:\-])\s*",
    re.I,
)
_LEAD_IN = re.compile(
    r"^\s*(?:sure|certainly|okay|ok)?[,!.]?\s*here(?:'s| is| are)\b[^\n]{0,120}:[ \t]*\n", re.I
)
"""A whole first line that only announces what follows ("Here are three sentences ...:")."""
_QUOTES = {'"': '"', "\u201c": "\u201d", "'": "'"}
_PROSE_FENCE = re.compile(r"^\s*```(?:text|markdown|md)?\s*\n(?P<body>.*?)\n```\s*$", re.S | re.I)
_REPLY_KEPT = 2000
_OWN_FENCE = re.compile(
    rf"<(draft|attempt)\b[^>]*>(?P<body>.*?)(?:</\1\s*>|(?=</?(?:{_TAGS})\b|&lt;)|$)",
    re.I | re.S,
)
"""A fence of the model's own draft, closed, or open up to the next tag or the end."""
_CLOSED = re.compile(rf"</(?:{_TAGS})\s*>|&lt;/(?:{_TAGS})\s*&gt;", re.I)
_ANNOUNCING = re.compile(r"^\s*[^\n<]{0,200}:[ \t]*\n")
"""A first line that only announces what follows ("A new response to the task is:")."""


def draft_limit(task: str, max_draft_chars: int | None) -> int:
    """The longest draft accepted: the setting, else 6x the task and never under 3,000."""
    return max_draft_chars or max(3000, 6 * len(task))


def clean_reply(text: str, *, keep_code_fences: bool = False) -> str:
    """The reply without wrappers that are not part of the answer, and without the
    copies of a loop it ended in (`models/repetition.py`: its first copy is kept)."""
    text = cut_loop(text)
    previous = None
    while text != previous:
        previous = text
        text = text.strip()
        wrapped = _WRAPPED.match(text)
        if wrapped:
            text = wrapped.group("body")
        opened = _OPENED.match(text)
        if opened and not _SCAFFOLDING.search(opened.group("body")):
            text = opened.group("body")
        text = _PREAMBLE.sub("", text, count=1) if _PREAMBLE.match(text) else text
        text = _LEAD_IN.sub("", text, count=1)
        fenced = None if keep_code_fences else _PROSE_FENCE.match(text)
        if fenced:
            text = fenced.group("body")
        if len(text) > 1 and text[0] in _QUOTES and text.endswith(_QUOTES[text[0]]):
            inner = text[1:-1]
            if text[0] not in inner and _QUOTES[text[0]] not in inner:
                text = inner
    return text.strip()


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


@lru_cache(maxsize=4096)
def _flat_known(text: str) -> str:
    """`_flat` of a text that comes back at every step (the task, earlier feedback)."""
    return _flat(text)


@lru_cache(maxsize=4096)
def _echo_key(item: str) -> tuple[str, str | None]:
    """A feedback item without its [source] tag, flattened, and a word inside it.

    The word is None when the item has fewer than three. A reply that contains the
    flattened item contains that inner word as a whole word, so a reply without it
    cannot echo the item: most items are ruled out by one set lookup instead of a
    search of the reply. Items come back at every step: each is worked out once.
    """
    flat = _flat(_untagged(item))
    words = flat.split(" ")
    return flat, max(words[1:-1], key=len) if len(words) >= 3 else None


@dataclass(frozen=True)
class DraftGuard:
    """What a reply is held against: the task, earlier feedback, the length limit."""

    task: str
    feedback: Sequence[str] = ()
    limit: int = 3000
    keep_code_fences: bool = False
    previous: str | None = None
    """The draft the reply should change (refine steps); a reply that is this draft again,
    while there is feedback to act on, is no new draft."""
    instructions: Phrases = field(default_factory=instruction_phrases)
    """Phrases of the instructions sent, normalized (`prompts.phrases.instruction_phrases`;
    by default the library's own, without a profile's)."""
    sent: Sequence[BaseMessage] = ()
    """The request's messages: text read out of an echoing reply (`salvage`) must not be
    found in them."""

    def salvage(self, reply: str) -> str | None:
        """The model's own draft inside a reply that repeats the prompt's scaffolding: the
        body of its first `<draft>` or `<attempt>` fence (closed, or open up to the next
        tag), else the text after the last closing tag it copied (less, in prose, a first
        line that only announces it); taken only when it is found nowhere in the request (`sent`),
        is no near copy of the task (`_near_copy`: the task with a letter changed) and passes
        `check`. None when there is no such text."""
        found = [m.group("body") for m in _OWN_FENCE.finditer(reply)]
        closing = list(_CLOSED.finditer(reply))
        if closing:
            after = reply[closing[-1].end() :].lstrip("\n")
            # A code line may end in ":" too ("def f(x):"): only prose drops an announcement.
            found.append(after if self.keep_code_fences else _ANNOUNCING.sub("", after, count=1))
        request: str | None = None
        for body in found:
            text = clean_reply(body, keep_code_fences=self.keep_code_fences)
            if not text or self.check(text, None) is not None or _near_copy(text, self.task):
                continue
            if request is None:
                request = _flat(" ".join(message_text(m) for m in self.sent))
            if _flat(text) not in request:
                return text
        return None

    def check(self, text: str, refusal: str | None) -> tuple[str, str] | None:
        """(reason, detail) when the cleaned reply is no draft; None when it is one."""
        if refusal:
            return "refusal", f"the model refused: {_short(refusal)!r}"
        if not text.strip():
            return "empty", "the reply was empty"
        if self.previous is not None and self.feedback and _same_words(text, self.previous):
            return "unchanged", "the reply is the draft it was asked to change, unchanged"
        # Every tag it finds begins with "<" or "&": a reply with neither is not searched.
        tag = _SCAFFOLDING.search(text) if "<" in text or "&" in text else None
        if tag:
            return "echo", f"the reply repeats the prompt's scaffolding ({tag.group(0)!r})"
        said = repeated_phrase(text, self.instructions)
        if said:
            return "echo", f"the reply repeats the prompt's instructions ({said!r})"
        flat = _flat(text)
        task = _flat_known(self.task)
        if len(task) >= 30 and task[:300] in flat:
            return "echo", "the reply repeats the task text"
        words = set(flat.split(" "))
        for item in self.feedback:
            item_flat, inner = _echo_key(item)
            if (inner is None or inner in words) and len(item_flat) >= 30 and item_flat in flat:
                return "echo", f"the reply repeats earlier feedback ({_short(item)!r})"
        if len(text) > self.limit:
            return "too_long", f"the reply has {len(text):,} characters (limit {self.limit:,})"
        return None


_NEAR_COPY = 0.97
"""How alike (difflib's ratio of the flattened texts, of equal length within 3%) a text
read out of an echoing reply and the task may be before it is the task copied back."""
_NEAR_COPY_CHARS = 4000
"""How much of each text the comparison reads (it costs their product at worst)."""


def _near_copy(text: str, task: str) -> bool:
    """Whether `text` is the task copied back with a few characters changed."""
    a, b = _flat(text), _flat_known(task)
    if not a or not b or abs(len(a) - len(b)) > 0.03 * max(len(a), len(b)):
        return False
    matcher = difflib.SequenceMatcher(None, a[:_NEAR_COPY_CHARS], b[:_NEAR_COPY_CHARS])
    return all(
        ratio() >= _NEAR_COPY
        for ratio in (matcher.real_quick_ratio, matcher.quick_ratio, matcher.ratio)
    )


def _same_words(text: str, other: str) -> bool:
    """Whether two texts are the same words, layout aside: texts whose first words differ
    are told apart without splitting either whole."""
    if text.split(None, 1)[:1] != other.split(None, 1)[:1]:
        return False
    return text.split() == other.split()


def rejected(reason: str, detail: str, reply: str) -> RejectedReply:
    """The record of a reply that was not taken as a draft."""
    return {"reason": reason, "reply": reply[:_REPLY_KEPT], "detail": detail}


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:77] + "..."


def feedback_of(attempts: Sequence[Mapping[str, Any]], current: Sequence[str] = ()) -> list[str]:
    """The feedback a reply must not repeat: every item the attempts received, and `current`.

    An item that quotes the draft it was given on (critics often repeat a sentence of
    the draft as an "item") is left out: a new draft that keeps that sentence echoes
    the draft, not the critic. `current` is feedback on the latest attempt's draft.
    Each item is compared with its own draft only, and an attempt's items are sorted
    out once (`_own_items`), so a step does not search every earlier draft again.
    """
    latest = attempts[-1].get("draft") if attempts else None
    own = [_own_items(str(latest or ""), tuple(map(str, current)))]
    for attempt in attempts:
        critique = attempt.get("critique")
        if isinstance(critique, dict):
            items = tuple(map(str, critique.get("feedback") or ()))
            own.append(_own_items(str(attempt.get("draft") or ""), items))
    return list(dict.fromkeys(chain.from_iterable(own)))


@lru_cache(maxsize=4096)
def _own_items(draft: str, items: tuple[str, ...]) -> tuple[str, ...]:
    """The items that do not quote `draft` ("" for no draft: all of them), in order."""
    if not draft:
        return items
    flat_draft = _flat_known(draft)
    return tuple(item for item in items if _echo_key(item)[0] not in flat_draft)


_SOURCE_TAG = re.compile(r"^\s*\[[\w+.-]+\]\s*")


def _untagged(item: str) -> str:
    """A feedback item without the "[source] " tag a merged critique puts in front."""
    return _SOURCE_TAG.sub("", item, count=1)
