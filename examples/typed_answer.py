"""A typed answer: the refined artifact is a pydantic object, not prose.

Drafts are asked for as structured output of `Cat`; a draft that does not
validate gets the validation errors as its feedback; a valid one goes on to
the run's critics (here one verifier of our own), and the output's
`structured_response` is the validated `Cat`.

The chat model here is scripted, so the example runs anywhere: use a real one
(`ChatOpenAI(model="gpt-4o-mini")`, `"local"`, ...) and the "llm" critic instead.
"""

from __future__ import annotations

import json

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from pydantic import BaseModel, Field

from self_refine import Critique, refine


class Cat(BaseModel):
    name: str
    age: int = Field(ge=0, description="Age in whole years.")


def plausible(task: str, draft: str, reference: object) -> Critique:
    """A verifier of the typed value: a cat is younger than 30."""
    age = json.loads(draft)["age"]
    if age < 30:
        return Critique(done=True, score=1.0)
    return Critique(feedback=[f"A cat of {age} is unlikely: give an age under 30."], score=0.5)


replies = [
    '{"name": "Tom", "age": "three"}',
    '{"name": "Tom", "age": 33}',
    '{"name": "Tom", "age": 3}',
]
model = GenericFakeChatModel(messages=iter([AIMessage(reply) for reply in replies]))
result = refine(
    "Describe a cat as JSON: its name and its age.",
    model=model,
    response_format=Cat,
    critics=[plausible],
)
for attempt in result["attempts"]:
    print(f"draft {attempt['iteration']}: {' '.join(attempt['draft'].split())}")
    for item in attempt["critique"]["feedback"]:
        print(f"  feedback: {item}")
print(f"structured_response: {result['structured_response']!r}")
