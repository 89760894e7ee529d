"""The constrained set's sentence checker: what the grader fails besides missing words.

The library's `concepts` check (what a run may check drafts with, and the grader's
first test) fails word lists, strung fragments, definitions, list items and remarks
(`self_refine.critics.verifiers.shape`). Answers of the reported runs it passed show
forms it lets through, each of which this checker fails, reading the text only:

- markup: tags or other markup around the words ("<Pillow> wraps the <needle> ...");
- no finite verb in a sentence: "Tower of umbrella jacket drum whistle.", "Guitar
  helmet on pillow next to bridge.", "Tower of lights, lanterns in the library, pocket
  of books." (a verb of the sentence's own: "is", "rose", "floats", "carried", "they
  fly"; a word ending in -ing does not make a sentence);
- an imperative: a sentence that orders its reader, its verb a required word or a verb
  before its object ("Train your pencil on the river, using the compass.", "Shovel the
  apple in the pocket."): an instruction, no scene (a rule choice: the task asks for
  sentences that use the words, and these use one as an order; see below);
- a verbless list: three or more parts (between commas, semicolons and "and") that open
  with a required word, two or more of them with no verb: "..., a pillow covered with
  carpet, a umbrella hanging on the island, and a pocket on the pocket.";
- a clause per word: three or more parts that open with a required word bare, with no
  article ("Puddle falls on the sidewalk, bicycle slides through the puddle, valley
  lies ..."), or a sentence of nothing but four or more parts each opening with one,
  article or not ("A hammer strikes a mountain, a shovel digs a forest, a bakery makes
  bread, and a fountain flows water."): each word handed its own clause;
- a word on itself: a clause in which a required word acts on, or lies in, itself ("the
  ladder climbed on the ladder", "a pocket on the pocket", "pencils write on the
  pencil"): the word used twice to fill a slot, no scene;
- a bare subject: a sentence whose subject is a required word with no article ("Puddle
  falls from a bicycle in a valley, ...", "River flows over the candle, ..."): a singular
  noun needs one (a mass noun such as "thunder" does not).

The imperative opening with a required word counts in any sentence ("Bridge the
mountains with the basket, the drum plays in the forest."); one opening with another
verb only in a sentence with no finite verb of its own. Four rules (the clause per word
with articles, the word on itself, the bare subject, the imperative in a sentence with a
finite verb) were added after a hand audit of 100 answers of the reported runs had found
them passed (`audit.py`): on those answers the audit no longer measures them
independently.

The checker errs on the side of a verb: a word it cannot place counts as one when it
could be, so what it fails is what holds no verb it knows of. It is part of the grader
only; a run never sees it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from self_refine.critics.verifiers.concepts import missing_concepts
from self_refine.critics.verifiers.shape import sentences

__all__ = ["FORMS", "sentence_problems"]

FORMS = (
    "markup",
    "no verb",
    "imperative",
    "verbless list",
    "clause per word",
    "word on itself",
    "bare subject",
)
"""The forms the sentence checker fails, as `sentence_problems` names them."""

_MARKUP = re.compile(r"</?[A-Za-z][^<>]*>|\*\*|__|`|^\s*#", re.M)
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")

_AUXILIARIES = frozenset(
    "am is are was were has have had do does did will would can could shall should may "
    "might must isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't "
    "wouldn't can't couldn't shouldn't".split()
)
_CONTRACTED = re.compile(r"^[a-z]+'(?:s|re|ve|ll|d|m)$")
_PAST = frozenset(
    "arose ate awoke became began beheld bent bit bled blew bore bought bound bred broke "
    "brought built burnt caught chose clung came crept dealt dove drank drew drove dug fed "
    "fell felt fled flew flung forgot fought found froze gave got grew hid held hung heard "
    "kept knelt knew laid "
    "lay leapt led left lent lit lost made meant met overcame overtook paid ran rang rode "
    "rose sang sank sat saw said sent shone shook shot shrank slept slid slung sold sought "
    "spent spoke sprang spun stood stole stuck stung strode struck swam swept swore swung "
    "taught told took thought threw tore underwent understood woke wept wore wove won wound "
    "wrote".split()
)
_NOT_PAST = frozenset(
    "bed red shed sled seed need feed speed weed bleed breed greed hundred sacred naked "
    "wicked beloved kindred shred steed tweed reed creed embed".split()
)
_VERBS = frozenset(
    "accept add admire allow answer appear arrive ask bake bark beat become begin belong "
    "bend blink bloom blow boil bounce break breathe bring brush build burn burst buy call "
    "calm carry carve cast catch cause chase chat cheer chime chirp circle clap clean climb cling "
    "close collect come contain cook cool cost cover crack crash crawl create creep cross "
    "crunch cry curl cut dance dangle dart dash decide decorate deliver describe dig dip "
    "disappear display dive drag draw dream drift drink drip drive drop drum dry dust echo "
    "enjoy enter explore face fade fall feed feel fill find fit flap flash flicker float "
    "flood flow flutter fly fold follow form frame freeze gather gaze get give glide glimmer "
    "glisten glitter glow go grab greet grin grip grow guard guide hang happen hear help "
    "hide hit hold hop hover hug hum hurry jingle join jump keep kick kiss knock lay lead "
    "lean leap learn leave lie lift light like line listen live look love make march mark "
    "meet melt mirror move nap need nestle notice offer open overlook own pack paddle paint "
    "park pass pause peek perch pick place plant play point pop pour press pull push put "
    "race rain reach read rest return ride ring rise roam roar rock roll row run rush rustle "
    "sail say scatter scrape search see seem sell send serve set settle shake shelter shimmer "
    "shine shiver shout show shovel sing sink sip sit skip sleep slide slip smell smile sniff "
    "soar sound sparkle speak spill spin splash spread spring sprinkle squeak stack stand "
    "stare start stay step stick stir stop store stretch stroll strum stumble surround sway "
    "sweep swim swing take talk tap taste teach tell tend thank think throw thunder tie toss "
    "touch tower travel trek trip tuck tumble turn twinkle twirl use view visit wade wait "
    "wake walk wander want warm wash watch wave wear weave whisper whistle wiggle win wind "
    "wipe wish wobble wonder work wrap write yawn zip".split()
)
_DETERMINERS = frozenset(
    "a an the this that these those my your his her its our their every each some any no "
    "another".split()
)
_PREPOSITIONS = frozenset(
    "of in on at to by for with from into onto over under above below near beside between "
    "through across along around behind beyond inside outside toward towards upon within "
    "without against among like past".split()
)
_SUBJECTS = frozenset("i you we they people children men women kids".split())
_NUMBERS = frozenset("two three four five six seven eight nine ten many several few".split())
_AFTER_NOUN = _DETERMINERS | _PREPOSITIONS | _NUMBERS | {"and", "or"}


def _plural_stem(word: str) -> list[str]:
    """The verbs a word ending in -s could be the third person of."""
    stems = [word[:-1]]
    if word.endswith("es"):
        stems.append(word[:-2])
    if word.endswith("ies"):
        stems.append(word[:-3] + "y")
    return stems


def _finite(words: Sequence[str], capitals: Sequence[bool]) -> bool:
    """Whether the words hold a finite verb (see the module's docstring)."""
    return any(_finite_at(words, capitals, index) for index in range(len(words)))


def _finite_at(words: Sequence[str], capitals: Sequence[bool], index: int) -> bool:
    """Whether the word at `index` reads as a finite verb."""
    word = words[index]
    before = words[index - 1] if index else None
    if word in _AUXILIARIES or _CONTRACTED.match(word) or word in _PAST:
        return True
    if before is None:
        return False  # a sentence opens with its subject (or an opener such as "Mirrored,")
    if word.endswith("ed") and len(word) > 3 and word not in _NOT_PAST:
        return before not in _AFTER_NOUN
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 2:
        known = any(stem in _VERBS for stem in _plural_stem(word))
        after_subject = index >= 2 and words[index - 2] in _DETERMINERS
        after_name = capitals[index - 1] and index >= 2
        before_object = index + 1 < len(words) and words[index + 1] in _DETERMINERS
        return before not in _AFTER_NOUN and (known or after_subject or after_name or before_object)
    return (
        word in _VERBS
        and before not in _AFTER_NOUN
        and (
            before in _SUBJECTS
            or (before.endswith("s") and not before.endswith("ss"))
            or "and" in words[: index - 1]  # "a guitar and a helmet rest ..."
        )
    )


def _words(text: str) -> tuple[list[str], list[bool]]:
    found = _WORD.findall(text)
    return [w.lower() for w in found], [w[:1].isupper() for w in found]


_PART = re.compile(r"[,;:]+|\s+(?:and|but|while|or)\s+", re.I)
_LEADING = frozenset({"and", "but", "while", "or", "then"})


def _parts(sentence: str) -> list[str]:
    return [part.strip() for part in _PART.split(sentence) if _WORD.search(part)]


def _opening(part: str, concepts: Sequence[str]) -> tuple[str | None, bool]:
    """The required word a part opens with (after an article), and whether it stands bare."""
    words = [w.lower() for w in _WORD.findall(part)]
    while words and words[0] in _LEADING:
        words = words[1:]
    bare = bool(words) and words[0] not in _DETERMINERS
    while words and words[0] in _DETERMINERS:
        words = words[1:]
    if len(words) < 2:
        return None, False
    found = next((c for c in concepts if not missing_concepts(words[0], [c])), None)
    return found, bare and found is not None and words[0] == found.lower()


_ORDER = re.compile(r"\W*([A-Za-z]+)\s+([A-Za-z]+)")
"""A sentence's first two words with nothing but space between ("Bicycle, a small ..."
is a noun and what it is, not an order)."""


def _imperative(sentence: str, concepts: Sequence[str], *, finite: bool = False) -> bool:
    """Whether the sentence orders its reader with a verb and what follows ("Train your
    pencil on the river", "Shovel the apple in the pocket"): no scene, an instruction.
    In a sentence with a finite verb (`finite`) only a required word as the verb counts:
    a noun the task lists is not followed by an article ("Bridge the mountains ...")."""
    opening = _ORDER.match(sentence)
    if opening is None:
        return False
    verb, then = opening.group(1).lower(), opening.group(2).lower()
    if then not in _DETERMINERS | {"your"}:
        return False
    return any(verb == c.lower() for c in concepts) or (not finite and verb in _VERBS)


EVERY_PART = 4
"""Parts (or more) of a sentence that, all opening with a required word, make it a clause
per word even with articles."""
_OWNERS = _DETERMINERS | {"its", "their", "his", "her"}


def _on_itself(part: str, concepts: Sequence[str]) -> bool:
    """Whether the part has a required word act on, or lie in, itself: the word, one or
    two words (a verb, a preposition), an article, the word again ("the ladder climbed
    on the ladder", "a pocket on the pocket")."""
    words = [w.lower() for w in _WORD.findall(part)]
    for concept in concepts:
        found = [not missing_concepts(word, [concept]) for word in words]
        for index in (i for i, hit in enumerate(found) if hit):
            for gap in (1, 2):
                owner = index + gap + 1
                if (
                    owner + 1 < len(words)
                    and words[owner] in _OWNERS
                    and found[owner + 1]
                    and not words[owner + 1].endswith("'s")  # "chased the rabbit's tail"
                    and not any(found[index + 1 : owner])
                ):
                    return True
    return False


_MASS = frozenset(
    "thunder lightning rain snow fog mist wind air water ice sand dust smoke fire light "
    "music bread grass wood paper gold silver".split()
)


def _bare_subject(sentence: str, concepts: Sequence[str]) -> bool:
    """Whether the sentence opens with a required word, bare, as the subject of its verb
    ("Puddle falls from a bicycle", "River flows over the candle", "Scarf gently dances"):
    a singular noun with no article, telegraph English (a mass noun such as "thunder"
    takes none; "Castle walls rose", a noun before the subject, is not this)."""
    words, capitals = _words(sentence)
    if not words or words[0] in _MASS or not any(words[0] == c.lower() for c in concepts):
        return False
    verb = 2 if len(words) > 2 and words[1].endswith("ly") else 1
    return len(words) > verb and _finite_at(words, capitals, verb)


def sentence_problems(text: str, concepts: Sequence[str]) -> list[str]:
    """The forms of `FORMS` the text is (none: it reads as sentences)."""
    found = []
    if _MARKUP.search(text):
        found.append("markup")
    said = sentences(text)
    unfinite = [sentence for sentence in said if not _finite(*_words(sentence))]
    if any(_imperative(s, concepts, finite=s not in unfinite) for s in said):
        found.append("imperative")
    if any(not _imperative(sentence, concepts) for sentence in unfinite):
        found.append("no verb")
    opened = bare = verbless = 0
    every_part = on_itself = False
    for sentence in said:
        parts = _parts(sentence)
        openings = 0
        for part in parts:
            on_itself = on_itself or _on_itself(part, concepts)
            word, alone = _opening(part, concepts)
            if word is None:
                continue
            openings += 1
            bare += alone
            words, capitals = _words(part)
            verbless += not _finite(words, capitals)
        opened += openings
        every_part = every_part or openings == len(parts) >= EVERY_PART
    if opened >= 3 and verbless >= 2:
        found.append("verbless list")
    if bare >= 3 or every_part:
        found.append("clause per word")
    if on_itself:
        found.append("word on itself")
    if any(_bare_subject(sentence, concepts) for sentence in said):
        found.append("bare subject")
    return found
