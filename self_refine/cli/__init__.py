"""The `self-refine` command line: parser, settings, commands and terminal output.

- `main.py`: `main()` and the run/show/resume/profiles/studio commands;
- `batch.py`: the batch and report commands;
- `parser.py`, `options.py`, `settings.py`: arguments, shared options, what the flags mean;
- `console.py`, `terminal.py`, `progress.py`: printing results, asking a person, progress;
- `devserver.py`: `self-refine studio` (the `langgraph dev` server).
"""

from __future__ import annotations

from self_refine.cli.main import main

__all__ = ["main"]
