"""A small corpus for the generate tests: identifiers, links between documents, and a
document with two revisions whose answer changed."""

from __future__ import annotations

import json
from pathlib import Path

from curator.corpus import add_paths

FILLER = (
    "Operators check the dashboard first, then the logs of the affected service, and write "
    "down what they saw in the incident channel so that the next shift can follow along."
)

DOCS = {
    "errors.md": f"""# Parser errors

## PARSER-E101

PARSER-E101 means the uploaded manifest could not be decoded. The parser gives up after
`parser.max_retries` attempts and moves the file to the dead-letter queue. {FILLER}

## PARSER-E204

PARSER-E204 means a required column such as weight is missing from the manifest file.
Ask the merchant to export the file again with every column present. {FILLER}
""",
    "alerts/DiskAlmostFull.md": f"""# DiskAlmostFull

DiskAlmostFull fires when a node has less than ten percent of its disk left for more than
fifteen minutes. Follow the [disk runbook](../runbooks/disk.md) to free space. {FILLER}
""",
    "runbooks/disk.md": f"""# Disk runbook

## Freeing space

Delete old container images with `crictl rmi --prune` and rotate the journal with
`journalctl --vacuum-size=500M` before anything else. {FILLER}

## Growing the volume

If the node still has little space, grow the volume in the cloud console and then run
`resize2fs` on the device; no reboot is needed for this. {FILLER}
""",
    "faq.md": f"""# Frequently asked questions

## Who owns the label printers?

The warehouse technology team owns every label printer and handles their repairs and
replacements through the facilities desk during office hours. {FILLER}
""",
}

REVISIONS = [
    {"path": "limits.md", "revision": "aaa111", "committed_at": "2026-10-01T10:00:00Z",
     "text": f"# Limits\n\n## Rate limit\n\nThe public API allows 10 requests per second for every "
             f"merchant account, measured over a sliding window of one minute. {FILLER}\n"},
    {"path": "limits.md", "revision": "bbb222", "committed_at": "2026-11-01T10:00:00Z",
     "text": f"# Limits\n\n## Rate limit\n\nThe public API allows 25 requests per second for every "
             f"merchant account, measured over a sliding window of one minute. {FILLER}\n"},
]


def load(ws, tmp: Path) -> None:
    docs = tmp / "docs"
    for name, text in DOCS.items():
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    history = tmp / "revisions.jsonl"
    history.write_text("".join(json.dumps(r) + "\n" for r in REVISIONS), encoding="utf-8")
    add_paths(ws, [history])
    add_paths(ws, [docs])
