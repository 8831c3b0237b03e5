"""squall: an omniscient debugger for Python.

Record a program (``squall run script.py``), then walk its timelines: ``squall.indexes`` for the
queries, ``squall.values`` to see values as they were, ``squall.api`` to control recording and
``squall.config`` for what is instrumented.

PYTEST_DONT_REWRITE: pytest marks this package for assertion rewriting (it provides a pytest
plugin), and under ``squall run -m pytest`` it is imported before pytest starts; without this
marker pytest warns that it cannot rewrite it, which a ``filterwarnings = error`` configuration
turns into a startup failure.
"""

from squall import api, config, indexes, values
from squall._version import __version__
from squall.api import flow
from squall.bookmarks import bookmark, bookmarks
from squall.recording import Recording, live, load

__all__ = [
    "Recording",
    "api",
    "bookmark",
    "bookmarks",
    "config",
    "flow",
    "indexes",
    "live",
    "load",
    "values",
    "__version__",
]
