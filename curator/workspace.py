"""The workspace: a folder with `curator.toml` and `.curator/workspace.db`.

`Workspace` owns the sqlite-utils Database; the rest of curator asks it for typed
models instead of issuing SQL of its own. Its SQL is grouped by tables in
`curator/storage/`: corpus (documents, passages), search (the FTS index) and queue
(candidates, leases, decisions); this module opens the database and knows the folder.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import curator._sqlite  # noqa: F401, I001  (first: sqlite_utils without pandas)

# isort: split
import sqlite_utils

from curator import __version__
from curator.config import CONFIG_FILE, DEFAULT_TOML, Config, load_config
from curator.errors import CuratorError, WorkspaceNotFound
from curator.migrations import migrations
from curator.models import CHUNKER_VERSION
from curator.storage.corpus import CorpusStorage
from curator.storage.queue import QueueStorage
from curator.storage.search import HL_END, HL_START, SearchStorage

if TYPE_CHECKING:
    from curator.questionset import QuestionSet

__all__ = ["HL_END", "HL_START", "Workspace", "find_root"]

STATE_DIR = ".curator"
DB_FILE = "workspace.db"

GITIGNORE = """\
# curator working state: rebuilt from the corpus and the question-set files
.curator/
datasets/*/.lock
datasets/*/.pending.json
datasets/*/.torn-*
"""

GITATTRIBUTES = """\
# Two reviewers' appends on two branches merge without conflicts; `curator verify`
# accepts a union merge (each side's lines keep their order after the shared prefix).
datasets/*/cases.jsonl merge=union
datasets/*/changelog.jsonl merge=union
datasets/*/freezes.jsonl merge=union
datasets/*/judgments.jsonl merge=union
"""


def find_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file() or (folder / STATE_DIR / DB_FILE).is_file():
            return folder
    return None


class Workspace(CorpusStorage, SearchStorage, QueueStorage):
    """An open workspace. Use `Workspace.find()`, `Workspace.open(path)` or `Workspace.init(path)`."""

    def __init__(self, root: Path, config: Config, db: sqlite_utils.Database):
        super().__init__(db)
        self.root = root
        self.config = config

    # ---- opening -------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".") -> Workspace:
        root = Path(path).resolve()
        root.mkdir(parents=True, exist_ok=True)
        config_path = root / CONFIG_FILE
        if not config_path.exists():
            config_path.write_text(DEFAULT_TOML, encoding="utf-8")
        for folder in ("datasets", "prompts", "runs", STATE_DIR):
            (root / folder).mkdir(exist_ok=True)
        _ensure_lines(root / ".gitignore", GITIGNORE)
        _ensure_lines(root / ".gitattributes", GITATTRIBUTES)
        return cls.open(root)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Workspace:
        root = Path(path).resolve()
        if not (root / CONFIG_FILE).is_file() and not (root / STATE_DIR).is_dir():
            raise WorkspaceNotFound(
                f"{root} is not a curator workspace (no {CONFIG_FILE}).",
                f"Create one with `curator init {path}`.",
            )
        config = load_config(root)
        (root / STATE_DIR).mkdir(exist_ok=True)
        conn = sqlite3.connect(
            root / STATE_DIR / DB_FILE, timeout=30, check_same_thread=False, isolation_level=None
        )
        # no sqlite-utils plugins: curator registers none, and looking for them reads
        # every installed package's entry points (15 ms on every command)
        db = sqlite_utils.Database(conn, execute_plugins=False)
        db.execute("PRAGMA busy_timeout = 30000")
        db.enable_wal()
        db.execute("PRAGMA synchronous = NORMAL")
        migrations.apply(db)
        return cls(root, config, db)

    @classmethod
    def find(cls, explicit: str | os.PathLike[str] | None = None, start: Path | None = None) -> Workspace:
        """Open the workspace named by `explicit`, `CURATOR_WORKSPACE`, or found upward from `start`."""
        named = explicit or os.environ.get("CURATOR_WORKSPACE")
        if named:
            return cls.open(named)
        here = (start or Path.cwd()).resolve()
        root = find_root(here)
        if root is None:
            raise WorkspaceNotFound(
                f"No curator workspace in {here} or any parent directory.",
                "Run `curator init` to create one here (or `curator demo` for a ready-made one), "
                "or point to one with -w DIR or CURATOR_WORKSPACE.",
            )
        return cls.open(root)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- paths and sets --------------------------------------------------------------

    @property
    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def prompts_dir(self) -> Path:
        return self.root / "prompts"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def set_names(self) -> list[str]:
        if not self.datasets_dir.is_dir():
            return []
        return sorted(p.name for p in self.datasets_dir.iterdir() if (p / "cases.jsonl").is_file())

    def question_set(self, name: str | None = None) -> QuestionSet:
        from curator.questionset import QuestionSet  # questionset imports this module

        return QuestionSet(
            self.datasets_dir / (name or self.config.default_set),
            checkpoint_dir=self.state_dir / "checkpoints",
        )

    def existing_set(self, name: str | None = None) -> QuestionSet:
        """`question_set(name)`, or a CuratorError naming the sets there are."""
        qs = self.question_set(name)
        if not qs.exists():
            raise CuratorError(
                f"no question set {qs.name!r} in {self.datasets_dir}",
                f"Sets here: {', '.join(self.set_names()) or 'none yet'}. Pick one with --set NAME.",
            )
        return qs

    def versions(self) -> dict[str, str]:
        """What produced a change: recorded in every change-log entry."""
        return {
            "curator": __version__,
            "chunker": CHUNKER_VERSION,
            "corpus": self.meta("corpus_version") or "empty",
        }


def _ensure_lines(path: Path, block: str) -> None:
    """Add `block`'s lines that `path` lacks, keeping what the user wrote."""
    existing = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    missing = [line for line in block.splitlines() if line and line not in existing]
    if not missing:
        return
    with path.open("a", encoding="utf-8") as fh:
        if existing and existing[-1] != "":
            fh.write("\n")
        fh.write("\n".join(missing) + "\n")
