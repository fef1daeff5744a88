"""Import sqlite-utils without pandas and numpy.

sqlite-utils imports pandas and numpy when they are installed, only to accept their
types as column values, which curator never passes. That costs 0.3-0.5 s on every
command and app start. The modules are hidden only while sqlite-utils is imported; a
later `import pandas` in the same process works as usual.
"""

from __future__ import annotations

import sys

_HIDDEN = ("pandas", "numpy")

if "sqlite_utils.db" not in sys.modules:
    hidden = [name for name in _HIDDEN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` fail fast
    try:
        import sqlite_utils  # noqa: F401
    finally:
        for name in hidden:
            del sys.modules[name]
