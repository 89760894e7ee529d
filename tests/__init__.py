"""Tests of langgraph-self-refine; `tests.fakes` and `tests.openai_server` are shared helpers."""
