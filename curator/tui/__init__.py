"""The review app (`curator review`, `curator.tui.app.ReviewApp`) and the triage app: the
only package that imports textual. Importing it sets the frame rate textual will use."""

from __future__ import annotations

import os

# Textual draws at most TEXTUAL_FPS frames a second, and a frame asked for soon after
# another waits up to two periods (33 ms at its default 60): the next card, shown right
# after the label keys' frame, waited that long. At 240 that wait is under 9 ms; frames
# are still drawn only when something changed. Set before textual is imported; a user's
# own TEXTUAL_FPS wins.
os.environ.setdefault("TEXTUAL_FPS", "240")
