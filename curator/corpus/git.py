"""Revisions from git: the last commit of each file, and every past revision (--history)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from curator.corpus.sources import iso_utc


@dataclass(frozen=True)
class Commit:
    sha: str
    committed_at: str


def _git(root: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(root), *args], input=input, capture_output=True, check=True
    ).stdout


def work_tree(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None."""
    folder = path if path.is_dir() else path.parent
    try:
        out = _git(folder, "rev-parse", "--show-toplevel")
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        return None
    return Path(out.decode().strip()).resolve()


def _log(root: Path, pathspec: str) -> Iterator[tuple[Commit, list[str]]]:
    """Commits touching `pathspec`, newest first, with the files each changed."""
    out = _git(root, "log", "--format=%x00%H %cI", "--name-only", "--no-renames", "--", pathspec)
    for block in out.decode("utf-8", errors="replace").split("\x00")[1:]:
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        sha, when = lines[0].split(" ", 1)
        yield Commit(sha, iso_utc(when) or when), lines[1:]


def last_commits(root: Path, pathspec: str) -> dict[str, Commit]:
    """Repository-relative path -> the last commit that touched it."""
    found: dict[str, Commit] = {}
    for commit, files in _log(root, pathspec):
        for name in files:
            found.setdefault(name, commit)
    return found


def changed_files(root: Path, pathspec: str) -> set[str]:
    """Files whose working copy differs from HEAD (modified, added, untracked)."""
    out = _git(root, "status", "--porcelain", "-z", "--untracked-files=all", "--", pathspec)
    changed = set()
    for entry in out.decode("utf-8", errors="replace").split("\x00"):
        if len(entry) > 3:
            changed.add(entry[3:])
    return changed


def history(root: Path, pathspec: str) -> Iterator[tuple[str, Commit, bytes]]:
    """(repository path, commit, content) for every revision of every file, oldest first.
    Contents come from one `git cat-file --batch` process."""
    wanted: list[tuple[str, Commit]] = []
    for commit, files in _log(root, pathspec):
        wanted.extend((name, commit) for name in files)
    wanted.reverse()
    if not wanted:
        return
    request = "".join(f"{c.sha}:{name}\n" for name, c in wanted).encode()
    out = _git(root, "cat-file", "--batch", input=request)
    position = 0
    for name, commit in wanted:
        end = out.index(b"\n", position)
        header = out[position:end].split()
        position = end + 1
        if header[-1] == b"missing":  # the file was deleted in this commit
            continue
        size = int(header[2])
        content = out[position : position + size]
        position += size + 1
        yield name, commit, content
