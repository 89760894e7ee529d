"""The built-in verifiers, each over many formats, and the registry around them."""

from __future__ import annotations

import sys

import pytest

from self_refine import Critique
from self_refine.critics import VERIFIERS, NotApplicable, judge_draft, resolve_verifier
from self_refine.critics.verifiers import answers_match, extract_answer, missing_concepts
from self_refine.errors import ConfigError
from self_refine.models.offline import refine_text

answer = VERIFIERS["answer"]
concepts = VERIFIERS["concepts"]
json_schema = VERIFIERS["json_schema"]


# --- answer -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("draft", "found"),
    [
        ("so the total is \\boxed{42}.", "42"),
        ("We get \\boxed{\\frac{3}{4}} in the end.", "\\frac{3}{4}"),
        ("First 3, then \\boxed{7}; check: 3 + 4 = 7 and 10 apples", "7"),
        ("Natalia sold 48 + 24 = 72 clips.\n#### 72", "72"),
        ("Adding them up, the answer is $1,000.", "$1,000"),
        ("The final answer is 3.5.", "3.5"),
        ("Answer: (B)", "(B)"),
        ("The answer is **42**.", "42"),
        ("The answer is: x = 5.", "x = 5"),
        ("The answer is 0.75 because three of four remain.", "0.75"),
        ("The answer is 1,000, which is a lot.", "1,000"),
        ("She has 5 apples and buys 7 more, 12 in all", "12"),
        ("The temperature fell to -2 degrees", "-2"),
        ("The terms are 1 2 3 5 8", "8"),
        ("She paid 12 345 dollars", "12 345"),
    ],
)
def test_extract_answer_finds_the_final_answer(draft: str, found: str) -> None:
    extracted = extract_answer(draft)
    assert extracted is not None and extracted[0] == found


def test_extract_answer_prefers_boxed_over_later_numbers_and_says_where() -> None:
    assert extract_answer("\\boxed{9} (we used 3 steps)") == ("9", "\\boxed{}")
    assert extract_answer("no number at all") is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("42", "42"),
        ("42.0", 42),
        ("$42", "42"),
        ("\\$42", 42),
        ("1,000", 1000),
        ("1,000,000.5", "1000000.5"),
        ("3/4", "0.75"),
        ("0.75", "3/4"),
        ("\\frac{3}{4}", 0.75),
        ("\\dfrac{1}{3}", "1/3"),
        ("50%", "50"),
        ("7 apples", 7),
        ("1e3", 1000),
        ("\u22122", "-2"),
        ("x = 5", 5),
        ("(B)", "B"),
        ("Paris", "paris"),
        ("  Yes. ", True),
        ("12", ["11", "12"]),
    ],
)
def test_answers_match_tolerates_formatting(given: str, expected: object) -> None:
    assert answers_match(given, expected)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("41", 42), ("0.74", "3/4"), ("1,00", "100"), ("42", "4.2"), ("London", "Paris"), ("", "")],
)
def test_answers_match_rejects_different_answers(given: str, expected: object) -> None:
    assert not answers_match(given, expected)


@pytest.mark.parametrize(
    ("given", "expected", "same"),
    [
        ("100000000000000000001", "100000000000000000000", False),
        ("100000000000000000001", "100000000000000000001", True),
        ("42.0000001", 42, False),
        ("0.1", "1/10", True),
        ("1e400", "1e400", True),
        ("1e400", "1e401", False),
        ("5", "1e400", False),
        ("1e999999999", "1", False),
        ("1e999999999/3", "2", False),
        ("inf", float("inf"), True),
        ("\u221e", "inf", True),
        ("-inf", "inf", False),
        ("0.333333", "1/3", True),
    ],
)
def test_answers_match_compares_numbers_exactly_and_never_crashes(
    given: str, expected: object, same: bool
) -> None:
    assert answers_match(given, expected) is same


def test_answer_verifier_passes_a_right_answer() -> None:
    critique = answer("What is 6 * 7?", "6 * 7 = 42. The answer is 42.", {"answer": "42"})
    assert critique.done and critique.score == 1.0 and critique.feedback == []


def test_answer_verifier_says_what_is_wrong_without_revealing_the_answer() -> None:
    critique = answer("What is 6 * 7?", "6 * 7 = 41. The answer is 41.", {"answer": 42})
    assert not critique.done and critique.score == 0.0
    assert critique.feedback == [
        'The final answer "41" (read from "the answer is") is wrong; '
        "recheck the steps that lead to it."
    ]
    assert "42" not in critique.feedback[0]


def test_answer_verifier_asks_for_an_answer_when_there_is_none() -> None:
    critique = answer("What is 6 * 7?", "I am not sure.", {"answer": 42})
    assert critique.feedback == ['No final answer found: end with "The answer is <answer>."']


def test_answer_verifier_needs_a_reference_answer() -> None:
    for reference in (None, {}, {"answer": ""}, {"concepts": ["x"]}):
        with pytest.raises(NotApplicable, match=r'needs reference\["answer"\]'):
            answer("t", "The answer is 1.", reference)
    with pytest.raises(ConfigError, match="must be a number, a string, true/false or a list"):
        answer("t", "The answer is 1.", {"answer": {"value": 1}})


# --- concepts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("concept", "text"),
    [
        ("dog", "Two dogs play."),
        ("box", "The boxes are full."),
        ("berry", "She picks berries."),
        ("catch", "He is catching the ball."),
        ("catch", "The dog caught it."),
        ("throw", "She throws it far."),
        ("throw", "She threw it far."),
        ("dance", "They were dancing all night."),
        ("dance", "They danced all night."),
        ("run", "A boy running in the park."),
        ("stop", "The bus stopped."),
        ("carry", "She carried the bag."),
        ("leaf", "Leaves fall in autumn."),
        ("knife", "The knives are sharp."),
        ("child", "The children laugh."),
        ("ice cream", "We ate ice creams on the pier."),
        ("ice cream", "An ice-cream stand."),
        ("Frisbee", "a frisbee flies"),
    ],
)
def test_concepts_accept_inflected_forms(concept: str, text: str) -> None:
    assert missing_concepts(text, [concept]) == []


@pytest.mark.parametrize(
    ("concept", "text"),
    [
        ("cat", "The category was clear."),
        ("park", "Birds sing in the garden."),
        ("run", "He ruined it."),
        ("ice cream", "Ice is cold and cream is rich."),
    ],
)
def test_concepts_reject_other_words(concept: str, text: str) -> None:
    assert missing_concepts(text, [concept]) == [concept]


def test_concepts_verifier_lists_each_missing_concept_in_order() -> None:
    critique = concepts(
        "Write a sentence.", "A dog runs.", {"concepts": ["dog", "frisbee", "run", "park"]}
    )
    assert critique.feedback == [
        'Use the word "frisbee".',
        'Use the word "park".',
        "Keep the words already used: dog, run.",
    ]
    assert critique.score == 0.5 and not critique.done
    none_used = concepts("t", "A cat.", {"concepts": ["dog", "park"]})
    assert none_used.feedback == ['Use the word "dog".', 'Use the word "park".']


def test_concepts_verifier_passes_when_all_appear_and_accepts_a_comma_list() -> None:
    critique = concepts("t", "Dogs catch frisbees in parks.", {"concepts": "dog, frisbee; park"})
    assert critique.done and critique.score == 1.0


def test_concepts_feedback_is_phrased_so_the_offline_refiner_acts_on_it() -> None:
    critique = concepts("t", "A dog.", {"concepts": ["dog", "frisbee", "park"]})
    refined = refine_text("A dog.", critique.feedback, edits_per_step=2)
    assert concepts("t", refined, {"concepts": ["dog", "frisbee", "park"]}).done


def test_concepts_verifier_reference_errors() -> None:
    with pytest.raises(NotApplicable, match=r'needs reference\["concepts"\]'):
        concepts("t", "d", {"answer": 1})
    with pytest.raises(ConfigError, match="must be a list of strings"):
        concepts("t", "d", {"concepts": [1, 2]})
    with pytest.raises(ConfigError, match="is empty"):
        concepts("t", "d", {"concepts": [" ", ""]})


# --- json_schema ------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["name", "items"],
    "properties": {
        "name": {"type": "string"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["price"],
                "properties": {"price": {"type": "number", "minimum": 0}},
            },
        },
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "draft",
    [
        '{"name": "cart", "items": [{"price": 2.5}]}',
        'Here it is:\n```json\n{"name": "cart", "items": []}\n```\n',
        '  {"name": "x", "items": [{"price": 0}]}  \n',
    ],
)
def test_json_schema_accepts_valid_json(draft: str) -> None:
    critique = json_schema("t", draft, {"schema": SCHEMA})
    assert critique.done and critique.feedback == [] and critique.score == 1.0


def test_json_schema_lists_every_violation_with_its_path() -> None:
    draft = '{"name": 3, "items": [{"price": -1}, {}], "extra": true}'
    critique = json_schema("t", draft, {"schema": SCHEMA})
    assert not critique.done
    assert critique.feedback == [
        "At $: Additional properties are not allowed ('extra' was unexpected).",
        "At $.items[0].price: -1 is less than the minimum of 0.",
        "At $.items[1]: 'price' is a required property.",
        "At $.name: 3 is not of type 'string'.",
    ]
    assert critique.score == 0.2


@pytest.mark.parametrize(
    ("draft", "message"),
    [
        ('{"name": "x",}', "The draft is not valid JSON: Expecting property name enclosed"),
        ("Sure! Here is the JSON you asked for.", "The draft is not valid JSON: Expecting value"),
        ("", "The draft is not valid JSON"),
    ],
)
def test_json_schema_reports_invalid_json(draft: str, message: str) -> None:
    critique = json_schema("t", draft, {"schema": SCHEMA})
    assert critique.feedback[0].startswith(message) and critique.score == 0.0


def test_json_schema_reference_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(NotApplicable, match=r'needs reference\["schema"\]'):
        json_schema("t", "{}", None)
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        json_schema("t", "{}", {"schema": {"type": "no-such-type"}})
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[verifiers\]" in a clone'):
        json_schema("t", "{}", {"schema": SCHEMA})


# --- registry and judge_draft -------------------------------------------------


def test_every_builtin_verifier_is_registered_by_name() -> None:
    assert set(VERIFIERS) == {"answer", "python_tests", "concepts", "json_schema", "program"}
    assert all(v.summary for v in VERIFIERS.values())


def test_resolve_verifier_accepts_names_and_callables_and_names_the_fix() -> None:
    def no_todo(task: str, draft: str, reference: object) -> Critique:
        return Critique(feedback=[] if "TODO" not in draft else ["Remove the TODO."])

    assert resolve_verifier("concepts").name == "concepts"
    assert resolve_verifier(no_todo).name == "no_todo"
    with pytest.raises(
        ConfigError, match=r"unknown critic 'answers'; known: 'llm', 'human', 'answer'"
    ):
        resolve_verifier("answers")
    with pytest.raises(ConfigError, match="a critic must be a name"):
        resolve_verifier(42)  # type: ignore[arg-type]


def test_judge_draft_is_none_when_no_verifier_applies() -> None:
    assert judge_draft("t", "The answer is 4.", None, ["answer", "llm"]) is None
    assert judge_draft("t", "The answer is 4.", {"answer": 4}, ["answer", "llm"]) is True
    assert judge_draft("t", "The answer is 5.", {"answer": 4}, ["answer"]) is False
    both = {"answer": 4, "concepts": ["answer"]}
    assert judge_draft("t", "The answer is 4.", both, ["answer", "concepts"]) is True
    assert (
        judge_draft("t", "It is 4.", {"answer": 4, "concepts": ["five"]}, ["answer", "concepts"])
        is False
    )


def test_judge_draft_uses_custom_callables() -> None:
    def short(task: str, draft: str, reference: object) -> Critique:
        return Critique(done=len(draft) < 10)

    assert judge_draft("t", "tiny", None, [short]) is True
    assert judge_draft("t", "far too long a draft", None, [short]) is False


def test_answers_compare_exactly_and_never_overflow() -> None:
    from self_refine.critics.verifiers.answer import answers_match

    assert not answers_match("100000000000000000001", "100000000000000000000")
    assert answers_match("100000000000000000000", "1e20")
    assert answers_match("1e400", "1e400") and not answers_match("1e400", "1e401")
    assert not answers_match("0.1000001", "0.1")
    assert answers_match("0.333333", "1/3") and answers_match("\\frac{3}{4}", "0.75")


def test_the_answer_is_read_outside_the_drafts_python_blocks() -> None:
    program = 'x = 3 * 94\nprint("The answer is", x)\n'
    draft = f"First I compute the total.\n```python\n{program}```\nThe answer is 282."
    assert extract_answer(draft) == ("282", '"the answer is"')
    assert answer("t", draft, {"answer": "282"}).done
    # a program's print is no statement of the answer, however the draft ends
    assert extract_answer(f"```python\n{program}```") is None
    # an unlabelled block is prose the model fenced: its statement counts
    assert extract_answer("```\nThe answer is 41.\n```") == ("41", '"the answer is"')


# --- reading a final answer: numbers written whole, in linear time ----------


@pytest.mark.parametrize(
    ("draft", "expected"),
    [
        ("The answer is 1 000.", 1000),
        ("She pays 12 345 dollars", 12345),
        ("The answer is 12 345 dollars.", 12345),
        ("The answer is 1,000,000.", 1000000),
        ("The answer is 1\u00a0000.", 1000),
        ("The answer is 1\u2009000.", 1000),
        ("The answer is 1\u202f000 000.", 1000000),
        ("The answer is 2,5.", 2.5),
        ("The answer is 1 234,5 m.", 1234.5),
        ("The answer is 1,00.", 1),
        ("The answer is 1,00,000.", 100000),
    ],
)
def test_grouped_thousands_and_decimal_commas_read_as_one_number(
    draft: str, expected: float
) -> None:
    assert answer("t", draft, {"answer": expected}).done


@pytest.mark.parametrize(
    ("draft", "fragment"),
    [
        ("The answer is 1 000.", "000"),
        ("The answer is 12 345 dollars.", "345"),
        ("The answer is 1,00.", "00"),
        ("The answer is 2,5.", "5"),
        ("The answer is 1 0000.", "0000"),
        ("The total is 7 1 0000", "0000"),
    ],
)
def test_no_piece_of_a_number_is_quoted_back_as_the_answer(draft: str, fragment: str) -> None:
    found = extract_answer(draft)
    assert found is not None and found[0] != fragment
    feedback = " ".join(answer("t", draft, {"answer": 999}).feedback)
    assert f'"{fragment}"' not in feedback


def test_digits_that_are_no_one_number_are_called_unreadable() -> None:
    feedback = answer("t", "The answer is 1 0000.", {"answer": 10000}).feedback
    assert feedback and "is not one number" in feedback[0] and '"1 0000"' in feedback[0]


_LONG = 600_000


@pytest.mark.timeout(5)
@pytest.mark.parametrize(
    "draft",
    [
        "The answer is " * (_LONG // 14),
        "the answer is: " * (_LONG // 15) + "42",
        "\n" * _LONG,
        "The answer is" + "\n" * _LONG,
        "```py" * (_LONG // 5),
        "#### a" + " " * _LONG + "b",
        "1 " * (_LONG // 2),
    ],
    ids=["statements", "nested", "newlines", "blank_value", "fences", "hashes", "digits"],
)
def test_reading_the_answer_of_a_long_draft_is_linear(draft: str) -> None:
    # Each shape took seconds to hours when a read was quadratic; read in linear time,
    # all of them finish far inside the guard.
    extract_answer(draft)
    answer("t", draft, {"answer": 42})
