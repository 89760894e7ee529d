"""Prompt sets ("profiles"): generate, feedback and refine instructions per kind of task.

Besides the general profile there is one per task of the Self-Refine paper
(Madaan et al., 2023), with instructions written for this library. Each names
its default critics (verifiers first, then "llm") and stop policies.
"""

from __future__ import annotations

from dataclasses import dataclass

from self_refine.errors import ConfigError
from self_refine.prompts.forms import RefineForm
from self_refine.stopping import (
    DEFAULT_POLICIES,
    CriticDone,
    NoImprovement,
    ScoreThreshold,
    StopPolicy,
    Unchanged,
)

__all__ = ["PROFILES", "PromptSet", "get_profile"]


@dataclass(frozen=True)
class PromptSet:
    """The three instructions of Self-Refine for one kind of task, with its defaults.

    `critics` are used when neither the run nor the graph names critics; a
    verifier among them is skipped for inputs whose reference lacks its data.
    `stop` are the stop policies used when the graph was not given `stop=`.
    `request` follows the task in the generate request; `refine_form` is
    "conversation", "single" or "fresh" (see `refine_messages`).
    """

    name: str
    summary: str
    generate: str
    feedback: str
    refine: str
    critics: tuple[str, ...] = ("llm",)
    stop: tuple[StopPolicy, ...] = DEFAULT_POLICIES
    request: str = "Write the response to the task above."
    """The line after the task in the generate request: what to do with it."""
    revise: str = ""
    """What the refine request ends with, after the feedback (empty: rewrite the draft
    addressing every item, and reply with the new draft only)."""
    refine_form: RefineForm | None = None
    """How the refine request is laid out when the run's settings do not say (None: the
    library's default, see `self_refine.prompts.render`)."""
    draft_tokens: int = 1024
    """Most tokens a draft reply (the generator's, the refiner's) may have when the run's
    `max_tokens` does not say: room for the longest answer the task calls for."""
    critique_tokens: int = 512
    """Most tokens a critique reply may have when the run's `max_tokens` does not say:
    the JSON of a few feedback items, a score and done."""
    words_settle: bool = False
    """A pass of the `concepts` verifier settles this profile's tasks (the task is to use
    the words, in the shape it asks): no LLM critique after it. Elsewhere a word list
    says only that the words are there, so the LLM critic, when among the critics, is
    asked too (`self_refine.critics.combined`)."""
    final_answer: bool = False
    """Drafts end with one final answer ("The answer is ..."), read as the `answer`
    verifier reads it: what `select="vote"` counts (`self_refine.voting`)."""


_CODE_BLOCK = "Reply with the complete code in one ```python block."

GENERAL = PromptSet(
    name="general",
    summary="Any writing or reasoning task; the critic judges correctness, completeness, clarity.",
    generate=("You write a complete, correct response to the task. Be concrete and concise."),
    feedback=(
        "You are a strict reviewer. Check the draft against the task: correctness, "
        "whether it does everything the task asks, clarity, and concision. Give each "
        "problem as one actionable feedback item that says what to change. Give a score "
        "from 0 (unusable) to 1 (needs no change), and set done to true only when the "
        "draft needs no change at all."
    ),
    refine=(
        "You improve a draft using reviewer feedback. Fix every item of the latest "
        "feedback, keep what was already good, and do not reintroduce problems that "
        "earlier feedback pointed out."
    ),
)

DIALOGUE = PromptSet(
    name="dialogue",
    summary="Reply in a conversation; the critic rates relevance, specificity, engagement, safety.",
    generate=(
        "You take part in a conversation. Write the next reply to the user: relevant to "
        "their last turn, informative and specific, consistent with what was said before, "
        "engaging, and safe. Reply with the message only."
    ),
    feedback=(
        "You review one reply in a conversation, aspect by aspect: relevance to the last "
        "user turn; informativeness; specificity (no generic filler); engagement (does it "
        "keep the conversation going); consistency with earlier turns; understanding of "
        "what the user wants; fluency; safety. For each aspect that falls short, give one "
        "feedback item that names the aspect and the change to make. Score the reply from "
        "0 to 1 and set done to true only when no aspect needs work."
    ),
    refine=(
        "You rewrite a conversational reply from reviewer feedback. Address every item, "
        "keep what already worked, and keep the tone natural and the length right for a "
        "chat. Reply with the new message only."
    ),
    stop=(ScoreThreshold(0.9), CriticDone(), Unchanged()),
    draft_tokens=384,
    critique_tokens=512,
)

CODE_OPTIMIZATION = PromptSet(
    name="code_optimization",
    summary="Make a Python program faster with the same output; the critic finds slow parts.",
    generate=f"You write a correct and efficient Python program for the task. {_CODE_BLOCK}",
    feedback=(
        "You review a Python program for speed on large inputs. Look for what makes it slow: "
        "the time complexity of its loops, work repeated that could be cached or computed "
        "once, data structures with slow lookups, slow reading and writing of input and "
        "output. For each, give one feedback item naming the code and the faster approach, "
        "with its complexity. Never suggest a change that alters the output. Score from 0 "
        "to 1 how close the program is to an efficient solution; set done to true when no "
        "meaningful speed-up remains."
    ),
    refine=(
        "You speed up a Python program from reviewer feedback. Apply the improvements and "
        f"keep the output identical for every input. {_CODE_BLOCK}"
    ),
    stop=(CriticDone(), Unchanged(), NoImprovement(2)),
)

CODE_READABILITY = PromptSet(
    name="code_readability",
    summary="Make code easier to read (names, comments, structure) without changing behaviour.",
    generate=f"You write clear, correct Python code for the task. {_CODE_BLOCK}",
    feedback=(
        "You review code for readability. Check the names (does each say what it holds or "
        "does?), the comments (there where intent is not obvious, absent where they repeat "
        "the code) and the structure (long functions to split, deep nesting, duplicated "
        "logic, unexplained constants). Give each problem as one feedback item naming the "
        "line or name and a better version. Score from 0 to 1; set done to true when the "
        "code reads clearly."
    ),
    refine=(
        "You rewrite code for readability from reviewer feedback: clearer names, useful "
        f"comments, simpler structure, exactly the same behaviour. {_CODE_BLOCK}"
    ),
)

MATH = PromptSet(
    name="math",
    summary='Solve a word problem step by step; with reference["answer"], the answer verifier.',
    generate=(
        "You solve math word problems. Work step by step and show every calculation, then "
        'end with one line "The answer is <answer>." that gives only the final value.'
    ),
    feedback=(
        "You check a worked solution to a math problem step by step: is the reasoning of "
        "each step sound, is each calculation right (redo it), is every quantity of the "
        "problem used correctly, and does the solution answer the question asked, in the "
        "units asked for? Give each error as one feedback item that names the step and what "
        "is wrong. Score from 0 to 1; set done to true only when every step is right."
    ),
    refine=(
        "You correct a worked solution from the feedback. Redo the wrong steps and every "
        'step that depends on them, then end with one line "The answer is <answer>."'
    ),
    critics=("answer", "llm"),
    # "Write the response" made a 0.5B model answer with the final line alone, no steps,
    # and "Reply with the new draft only" made its corrections a bare final line too.
    request='Solve the task above: work step by step, then end with one line "The answer is '
    '<answer>."',
    revise="Solve the task again step by step, redoing every step the feedback points to, "
    'then end with one line "The answer is <answer>."',
    draft_tokens=768,
    critique_tokens=512,
    final_answer=True,
)

_PROGRAM_LINES = (
    "then write one ```python block that computes the final value from the numbers of the "
    'problem and prints it, then end with one line "The answer is <answer>." that gives the '
    "value the program prints."
)

MATH_PROGRAM = PromptSet(
    name="math_program",
    summary="Solve a word problem with a program; the program verifier runs it, no key needed.",
    generate=f"You solve math word problems. Work step by step, {_PROGRAM_LINES}",
    feedback=(
        "You check a worked solution to a math problem and the Python program it computes "
        "the result with: is the reasoning of each step sound, is each calculation right "
        "(redo it), does the program compute what the problem asks from its numbers, and "
        "does the final answer equal what the program prints? Give each error as one "
        "feedback item that names the step or line and what is wrong. Score from 0 to 1; "
        "set done to true only when every step is right."
    ),
    refine=(
        "You correct a worked solution from the feedback. Redo the wrong steps and every "
        f"step that depends on them, {_PROGRAM_LINES}"
    ),
    critics=("program", "llm"),
    request=f"Solve the task above: work step by step, {_PROGRAM_LINES}",
    revise=f"Solve the task again step by step, redoing every step the feedback points to, "
    f"{_PROGRAM_LINES}",
    draft_tokens=768,
    critique_tokens=512,
    final_answer=True,
)

SENTIMENT_REVERSAL = PromptSet(
    name="sentiment_reversal",
    summary="Rewrite a review with the opposite sentiment, keeping its subject and facts.",
    generate=(
        "You rewrite reviews with their sentiment reversed: a positive review becomes "
        "negative and a negative one positive. Keep the subject, the facts, and roughly the "
        "length and style. Reply with the rewritten review only."
    ),
    feedback=(
        "You review a sentiment reversal against the original review in the task. Is the "
        "sentiment fully and convincingly reversed, with no phrase left in the old "
        "sentiment? Are the subject and facts kept? Does it read naturally? Give each "
        "problem as one feedback item that quotes the phrase to change. Score from 0 to 1 "
        "how clearly the sentiment is reversed; set done to true when it fully is."
    ),
    refine=(
        "You improve a sentiment-reversed review from the feedback: rewrite every phrase "
        "that still carries the old sentiment, keep the facts, keep it natural. Reply with "
        "the review only."
    ),
    stop=(ScoreThreshold(0.9), CriticDone(), Unchanged()),
    draft_tokens=512,
    critique_tokens=384,
)

ACRONYM = PromptSet(
    name="acronym",
    summary="Invent an acronym for a title; rated on pronunciation, spelling, relevance, tone.",
    generate=(
        "You invent acronyms for titles. Propose one acronym built from the title's words "
        "that is easy to say and to spell, relates to the title's meaning and sounds "
        "positive. Reply with the acronym and the words it stands for."
    ),
    feedback=(
        "You rate an acronym for a title on: ease of pronunciation; ease of spelling; "
        "relation to the title's meaning; positive or neutral associations; and clash with "
        "a well-known existing acronym. For each aspect that falls short, give one feedback "
        "item saying what to change. Score from 0 to 1; set done to true only when it is "
        "strong on every aspect."
    ),
    refine=(
        "You improve an acronym for a title from the feedback, keeping what was rated well. "
        "Reply with the acronym and the words it stands for."
    ),
    stop=(CriticDone(), Unchanged(), NoImprovement(2)),
    draft_tokens=128,
    critique_tokens=384,
)

CONSTRAINED_GENERATION = PromptSet(
    name="constrained_generation",
    summary="Write sentences using given concepts; the concepts verifier lists missing ones.",
    generate=(
        "You write one or two fluent sentences about a plausible everyday scene that use "
        "every concept the task lists (plurals and other inflected forms are fine). Reply "
        "with the sentences only."
    ),
    feedback=(
        "You review sentences that must use a list of concepts. Check that every concept "
        "appears, that the scene makes sense, and that the text is fluent. Give each "
        "problem as one feedback item: a missing concept and where it could fit, or what "
        "does not make sense and how to fix it. Score from 0 to 1; set done to true only "
        "when every concept is used in sensible, fluent text."
    ),
    refine=(
        "You rewrite the sentences from the feedback: work every missing concept in "
        "naturally, fix what does not make sense, keep the text fluent. Reply with the "
        "sentences only."
    ),
    revise=(
        "Write the sentences again so that they use every word the task lists: add each "
        "missing word named above and keep the words already there. Reply with the "
        "sentences only."
    ),
    critics=("concepts", "llm"),
    words_settle=True,
    draft_tokens=160,
    critique_tokens=384,
)

PYTHON_FUNCTION = PromptSet(
    name="python_function",
    summary='Write a Python function to a spec; with reference["tests"], the tests run sandboxed.',
    generate=(
        "You write Python functions to a specification. Reply with one ```python block that "
        "defines the function with exactly the name and parameters asked for, and nothing "
        "else: no examples, no tests, no explanation."
    ),
    feedback=(
        "You review a Python function against its specification: does it handle every case "
        "the specification names, the edge cases (empty input, zero, negative numbers), and "
        "does it return the asked type? Give each problem as one feedback item that names "
        "the case and the fix. Score from 0 to 1; set done to true only when it is correct."
    ),
    refine=(
        "You fix a Python function from the feedback. Reply with one ```python block that "
        "defines the corrected function, and nothing else."
    ),
    critics=("python_tests", "llm"),
    draft_tokens=768,
    critique_tokens=512,
)

PROFILES: dict[str, PromptSet] = {
    p.name: p
    for p in (
        GENERAL,
        DIALOGUE,
        CODE_OPTIMIZATION,
        CODE_READABILITY,
        MATH,
        MATH_PROGRAM,
        SENTIMENT_REVERSAL,
        ACRONYM,
        CONSTRAINED_GENERATION,
        PYTHON_FUNCTION,
    )
}
"""Every profile by name: `general`, the seven tasks of the Self-Refine paper,
`math_program` (math checked by the draft's own program) and `python_function` (code
checked by tests)."""


def get_profile(name: str) -> PromptSet:
    """Look up a profile by name, or raise ConfigError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ConfigError(f"unknown profile {name!r}; choose one of: {known}") from None
