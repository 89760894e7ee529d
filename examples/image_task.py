"""A task with an image: the blocks reach the generator, critic and refiner as given.

The task is LangChain message content, text and image blocks. The offline
stand-in and the local model read text only, so they are refused before any call;
a model that reads images gets the image in every request. Here the chat model is
scripted and records what it is sent, so the example runs anywhere: use a vision
model (`ChatOpenAI(model="gpt-4o-mini")`) instead.
"""

from __future__ import annotations

import base64
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from self_refine import ConfigError, refine

# A 1x1 red PNG; a URL works too: {"type": "image", "url": "https://..."}.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c49444154789c63f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
    )
).decode()
task = [
    {"type": "text", "text": "Describe the picture in one sentence using the words: red, dot."},
    {"type": "image", "base64": PNG, "mime_type": "image/png"},
]

try:
    refine(task, model="offline")
except ConfigError as error:
    print(f"offline: {error}")


class Recording(GenericFakeChatModel):
    """Replies in order and notes the roles whose requests carried the image."""

    seen: list[str] = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        images = [
            b
            for m in messages
            if isinstance(m.content, list)
            for b in m.content
            if isinstance(b, dict) and b.get("type") == "image"
        ]
        self.seen.append(f"{messages[0].text.splitlines()[0]} ({len(images)} image)")
        return super()._generate(messages, *args, **kwargs)


replies = [
    "A dot.",
    '{"feedback": ["Name its colour: use the word red."], "score": 0.5, "done": false}',
    "A red dot.",
    '{"feedback": [], "score": 1.0, "done": true}',
]
model = Recording(messages=iter([AIMessage(reply) for reply in replies]))
result = refine(task, model=model)
print("\n".join(model.seen))
print(f"answer: {result['answer']}")
