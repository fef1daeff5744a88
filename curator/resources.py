"""Files that ship with curator: default prompts and the demo bundle.

In a wheel they live in `curator/_bundled/`; in a source checkout (editable install)
they are the repository's top-level `prompts/` and `datasets/`.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled(name: str) -> Path:
    """Path of a bundled top-level folder: `prompts` or `datasets`."""
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"curator's bundled {name}/ folder is missing from this installation")
