"""Print the peers' versions as JSON (run in the peers' environment)."""

import json
from importlib import metadata

print(json.dumps({name: metadata.version(name) for name in ("dspy", "langgraph-reflection")}))
