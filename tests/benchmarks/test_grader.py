"""The grader fails the forms it says it fails, and passes right answers whatever they say
about the feedback they followed: the answers of the committed runs it judged wrongly."""

from __future__ import annotations

import pytest

from benchmarks.quality.feedback import Grader
from benchmarks.quality.honesty import answer_forms
from benchmarks.quality.sentences import sentence_problems


def _constrained(words: list[str]) -> dict[str, object]:
    task = "Write one or two natural sentences that use all of these words: " + ", ".join(words)
    return {"task": task + ".", "grade": {"concepts": words}}


# Counted right by the grader of the reported run 1127 (budget-local-...-2026-11-28-1127).
GAMED = {
    "constrained-049": (
        "Tower of umbrella jacket drum whistle.",
        ["tower", "umbrella", "jacket", "drum", "whistle"],
        "no verb",
    ),
    "constrained-082": (
        "Guitar helmet on pillow next to bridge.",
        ["guitar", "helmet", "pillow", "bridge"],
        "no verb",
    ),
    "constrained-069": (
        "<Pillow> wraps the <needle> tightly.</needle> on the <scarf> with the <meadow> beneath "
        "it.</meadow> and <castle> on the <canyon> with the <wagon> above it.</wagon> and "
        "<engine> on the <engine> itself.</engine>.",
        ["pillow", "needle", "scarf", "meadow", "castle", "canyon", "wagon", "engine"],
        "markup",
    ),
    "constrained-048": (
        "Tower of lights, lanterns in the library, pocket of books.",
        ["tower", "lantern", "library", "pocket"],
        "no verb",
    ),
    "constrained-064": (
        "Mirrored, with a drum playing in the background, a pillow covered with carpet, a "
        "umbrella hanging on the island, and a pocket on the pocket.",
        ["mirror", "drum", "pillow", "carpet", "umbrella", "island", "pocket"],
        "verbless list",
    ),
    "constrained-072": (
        "Puddle falls on the sidewalk, bicycle slides through the puddle, valley lies between "
        "the bicycle and the puddle, shovel is used to dig out the dirt, and field is a large "
        "area with grass.",
        ["puddle", "bicycle", "valley", "shovel", "field"],
        "clause per word",
    ),
}
LIKE_THEM = [
    ("Kite over meadow beside tower.", ["kite", "meadow", "tower"]),
    (
        "Kites flying over the meadow, rabbits hopping in the field, and a drum beating.",
        ["kite", "meadow", "rabbit", "field", "drum"],
    ),
    (
        "Anchor holds the boat, river carries the leaf, bridge spans the gap.",
        ["anchor", "river", "bridge"],
    ),
    ("The **rocket** rose above the *desert*.", ["rocket", "desert"]),
]
SENTENCES = [
    (
        "A rabbit hops across the meadow while a kite flies above the tower.",
        ["rabbit", "meadow", "kite", "tower"],
    ),
    (
        "Rabbits play near the fountain, and the children fly kites over the meadow.",
        ["rabbit", "fountain", "kite", "meadow"],
    ),
    ("Mia carried a basket to the beach as thunder rumbled.", ["basket", "beach", "thunder"]),
    (
        "A brave explorer navigates a rugged mountain road, encountering a quaint library, "
        "a playful dolphin swimming near the shore and a bridge providing a scenic overlook.",
        ["mountain", "library", "dolphin", "bridge"],
    ),
    ("The train journey began with the pencil and compass.", ["train", "pencil", "compass"]),
    (
        "A guitar sits on a garden bench, anchored by a sturdy anchor.",
        ["guitar", "garden", "anchor"],
    ),
]


@pytest.mark.parametrize("name", list(GAMED))
def test_the_six_answers_counted_right_before_grade_wrong(name: str) -> None:
    text, words, form = GAMED[name]
    assert Grader("constrained")(_constrained(words), text) is False
    assert form in sentence_problems(text, words)
    assert form in answer_forms("", text, {"concepts": words})  # the page names the form


@pytest.mark.parametrize(("text", "words"), LIKE_THEM)
def test_forms_like_them_grade_wrong(text: str, words: list[str]) -> None:
    assert sentence_problems(text, words)
    assert Grader("constrained")(_constrained(words), text) is False


@pytest.mark.parametrize(("text", "words"), SENTENCES)
def test_sentences_that_use_the_words_grade_right(text: str, words: list[str]) -> None:
    assert sentence_problems(text, words) == []
    assert Grader("constrained")(_constrained(words), text) is True


# Forms a hand audit of 100 reported answers found passed (benchmarks/results/
# audit-constrained-2026-12-07.md), written anew here: each fails, by the rule named.
AUDITED = [
    (
        "A kite flies over the hill, a rabbit hops by the road, a drum beats in the hall, and "
        "a lantern glows.",
        ["kite", "rabbit", "drum", "lantern"],
        "clause per word",
    ),
    ("The ladder leaned on the ladder near the canyon.", ["ladder", "canyon"], "word on itself"),
    ("A pocket sat in the pocket of the jacket.", ["pocket", "jacket"], "word on itself"),
    (
        "River flows over the candle while the rocket waits.",
        ["river", "candle", "rocket"],
        "bare subject",
    ),
    (
        "Bridge the gap with the basket, and the drum plays in the forest.",
        ["bridge", "basket", "drum", "forest"],
        "imperative",
    ),
]
# ... and sentences near those forms that stay right.
NEAR_THEM = [
    (
        "In the desert, a lantern cast a warm glow on the sand, while a paddle bobbed gently in "
        "the water, a feather fluttered in the breeze, and a blanket draped over a sleeping "
        "camel.",
        ["lantern", "desert", "paddle", "feather", "blanket"],
    ),
    (
        "Drumming on the paddle, the candle flickers, and the river flows gently.",
        ["drum", "paddle", "candle", "river"],
    ),
    ("Thunder rolled over the valley as the rabbit hid.", ["thunder", "valley", "rabbit"]),
    ("Castle walls rose above the meadow where a kite flew.", ["castle", "meadow", "kite"]),
    ("The band used a drum to drum up a crowd by the river.", ["drum", "river"]),
    ("Bicycle in hand, Mia walked to the harbor.", ["bicycle", "harbor"]),
]


@pytest.mark.parametrize(("text", "words", "form"), AUDITED)
def test_forms_the_audit_found_grade_wrong(text: str, words: list[str], form: str) -> None:
    assert form in sentence_problems(text, words)
    assert Grader("constrained")(_constrained(words), text) is False


@pytest.mark.parametrize(("text", "words"), NEAR_THEM)
def test_sentences_near_the_audited_forms_grade_right(text: str, words: list[str]) -> None:
    assert sentence_problems(text, words) == []
    assert Grader("constrained")(_constrained(words), text) is True


# Right answers failed for mentioning the feedback (runs 0624 and tune-0527).
WORKED = [
    (
        "arithmetic-043",
        "311",
        (
            "Aiko drives at 55 km per hour for 5 hours, then at 36 km per hour for 1 hours. "
            "How many kilometres does Aiko drive in total?"
        ),
        (
            "Let's solve this step by step:\n\n1. First, we calculate the distance Aiko drives "
            "at 55 km per hour for 5 hours:\n   \\[\n   \\text{Distance} = 55 \\, \\text{km/h} "
            "\\times 5 \\, \\text{h} = 275 \\, \\text{km}\n   \\]\n\n2. Next, we calculate the "
            "distance Aiko drives at 36 km per hour for 1 hour:\n   \\[\n   \\text{Distance} = "
            "36 \\, \\text{km/h} \\times 1 \\, \\text{h} = 36 \\, \\text{km}\n   \\]\n\n3. "
            "Now, we add the two distances together to find the total distance Aiko drives:\n  "
            " \\[\n   \\text{Total Distance} = 275 \\, \\text{km} + 36 \\, \\text{km} = 311 "
            "\\, \\text{km}\n   \\]\n\n4. The final answer is:\n   \\[\n   \\boxed{311}\n   "
            '\\]\n\nThe feedback is: "The answer is 311."'
        ),
    ),
    (
        "arithmetic-082",
        "149",
        (
            "Nora reads 8 pages a day for 3 days, then 25 pages a day for 5 days. How many "
            "pages does Nora read in total?"
        ),
        (
            "To solve the task again, we'll follow the steps provided in the feedback:\n\n1. "
            "Calculate the number of pages Nora reads in the first 3 days:\n   \\[\n   8 "
            "\\text{ pages/day} \\times 3 \\text{ days} = 24 \\text{ pages}\n   \\]\n\n2. "
            "Calculate the number of pages Nora reads in the next 5 days:\n   \\[\n   25 "
            "\\text{ pages/day} \\times 5 \\text{ days} = 125 \\text{ pages}\n   \\]\n\n3. Add "
            "the pages from both days to get the total number of pages Nora reads:\n   \\[\n   "
            "24 \\text{ pages} + 125 \\text{ pages} = 149 \\text{ pages}\n   \\]\n\nTherefore, "
            "the total number of pages Nora reads is \\(\\boxed{149}\\)."
        ),
    ),
    (
        "arithmetic-002",
        "282",
        (
            "Aiko reads 25 pages a day for 6 days, then 33 pages a day for 4 days. How many "
            "pages does Aiko read in total?"
        ),
        (
            "To solve this problem, we'll follow the steps outlined in the feedback:\n\n1. "
            "Calculate the total number of pages read in the first 6 days.\n2. Calculate the "
            "total number of pages read in the next 4 days.\n3. Add the two amounts together "
            "to get the total number of pages read.\n\nLet's start with the first part:\n\n"
            "Aiko reads 25 pages a day for 6 days. So, the total number of pages read in the "
            "first 6 days is:\n\\[ 25 \\text{ pages/day} \\times 6 \\text{ days} = 150 \\text{ "
            "pages} \\]\n\nNext, we calculate the total number of pages read in the next 4 "
            "days:\n\nAiko reads 33 pages a day for 4 days. So, the total number of pages read "
            "in the next 4 days is:\n\\[ 33 \\text{ pages/day} \\times 4 \\text{ days} = 132 "
            "\\text{ pages} \\]\n\nNow, we add the two amounts together to get the total "
            "number of pages read:\n\\[ 150 \\text{ pages} + 132 \\text{ pages} = 282 \\text{ "
            "pages} \\]\n\nTherefore, the total number of pages Aiko reads in total is:\n\\[ "
            "\\boxed{282} \\]"
        ),
    ),
    (
        "arithmetic-017",
        "275",
        (
            "Ben reads 30 pages a day for 5 days, then 25 pages a day for 5 days. How many "
            "pages does Ben read in total?"
        ),
        (
            "To solve this task again, we'll follow the steps provided in the feedback:\n\n1. "
            "Calculate the total number of pages read in the first day:\n   - Ben reads 30 "
            "pages a day for 5 days.\n   - Total pages read in the first day = \\(30 \\text{ "
            "pages/day} \\times 5 \\text{ days} = 150 \\text{ pages}\\).\n\n2. Calculate the "
            "total number of pages read in the second day:\n   - Ben reads 25 pages a day for "
            "5 days.\n   - Total pages read in the second day = \\(25 \\text{ pages/day} "
            "\\times 5 \\text{ days} = 125 \\text{ pages}\\).\n\n3. Add the total pages read "
            "in the first day and the second day to get the total number of pages read:\n   - "
            "Total pages read = \\(150 \\text{ pages} + 125 \\text{ pages} = 275 \\text{ "
            "pages}\\).\n\nTherefore, the answer is \\(\\boxed{275}\\)."
        ),
    ),
]


@pytest.mark.parametrize(("name", "key", "task", "text"), WORKED)
def test_a_worked_right_answer_that_mentions_the_feedback_grades_right(
    name: str, key: str, task: str, text: str
) -> None:
    item = {"task": task, "grade": {"answer": key}}
    assert Grader("arithmetic")(item, text) is True
    assert Grader("arithmetic")(item, text.replace(key, str(int(key) + 1))) is False


def test_a_remark_about_an_answer_still_grades_wrong() -> None:
    item = {"task": "How many?", "grade": {"answer": "28"}}
    remark = 'The final answer "28" (read from the last number) is wrong; recheck the steps. 28'
    assert Grader("arithmetic")(item, remark) is False


CODE_046 = (
    '```python\ndef top_k(numbers, k):\n    """\n    Return the k largest numbers in '
    "descending order (all of them when k exceeds the count, [] when k is 0 or less).\n\n    "
    ":param numbers: List of numbers to sort.\n    :param k: Number of largest numbers to "
    'return.\n    :return: List of the k largest numbers in descending order.\n    """\n    # '
    "Sort the numbers in descending order\n    sorted_numbers = sorted(numbers, reverse=True)\n"
    "    \n    # Return the first k elements\n    return sorted_numbers[:k]\n\n# Example "
    "usage\nassert top_k([5, 1, 9, 3], 2) == [9, 5]\nassert top_k([2, 8], 1) == [8]\n```"
)
CODE_046_FEEDBACK = (
    "The function should return the k largest numbers in descending order when k exceeds the "
    "count, [] when k is 0 or less."
)
CODE_046_FIRST = (
    "```python\ndef top_k(numbers, k):\n    # Sort the numbers in descending order\n    "
    "sorted_numbers = sorted(numbers, reverse=True)\n    # Return the first k elements\n    "
    "return sorted_numbers[:k]\n```"
)


def test_a_right_function_sharing_words_with_a_critique_grades_right() -> None:
    """code-046 (run 1058): a right `top_k` whose docstring shares six words with a
    critique that paraphrased the spec."""
    pytest.importorskip("self_refine.critics.sandbox.host")
    from benchmarks.quality.sets import make_set
    from benchmarks.quality.spend import _reading

    item = make_set("code", None, seed=2026)[46]
    usage = {"input_tokens": 90, "output_tokens": 10, "total_tokens": 100}
    attempts = [
        {
            "iteration": 0,
            "draft": CODE_046_FIRST,
            "usage": usage,
            "critique": {"feedback": [CODE_046_FEEDBACK], "score": 0.5},
        },
        {
            "iteration": 1,
            "draft": CODE_046,
            "usage": usage,
            "critique": {"feedback": [], "score": 1.0},
        },
    ]
    read = _reading(item, attempts, 200, Grader("code"))
    assert read["answer"] == CODE_046 and read["feedback_wording"]  # still marked
    assert read["correct"] is True and "feedback wording" not in read["forms"]


def test_feedback_wording_counts_only_where_words_and_shape_judge_the_answer() -> None:
    assert Grader("constrained").counts_feedback_wording
    assert not Grader("code").counts_feedback_wording
    assert not Grader("arithmetic").counts_feedback_wording
    assert not Grader("humaneval").counts_feedback_wording


def test_regrade_judges_a_runs_own_answers_again_and_says_what_moved() -> None:
    from benchmarks.quality.regrade import page, regrade

    words = ["guitar", "helmet", "pillow", "bridge"]
    task = _constrained(words)["task"]
    gamed, right = (
        GAMED["constrained-082"][0],
        "A guitar and a helmet rest on the pillow by the bridge.",
    )
    records = [
        # a first draft's record keeps no grade: the run's other records of the task give it
        {
            "set": "constrained",
            "strategy": "first",
            "id": "c-1",
            "task": task,
            "answer": gamed,
            "correct_first": True,
        },
        {
            "set": "constrained",
            "strategy": "sample",
            "id": "c-1",
            "task": task,
            "grade": {"concepts": words},
            "budgets": [
                {"multiple": 1, "answer": gamed, "correct": True},
                {"multiple": 4, "answer": right, "correct": True},
            ],
        },
    ]
    found = regrade(records, ["constrained"])["constrained"]
    assert found["first"] == {"old": {"c-1": True}, "new": {"c-1": False}}
    assert found["strategies"]["sample"][4] == {"old": {"c-1": True}, "new": {"c-1": True}}
    shown = "\n".join(page("run", {"constrained": found}))
    assert "right -> wrong [no verb]" in shown and "1/0, p = 1.000" in shown
