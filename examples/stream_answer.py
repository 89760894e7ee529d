"""Stream a run to a chat front end: drafts as progress, the chosen answer as the reply.

With `stream_mode="messages"`, every model call streams (its metadata says the
role: generator, critic or refiner), and the run's last message is an
`AIMessage` named "answer": the chosen draft. A front end shows the drafts as
progress and that message as the reply. The offline stand-in writes the drafts
here; any chat model streams the same way.
"""

from __future__ import annotations

from self_refine import create_self_refine_graph

graph = create_self_refine_graph("offline").compile()
task = {"task": "Write one sentence using the words: dog, frisbee, park."}
for message, metadata in graph.stream(task, stream_mode="messages"):
    if message.name == "answer":
        print(f"reply: {message.content}")
    elif metadata.get("role") in ("generator", "refiner"):
        print(f"progress ({metadata['role']}): {message.content}")
