"""Where runs are kept: the CLI's checkpointers (SQLite, PostgreSQL) and per-thread settings.

- `storage.py`: choosing and opening a checkpointer, the thread settings table;
- `postgres.py`: PostgreSQL connection settings and its checkpointer.
"""
