"""The review app (`curator review`, `curator.tui.app.ReviewApp`) and the triage app: the
only package that imports textual. Importing it sets the frame rate textual will use."""

from __future__ import annotations

import os

# A frame asked for soon after another waits up to two frame periods (33 ms at textual's
# default 60 fps); at 240 it is under 9 ms. Set before textual is imported; a user's wins.
os.environ.setdefault("TEXTUAL_FPS", "240")
