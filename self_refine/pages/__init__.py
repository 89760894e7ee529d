"""HTML report pages: one self-contained file per thread or batch (Jinja2 templates).

`thread.py` and `batch.py` build the data a page shows, `diff.py` the word-level
diffs, `charts.py` the inline SVG charts, `render.py` the page itself.
"""

from __future__ import annotations

from self_refine.pages.render import write_batch_page, write_thread_page

__all__ = ["write_batch_page", "write_thread_page"]
