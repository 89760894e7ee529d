"""Performance measurements of langgraph-self-refine; run them with `make bench`."""
