"""Where runs are kept: the CLI's checkpointers (SQLite, PostgreSQL) and per-thread settings.

- `storage.py`: choosing and opening a checkpointer, the thread settings table;
- `failures.py`: what a storage error means (damaged, not writable, full);
- `postgres.py`: PostgreSQL connection settings and its checkpointer;
- `sqlite.py`: a batch's async SQLite saver; `locks.py`, `lock_files.py`: one writer
  per thread.
"""
