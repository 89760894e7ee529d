"""The `self-refine` command line: parser, settings, commands and terminal output.

- `main.py`: `main()`, the commands table and exit codes; profiles and studio;
- `threads.py`: run and resume; `show.py`: show; `failures.py`: what a failure says;
- `batch.py`: the batch and report commands;
- `parser.py`, `options.py`, `settings.py`: arguments, shared options, what the flags mean;
- `console.py`, `terminal.py`, `progress.py`: printing results, asking a person, progress;
- `devserver.py`: `self-refine studio` (the `langgraph dev` server).
"""

from __future__ import annotations

from self_refine.cli.main import main

__all__ = ["main"]
