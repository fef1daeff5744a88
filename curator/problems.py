"""`Problem`: one finding about a file (and line) that verify, freeze checks and run files report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Problem:
    path: str
    line: int | None
    message: str
    fatal: bool = True

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"

