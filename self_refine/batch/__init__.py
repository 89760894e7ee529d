"""Refining datasets: the batch engine and its figures.

- `api.py`: `refine_batch` / `arefine_batch` for Python callers;
- `runner.py`: one item at a time from input to output line, stable thread ids;
- `items.py`: JSONL input, ids and shards; `output.py`: the fsynced results file;
- `judge.py`: judging answers;
- `engines.py`: a local checkpointer or a LangGraph server; `ray_engine.py`: Ray's actors
  (the ray extra); `schedule.py`: concurrency;
- `metrics.py`: summary math; `report.py`: reading results back and the plot.
"""
