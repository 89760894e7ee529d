"""Model strings to chat models: resolution, the offline stand-in, and the calls the nodes make.

- `resolve.py`: "provider:model" strings, base URLs and keys to LangChain chat models;
- `offline.py`: the deterministic offline model (not a language model);
- `calls.py`: model calls with empty-reply retries, refusals, error wrapping, trace tags.
"""
