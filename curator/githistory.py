"""A line file's committed history, read with two git processes, and the append-only rule.

`file_history(folder, names)` runs ONE `git log -m --full-history --raw` over the files
(every commit reachable from HEAD that touched them, a merge once per parent) and ONE
`git cat-file --batch` for every blob that log names, however many commits there are.

`check_appended(history, name, current)` then holds each step to the rule of
docs/export.md: a non-merge commit may only append lines to its parent's version; a merge
commit's version must keep each parent's lines in order (a union merge interleaves them);
the working file must start with HEAD's version. By induction every committed line is still
in the working file, byte for byte and in order.

`only_appended_since(folder, old_head, names)` is the gate's cheap form of the same rule
for the commits made since a checkpoint: blob ids and sizes only, no blob read.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from curator.problems import Problem

_NULL = "0" * 40


@dataclass
class Step:
    """One commit's change to a file against one parent (a merge has one per parent)."""

    commit: str
    parents: int  # how many parents the commit has (2+: a merge)
    old_blob: str  # the parent's version (the null id: the file was added)
    new_blob: str


@dataclass
class FileHistory:
    """The committed versions of some files of one folder, as read from git."""

    commits: int = 0  # distinct commits that touched the files
    steps: dict[str, list[Step]] = field(default_factory=dict)  # file name -> steps, newest first
    head: dict[str, str] = field(default_factory=dict)  # file name -> blob at HEAD
    blobs: dict[str, bytes] = field(default_factory=dict)

    def lines(self, blob: str) -> list[bytes]:
        data = self.blobs.get(blob, b"")
        return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]

    def first_commit_with(self, name: str, line: bytes) -> str | None:
        """The oldest commit whose version of `name` holds `line`."""
        found = None
        for step in self.steps.get(name, []):  # newest first: the last hit is the oldest
            if line in self.lines(step.new_blob):
                found = step.commit
        return found


def _git(folder: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    try:
        run = subprocess.run(["git", "-C", str(folder), *args], input=stdin, capture_output=True, check=False)
    except (FileNotFoundError, OSError):
        return None
    return run.stdout if run.returncode == 0 else None


def file_history(folder: Path, names: list[str]) -> FileHistory | None:
    """The history of `names` (files in `folder`), or None if the folder is in no git
    repository with a commit that has one of them."""
    head = _git(folder, "ls-tree", "HEAD", "--", *names)
    if not head:
        return None
    history = FileHistory()
    for row in head.decode("utf-8", "replace").splitlines():
        meta, _, path = row.partition("\t")
        history.head[Path(path).name] = meta.split()[2]
    fmt = "--format=%x01%H %P"
    log = _git(folder, "log", "-m", "--full-history", "--raw", "--no-abbrev", "--no-renames", fmt, "HEAD", "--", *names)
    if log is None:
        return None
    commits: set[str] = set()
    commit, parents = "", 1
    for row in log.decode("utf-8", "replace").splitlines():
        if row.startswith("\x01"):
            ids = row[1:].split()
            commit, parents = ids[0], max(1, len(ids) - 1)
            commits.add(commit)
        elif row.startswith(":"):
            meta, _, path = row.partition("\t")
            fields = meta.split()
            history.steps.setdefault(Path(path).name, []).append(Step(commit, parents, fields[2], fields[3]))
    history.commits = len(commits)
    wanted = {blob for steps in history.steps.values() for s in steps for blob in (s.old_blob, s.new_blob)}
    wanted |= set(history.head.values())
    wanted.discard(_NULL)
    history.blobs = _cat_blobs(folder, sorted(wanted))
    return history


def _cat_blobs(folder: Path, blobs: list[str]) -> dict[str, bytes]:
    if not blobs:
        return {}
    out = _git(folder, "cat-file", "--batch", stdin="".join(b + "\n" for b in blobs).encode())
    found: dict[str, bytes] = {}
    at = 0
    while out is not None and at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) < 3:  # "<id> missing"
            continue
        size = int(header[2])
        found[header[0].decode()] = out[at : at + size]
        at += size + 1
    return found


def _is_subsequence(needle: list[bytes], haystack: list[bytes]) -> bool:
    it = iter(haystack)
    return all(any(h == wanted for h in it) for wanted in needle)


def _first_difference(old: list[bytes], new: list[bytes]) -> int:
    for index, line in enumerate(old):
        if index >= len(new) or new[index] != line:
            return index
    return len(old)


def check_appended(history: FileHistory, name: str, path: Path, current: list[bytes]) -> list[Problem]:
    """The append-only rule over `name`'s committed versions and its working lines
    `current` (at `path`). One problem per commit that broke it, newest first."""
    problems: list[Problem] = []
    where = str(path)
    for step in history.steps.get(name, []):
        if step.old_blob == _NULL or step.new_blob == _NULL:
            if step.new_blob == _NULL:
                problems.append(Problem(where, None, f"deleted in commit {step.commit[:12]}; the file is append-only"))
            continue
        old, new = history.lines(step.old_blob), history.lines(step.new_blob)
        if step.parents > 1:
            if not _is_subsequence(old, new):
                index = _first_difference(old, new)
                problems.append(_lost(history, name, where, old, index, new, f"merge commit {step.commit[:12]}"))
            continue
        if new[: len(old)] == old:
            continue
        index = _first_difference(old, new)
        if _is_subsequence(old, new):
            line = new[index]
            at = _index_of(current, line)
            problems.append(Problem(
                where, at + 1 if at is not None else index + 1,
                f"line {index + 1} was inserted before older lines in commit {step.commit[:12]}, which is no "
                "merge; only a union merge may interleave lines, others are appended",
            ))
        else:
            problems.append(_lost(history, name, where, old, index, new, f"commit {step.commit[:12]}"))
    head = history.head.get(name)
    if head is None:
        return problems
    committed = history.lines(head)
    if current[: len(committed)] != committed:
        index = _first_difference(committed, current)
        if _is_subsequence(committed, current):
            problems.append(Problem(
                where, index + 1,
                f"line {index + 1} was inserted before lines committed at HEAD; new lines go at the end",
            ))
        else:
            problems.append(_lost(history, name, where, committed, index, current, "the working file (uncommitted)"))
    return problems


def _index_of(lines: list[bytes], line: bytes) -> int | None:
    try:
        return lines.index(line)
    except ValueError:
        return None


def _lost(
    history: FileHistory, name: str, where: str, old: list[bytes], index: int, new: list[bytes], by: str
) -> Problem:
    """A problem for the first of `old`'s lines that `new` lost or moved."""
    present = set(new)
    for number, line in enumerate(old):
        if line not in present:
            index, verb = number, "edited or removed"
            break
    else:
        verb = "moved (lines reordered)"
    first = history.first_commit_with(name, old[index])
    origin = f" (first committed in {first[:12]})" if first else ""
    return Problem(where, index + 1, f"line {index + 1}{origin} was {verb} in {by}; the file is append-only")


def only_appended_since(folder: Path, old_head: str, names: list[str]) -> bool:
    """Whether every commit since `old_head` (an ancestor of HEAD whose history a passing
    verify checked) only appended to the files `names` of `folder`, and each working file
    still starts with its HEAD version: the gate's check after a commit. Proven without
    reading a blob: each version those commits hold is a prefix of the working file (its
    git blob id is the hash of the working file's first `size` bytes), and along each
    commit the version only grows. False means: let the full check decide."""
    if not old_head or _git(folder, "merge-base", "--is-ancestor", old_head, "HEAD") is None:
        return False
    fmt = "--format=%x01%H"
    log = _git(folder, "log", "-m", "--full-history", "--raw", "--no-abbrev", "--no-renames", fmt,
               f"{old_head}..HEAD", "--", *names)
    head = _git(folder, "ls-tree", "HEAD", "--", *names)
    if log is None or head is None:
        return False
    steps: list[tuple[str, str, str]] = []  # (file name, old blob, new blob)
    for row in log.decode("utf-8", "replace").splitlines():
        if row.startswith(":"):
            meta, _, path = row.partition("\t")
            fields = meta.split()
            steps.append((Path(path).name, fields[2], fields[3]))
    for row in head.decode("utf-8", "replace").splitlines():
        meta, _, path = row.partition("\t")
        steps.append((Path(path).name, meta.split()[2], meta.split()[2]))
    wanted = sorted({blob for _, old, new in steps for blob in (old, new)} - {_NULL})
    sizes = _blob_sizes(folder, wanted)
    data = {name: (folder / name).read_bytes() if (folder / name).exists() else b"" for name in names}
    for name, old, new in steps:
        if new == _NULL:
            return False  # a file deleted
        for blob in (old, new):
            if blob != _NULL and not _is_prefix(blob, sizes.get(blob), data.get(name, b"")):
                return False
        if old != _NULL and sizes[old] > sizes[new]:
            return False
    return True


def _blob_sizes(folder: Path, blobs: list[str]) -> dict[str, int]:
    out = _git(folder, "cat-file", "--batch-check", stdin="".join(b + "\n" for b in blobs).encode()) if blobs else b""
    sizes = {}
    for row in (out or b"").decode().splitlines():
        fields = row.split()
        if len(fields) == 3 and fields[1] == "blob":
            sizes[fields[0]] = int(fields[2])
    return sizes


def _is_prefix(blob: str, size: int | None, data: bytes) -> bool:
    """Whether git blob `blob` of `size` bytes holds exactly the first `size` bytes of `data`."""
    if size is None or size > len(data):
        return False
    digest = hashlib.new("sha1" if len(blob) == 40 else "sha256", b"blob %d\0" % size)
    digest.update(memoryview(data)[:size])
    return digest.hexdigest() == blob
